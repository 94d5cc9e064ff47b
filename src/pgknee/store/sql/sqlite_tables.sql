-- an SQLite file's tables (is it pgknee's store, another program's, or empty?)
SELECT name FROM sqlite_master WHERE type = 'table'
