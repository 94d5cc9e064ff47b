\set a1 random(1, 2000)
\set a2 :a1 % 2000 + 1
INSERT INTO tallies (account_id, n) VALUES (:a1, 1), (:a2, 1)
ON CONFLICT (account_id) DO UPDATE SET n = tallies.n + excluded.n RETURNING n;
