-- the schemas that look like pgknee's workload schemas (their comment starts with the mark, or they hold a meta
-- table of that name, as pgknee once marked them): name, owner and the bytes of their tables, by name
SELECT n.nspname, pg_get_userbyid(n.nspowner), coalesce(sum(pg_total_relation_size(c.oid)), 0)
FROM pg_namespace n LEFT JOIN pg_class c ON c.relnamespace = n.oid AND c.relkind IN ('r', 'p', 'm')
WHERE coalesce(obj_description(n.oid, 'pg_namespace'), '') LIKE %s
   OR EXISTS (SELECT 1 FROM pg_class m WHERE m.relnamespace = n.oid AND m.relname = %s)
GROUP BY 1, 2 ORDER BY 1
