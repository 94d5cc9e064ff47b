-- the command lines a run ran, in the order it ran them
SELECT step_id, purpose, argv_json FROM run_commands WHERE run_id = ? ORDER BY id
