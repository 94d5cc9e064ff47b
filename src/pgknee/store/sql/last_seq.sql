SELECT coalesce(max(seq), 0) FROM steps WHERE run_id = :run_id
