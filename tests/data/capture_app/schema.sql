-- The test application of the captured-workload tests: accounts and their orders, with skew.
-- orders.account_id: floor(20000 * u^4) + 1 puts about 8.4% of the orders on account 1.
CREATE TABLE accounts (id int PRIMARY KEY, owner int NOT NULL, balance numeric NOT NULL, region text NOT NULL);
INSERT INTO accounts SELECT i, i % 500, 100, CASE WHEN i % 10 < 6 THEN 'eu' WHEN i % 10 < 9 THEN 'us' ELSE 'apac' END
FROM generate_series(1, 20000) i;
CREATE TABLE orders (id bigserial PRIMARY KEY, account_id int NOT NULL, amount numeric NOT NULL, status text NOT NULL);
INSERT INTO orders (account_id, amount, status)
SELECT floor(20000 * power(random(), 4))::int + 1, round((random() * 100)::numeric, 2), 'done'
FROM generate_series(1, 50000);
CREATE INDEX ON orders (account_id);
-- the shapes of writes an application sends: a counter upserted two rows at a time (ON CONFLICT,
-- RETURNING), an audit trail inserted two rows at a time with the keys the application makes
CREATE TABLE tallies (account_id int PRIMARY KEY, n int NOT NULL);
INSERT INTO tallies SELECT i, 0 FROM generate_series(1, 2000) i;
CREATE TABLE audit (id bigint PRIMARY KEY, account_id int NOT NULL);
INSERT INTO audit SELECT 2 * i, i % 20000 + 1 FROM generate_series(1, 5000) i;
ANALYZE accounts;
ANALYZE orders;
ANALYZE tallies;
ANALYZE audit;
