-- a PostgreSQL store's tables and their columns in order, identity columns marked ('YES'), the
-- format's own table left out; the parameter is the store's schema
SELECT table_name, column_name, is_identity FROM information_schema.columns
WHERE table_schema = ? AND table_name <> 'store_format'
ORDER BY table_name, ordinal_position
