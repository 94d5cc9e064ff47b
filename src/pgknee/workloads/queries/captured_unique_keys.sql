-- an INSERT's table: the columns of each of its unique keys (the primary key first; partial and expression
-- indexes left out, they bind only some rows), and for each column whether it has a default (serial, identity)
SELECT i.indisprimary, array_agg(a.attname::text ORDER BY k.ord),
       array_agg((a.atthasdef OR a.attidentity <> '') ORDER BY k.ord)
FROM pg_index i
CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE i.indrelid = to_regclass(%(qualified)s) AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL
GROUP BY i.indexrelid, i.indisprimary
ORDER BY i.indisprimary DESC, i.indexrelid
