\set aid random_zipfian(1, 20000, 1.2)
SELECT balance FROM accounts WHERE id = :aid;
