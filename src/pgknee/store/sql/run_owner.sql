-- how a run stands and which pgknee holds it (a side file's end is imported only into a run still running)
SELECT status, owner FROM runs WHERE run_id = :run_id
