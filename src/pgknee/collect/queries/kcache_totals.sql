-- the database's pg_stat_kcache totals, every column by name (versions name them differently:
-- user_time; exec_user_time and plan_user_time); the braces are the extension's schema, quoted
SELECT to_jsonb(k)::text FROM {}.pg_stat_kcache k WHERE datname = current_database()
