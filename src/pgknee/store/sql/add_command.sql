-- a command line pgknee ran (never a secret on it: connections travel in the environment and a passfile)
INSERT INTO run_commands (run_id, step_id, purpose, argv_json) VALUES (:run_id, :step_id, :purpose, :argv_json)
