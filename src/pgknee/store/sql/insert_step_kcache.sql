-- pg_stat_kcache's totals over a step's bench phase (model.server.KcacheStep; its fields the columns)
INSERT INTO step_kcache (step_id, user_s, system_s, read_bytes, write_bytes)
VALUES (:step_id, :user_s, :system_s, :read_bytes, :write_bytes)
