-- the sampled sessions; the values in the order of collect.activity.ACTIVITY_COLUMNS after the phase
INSERT INTO snap_pg_stat_activity (_run_id, _step_id, _collected_at, _phase, pid, leader_pid, datid, datname, usesysid,
                                   usename, application_name, client_addr, client_hostname, client_port,
                                   backend_start, xact_start, query_start, state_change, wait_event_type, wait_event,
                                   state, backend_xid, backend_xmin, query_id, query, backend_type)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
