-- this pgknee is alive and writes the run (claims.py reads it for a pgknee on another host)
UPDATE runs SET heartbeat_at = :heartbeat_at WHERE run_id = :run_id
