-- pgknee run --until-answer: the run's plan and planned steps as the adaptive sweep chooses its client counts
UPDATE runs SET plan_json = :plan_json, steps_planned = :steps_planned WHERE run_id = :run_id
