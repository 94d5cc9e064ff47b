-- the schema of the workload's name, if there is one: its oid, its comment (pgknee's mark) and its owner
SELECT oid, coalesce(obj_description(oid, 'pg_namespace'), ''), pg_get_userbyid(nspowner)
FROM pg_namespace WHERE nspname = %s
