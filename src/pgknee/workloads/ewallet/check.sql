-- Money is conserved: the total is what was seeded, every transaction is one
-- debit and one credit of the same amount, and every wallet's balance is its
-- opening balance plus its ledger.
WITH net AS (
    SELECT wallet_id, sum(CASE direction WHEN 'credit' THEN amount ELSE -amount END) AS net
    FROM {{schema}}.ledger_entries GROUP BY wallet_id
)
SELECT
    (SELECT sum(balance) FROM {{schema}}.wallets)::text AS total_balance,
    (SELECT value FROM {{schema}}.pgknee_meta WHERE key = 'total_balance') AS expected_total,
    (SELECT count(*) FROM (
        SELECT transaction_id FROM {{schema}}.ledger_entries GROUP BY transaction_id
        HAVING count(*) <> 2
            OR sum(CASE direction WHEN 'credit' THEN amount ELSE -amount END) <> 0
            OR count(DISTINCT wallet_id) <> 2
    ) AS x) AS unbalanced_transactions,
    (SELECT count(*) FROM {{schema}}.transactions AS t
     WHERE NOT EXISTS (SELECT 1 FROM {{schema}}.ledger_entries AS le WHERE le.transaction_id = t.id)
    ) AS transactions_without_entries,
    (SELECT count(*) FROM {{schema}}.wallets AS w LEFT JOIN net ON net.wallet_id = w.id
     WHERE w.balance <> {{opening_balance}} + coalesce(net.net, 0)) AS wallets_off_ledger,
    (SELECT count(*) FROM {{schema}}.transactions) AS transactions
