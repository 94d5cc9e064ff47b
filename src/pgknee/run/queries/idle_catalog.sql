-- the tables and views of information_schema, which a catalog idle session reads a row from each of
SELECT table_schema, table_name FROM information_schema.tables
WHERE table_schema = 'information_schema' ORDER BY table_name
