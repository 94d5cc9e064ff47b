\set aid random(1, 20000)
WITH moved AS (UPDATE accounts SET balance = balance + 1 WHERE id = :aid RETURNING id) SELECT count(*) FROM moved;
