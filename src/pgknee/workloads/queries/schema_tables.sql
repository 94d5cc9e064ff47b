-- the tables (plain, partitioned, foreign), views and materialized views of a schema (by its oid), whoever made them
SELECT relname FROM pg_class WHERE relnamespace = %s AND relkind IN ('r', 'p', 'v', 'm', 'f')
ORDER BY relname
