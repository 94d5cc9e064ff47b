-- what a managed service shows of itself: its roles among those asked, Aurora's function, its
-- settings' prefixes in pg_settings, and settings of its by name (pg_settings does not list a
-- placeholder that no library of this server defines; current_setting(name, true) finds it)
SELECT (SELECT coalesce(array_agg(rolname::text), '{}') FROM pg_roles WHERE rolname = ANY(%s)),
       to_regproc('aurora_version') IS NOT NULL,
       (SELECT coalesce(array_agg(DISTINCT split_part(name, '.', 1)), '{}') FROM pg_settings
        WHERE name LIKE '%%.%%' AND split_part(name, '.', 1) = ANY(%s)),
       (SELECT coalesce(array_agg(DISTINCT split_part(n, '.', 1)), '{}') FROM unnest(%s::text[]) n
        WHERE current_setting(n, true) IS NOT NULL)
