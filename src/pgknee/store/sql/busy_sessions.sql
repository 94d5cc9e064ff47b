-- mean sessions active or idle in transaction per snapshot of a step in the phases (pgknee's own left out)
SELECT avg(active + idle_in_xact) FROM snapshots WHERE step_id = ? AND _phase IN ({phases})
