-- the foreign keys among the captured tables (schema.table names): each referencing column and the column
-- it references, pair by pair (a key of several columns gives a pair per column)
SELECT cn.nspname || '.' || cr.relname || '.' || ca.attname, pn.nspname || '.' || pr.relname || '.' || pa.attname
FROM pg_constraint c
CROSS JOIN LATERAL unnest(c.conkey, c.confkey) AS k(child, parent)
JOIN pg_class cr ON cr.oid = c.conrelid JOIN pg_namespace cn ON cn.oid = cr.relnamespace
JOIN pg_attribute ca ON ca.attrelid = c.conrelid AND ca.attnum = k.child
JOIN pg_class pr ON pr.oid = c.confrelid JOIN pg_namespace pn ON pn.oid = pr.relnamespace
JOIN pg_attribute pa ON pa.attrelid = c.confrelid AND pa.attnum = k.parent
WHERE c.contype = 'f' AND cn.nspname || '.' || cr.relname = ANY(%(tables)s)
