-- a table as a captured statement names it, found on the role's search_path: its schema, its name, whether
-- an extension owns it (pg_stat_statements' own view, say) and whether it is a sequence (pg_dump and
-- monitoring read a sequence's last_value as a relation; an application calls nextval())
SELECT n.nspname, c.relname, EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
                                     AND d.objid = c.oid AND d.deptype = 'e'), c.relkind = 'S'
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass(%s)
