-- a step's facts (keys.StepFact): named figures measured around the bench
SELECT name, value FROM step_facts WHERE step_id = ?
