\set aid random_zipfian(1, 20000, 1.2)
SELECT id, amount FROM orders WHERE account_id = :aid ORDER BY id DESC LIMIT 10;
