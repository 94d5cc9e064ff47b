-- the pg_stat_activity sampler's statement may never outlast a few of its ticks
SET statement_timeout = '2s'
