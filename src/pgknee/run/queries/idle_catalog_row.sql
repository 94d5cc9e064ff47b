-- a row of one of them, which fills the session's catalogue caches (the braces: schema, table or view)
SELECT * FROM {}.{} LIMIT 1
