-- working background processes of the steps in the phases by wait event: (type, event,
-- occurrences). They have no state, and the sampler stored only those not idling in an Activity
-- wait, so every stored one is working
SELECT COALESCE(wait_event_type, 'CPU'), COALESCE(wait_event, 'running'), COUNT(*)
FROM snap_pg_stat_activity
WHERE _step_id IN ({steps}) AND _phase IN ({phases})
  AND backend_type IS DISTINCT FROM 'client backend'
  AND (state IN ('active', 'fastpath function call') OR state IS NULL)
GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2
