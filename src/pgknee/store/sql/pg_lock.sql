-- the store's migrations, one process at a time: the lock is held to the end of the transaction
SELECT pg_advisory_xact_lock(?)
