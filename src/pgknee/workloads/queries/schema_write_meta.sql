-- a meta entry, added or replaced (the braces: schema, meta table)
INSERT INTO {}.{} (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value
