-- the values in the order of collect.pooler.SAMPLE_COLUMNS
INSERT INTO pooler_samples (run_id, step_id, _collected_at, _phase, epoch, cl_active, cl_waiting, sv_active, sv_idle,
                            sv_used, sv_login, maxwait_us)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
