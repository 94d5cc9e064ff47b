-- tpcb-like: pgbench's builtin TPC-B (sort of) script, as PostgreSQL 15 prints it
\set aid random(1, 100000 * :scale)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(-5000, 5000)
BEGIN;
UPDATE {{schema}}.pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM {{schema}}.pgbench_accounts WHERE aid = :aid;
UPDATE {{schema}}.pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE {{schema}}.pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO {{schema}}.pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;

