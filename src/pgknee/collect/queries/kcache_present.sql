-- pg_stat_kcache's version and schema, when installed and its view readable by this role
-- (to_regclass and has_table_privilege on an oid: no error where it is absent)
SELECT e.extversion, n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
WHERE e.extname = 'pg_stat_kcache'
  AND coalesce(has_table_privilege(to_regclass(quote_ident(n.nspname) || '.pg_stat_kcache'), 'SELECT'), false)
