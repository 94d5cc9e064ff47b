-- the values in the order of samples.PoolerProcessRow, after the run and the step
INSERT INTO pooler_process_samples (run_id, step_id, _collected_at, _phase, epoch, process, pid, cpu_user_pct,
                                    cpu_system_pct, runq_wait_pct, cl_active, cl_waiting, sv_active, sv_idle)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
