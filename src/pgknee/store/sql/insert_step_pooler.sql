INSERT INTO step_pooler (step_id, name, value) VALUES (:step_id, :name, :value)
