-- the server's clock and its /proc files in one read, in the order given (NULL where missing)
SELECT extract(epoch FROM clock_timestamp())::float8,
       array(SELECT pg_read_file(f.path, 0, 4194304, true) FROM unnest(%s::text[]) WITH ORDINALITY AS f (path, i)
             ORDER BY f.i)
