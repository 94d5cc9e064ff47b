-- every working session of the steps in the phases by wait event (client backends active by their
-- state, background processes as in wait_counts_background.sql): (type, event, occurrences)
SELECT COALESCE(wait_event_type, 'CPU'), COALESCE(wait_event, 'running'), COUNT(*)
FROM snap_pg_stat_activity
WHERE _step_id IN ({steps}) AND _phase IN ({phases})
  AND (state IN ('active', 'fastpath function call')
       OR (state IS NULL AND backend_type IS DISTINCT FROM 'client backend'))
GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2
