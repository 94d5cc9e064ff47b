-- how many objects an SQLite file holds: tables, indexes, views, triggers (none: an empty file)
SELECT count(*) FROM sqlite_master
