SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'
