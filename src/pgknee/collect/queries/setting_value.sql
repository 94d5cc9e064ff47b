-- a setting as pg_settings keeps it: a number in the setting's own unit (8kB pages for
-- shared_buffers), no row when the name is unknown
SELECT setting FROM pg_settings WHERE name = %s
