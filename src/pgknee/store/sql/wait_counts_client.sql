-- active client backends of the steps in the phases by wait event: (type, event, occurrences); one
-- not waiting is on CPU
SELECT COALESCE(wait_event_type, 'CPU'), COALESCE(wait_event, 'running'), COUNT(*)
FROM snap_pg_stat_activity
WHERE _step_id IN ({steps}) AND _phase IN ({phases})
  AND backend_type = 'client backend' AND state IN ('active', 'fastpath function call')
GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2
