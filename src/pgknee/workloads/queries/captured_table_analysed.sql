-- whether the target has planner statistics for a captured table (by schema and table name)
SELECT count(*) FROM pg_stats WHERE schemaname = %s AND tablename = %s
