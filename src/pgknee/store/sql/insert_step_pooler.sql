-- one of a step's pooler facts: a SHOW STATS delta, a setting, a version
INSERT INTO step_pooler (step_id, name, value) VALUES (:step_id, :name, :value)
