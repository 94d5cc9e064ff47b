-- a new run, 'running' until the orchestrator says how it ended
INSERT INTO runs (run_id, created_at, status, workload, target_kind, target_label, plan_json, steps_planned, owner,
                  heartbeat_at)
VALUES (:run_id, :created_at, 'running', :workload, :target_kind, :target_label, :plan_json, :steps_planned, :owner,
        :heartbeat_at)
