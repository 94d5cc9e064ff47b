-- the bytes of each pgbench table (indexes and TOAST with it), by schema and table names
SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n
ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = ANY(%s) AND c.relkind = 'r'
