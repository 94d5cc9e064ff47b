\set aid random_zipfian(1, 20000, 1.2)
UPDATE accounts SET balance = balance - 1 WHERE id = :aid;
