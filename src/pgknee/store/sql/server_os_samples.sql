-- the server's OS samples of a step in the phases; the columns are ServerOsSample's fields (phase as _phase)
SELECT {columns} FROM server_os_samples WHERE step_id = ? AND _phase IN ({phases}) ORDER BY epoch
