\set aid random_zipfian(1, 20000, 1.2)
\set amt random(1, 100)
INSERT INTO orders (account_id, amount, status) VALUES (:aid, :amt, 'new');
