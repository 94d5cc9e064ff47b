-- one of a step's facts (keys.StepFact)
INSERT INTO step_facts (step_id, name, value) VALUES (:step_id, :name, :value)
