-- the store's schema in a PostgreSQL database, if there is one: its comment (pgknee's mark) and
-- how many objects it holds
SELECT obj_description(n.oid, 'pg_namespace'), (SELECT count(*) FROM pg_class c WHERE c.relnamespace = n.oid)
FROM pg_namespace n WHERE nspname = ?
