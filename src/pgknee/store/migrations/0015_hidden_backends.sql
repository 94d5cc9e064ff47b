-- pgknee collector database, format 15: how many backends each pg_stat_activity snapshot could
-- not see. A role that is neither superuser nor a member of pg_read_all_stats sees other roles'
-- sessions and the background processes with no state, no wait event and no backend type
-- (query '<insufficient privilege>'); they were stored as sessions and read as "CPU running".
-- They are now counted here and not stored. NULL: a snapshot taken before format 15.
ALTER TABLE snapshots ADD COLUMN hidden INTEGER;
