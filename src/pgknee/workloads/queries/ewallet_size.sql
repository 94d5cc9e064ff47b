-- the bytes of the e-wallet's tables (indexes and TOAST with them) in its schema (by name)
SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relkind = 'r'
