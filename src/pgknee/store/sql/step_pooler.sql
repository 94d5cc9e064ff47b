-- a step's pooler facts: SHOW STATS deltas, settings, versions
SELECT name, value FROM step_pooler WHERE step_id = ?
