-- the store's format (SQLite's user_version), kept in the schema's own table
SELECT value FROM {schema}.store_format WHERE key = 'user_version'
