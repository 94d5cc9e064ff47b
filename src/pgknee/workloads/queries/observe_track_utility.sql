-- whether pg_stat_statements counts utility statements (BEGIN, COMMIT): on by default
SELECT /* pgknee:observe */ current_setting('pg_stat_statements.track_utility', true)
