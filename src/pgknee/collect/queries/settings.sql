-- the settings that shape a sweep, by name: the value, and with its unit (pg_settings hides
-- what the role may not read instead of failing)
SELECT name, setting, CASE WHEN unit IS NULL OR unit = '' THEN setting ELSE setting || ' ' || unit END
FROM pg_settings WHERE name = ANY(%s)
