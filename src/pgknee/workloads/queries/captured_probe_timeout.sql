-- a probe of a captured SELECT (workloads.captured.probe): its time bounded, for the savepoint it runs in
SELECT set_config('statement_timeout', %(ms)s, true)
