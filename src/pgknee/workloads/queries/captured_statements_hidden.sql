-- how many of pg_stat_statements' entries hide their text from this role, of how many
SELECT count(*) FILTER (WHERE query = '<insufficient privilege>'), count(*) FROM pg_stat_statements
