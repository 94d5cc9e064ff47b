-- an INSERT without a column list: the name of the table's column at a place among its columns (from 0, as
-- INSERT INTO t VALUES (...) fills them), by the table's quoted qualified name and the place
SELECT a.attname FROM pg_attribute a
WHERE a.attrelid = to_regclass(%(qualified)s) AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum OFFSET %(place)s LIMIT 1
