-- the store's clock: its PostgreSQL server's time, in epoch seconds
SELECT extract(epoch FROM clock_timestamp())
