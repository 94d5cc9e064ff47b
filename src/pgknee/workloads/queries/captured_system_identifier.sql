-- the cluster's system identifier (pg_monitor or superuser), to tell the capture's source from a copy of it
SELECT system_identifier::text FROM pg_control_system()
