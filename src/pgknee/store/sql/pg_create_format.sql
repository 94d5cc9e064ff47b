-- the schema's table of the store's format (SQLite's application_id and user_version)
CREATE TABLE {schema}.store_format (key TEXT PRIMARY KEY, value TEXT NOT NULL)
