-- a parameter's column: its type and, when pg_stats has them, its null fraction, distinct values, most common
-- values with their frequencies and histogram bounds, and the table's rows as last counted (pg_class.reltuples,
-- -1 before its first VACUUM or ANALYZE) (by schema, table, quoted qualified name and column)
SELECT format_type(a.atttypid, a.atttypmod), s.null_frac::float8, s.n_distinct::float8,
       s.most_common_vals::text::text[], s.most_common_freqs::float8[], s.histogram_bounds::text::text[],
       c.reltuples::float8
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
LEFT JOIN pg_stats s ON s.schemaname = %(schema)s AND s.tablename = %(table)s AND s.attname = a.attname
                     AND NOT s.inherited
WHERE a.attrelid = to_regclass(%(qualified)s) AND a.attname = %(column)s AND a.attnum > 0 AND NOT a.attisdropped
