-- the values in the order of collect.serveros.SERVER_OS_COLUMNS
INSERT INTO server_os_samples (run_id, step_id, _collected_at, _phase, epoch, cpu_user, cpu_nice, cpu_system,
                               cpu_iowait, cpu_irq, cpu_steal, cpu_idle, load1, ctx_per_s, procs_running,
                               procs_blocked, mem_total_kb, mem_available_kb, disk_read_bps, disk_write_bps,
                               net_rx_bps, net_tx_bps)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
