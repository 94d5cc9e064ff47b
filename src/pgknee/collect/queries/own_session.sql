-- pgknee's own statements never hang a run, nor queue behind the workload's locks
SET statement_timeout = '60s'; SET lock_timeout = '5s'
