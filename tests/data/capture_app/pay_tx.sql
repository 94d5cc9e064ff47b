-- the observed application's payment: three statements in one transaction, with 10-30 ms of the
-- application's own work between them (it idles in the transaction), then 20 ms before the next.
-- Its accounts are drawn uniformly: which rows an application touches most is not in pg_stats (a
-- primary key's statistics are uniform), so a replay could not reproduce the lock waits of hot rows
\set aid random(1, 20000)
\set amt random(1, 100)
\set work random(10000, 30000)
BEGIN;
SELECT balance FROM accounts WHERE id = :aid;
\sleep :work us
UPDATE accounts SET balance = balance - :amt WHERE id = :aid;
\sleep :work us
INSERT INTO orders (account_id, amount, status) VALUES (:aid, :amt, 'new');
COMMIT;
\sleep 20 ms
