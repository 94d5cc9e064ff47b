-- whether pg_stat_statements is installed in this database
SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'
