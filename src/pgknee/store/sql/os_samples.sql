-- this machine's OS samples of a step in the phases; the columns are OsSample's fields (phase as _phase)
SELECT {columns} FROM os_samples WHERE step_id = ? AND _phase IN ({phases}) ORDER BY epoch
