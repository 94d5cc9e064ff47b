-- a run is over: its agents may go (each exits once it reads this)
UPDATE agents SET state = 'done' WHERE run_id = ? AND state = 'taken'
