-- the values in the order of collect.osproc.OS_COLUMNS
INSERT INTO os_samples (run_id, step_id, _collected_at, _phase, epoch, cpu_user, cpu_nice, cpu_system, cpu_iowait,
                        cpu_irq, cpu_steal, cpu_idle, load1, ctx_per_s, procs_running, procs_blocked, mem_total_kb,
                        mem_available_kb, mem_free_kb, cached_kb, client_cpu_pct, pooler_cpu_pct)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
