-- TPC-B's books: the balances of accounts, tellers and branches, the deltas of history and the transactions
-- (the braces: each table's qualified name)
SELECT (SELECT sum(abalance) FROM {a}), (SELECT sum(tbalance) FROM {t}), (SELECT sum(bbalance) FROM {b}),
       (SELECT coalesce(sum(delta), 0) FROM {h}), (SELECT count(*) FROM {h})
