\set id1 2 * random(5001, 1000000000)
\set id2 :id1 + 1
\set aid random(1, 20000)
INSERT INTO audit (id, account_id) VALUES (:id1, :aid), (:id2, :aid);
