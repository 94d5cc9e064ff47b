-- a file of the server's machine (its /proc), NULL when it is not there
SELECT pg_read_file(%s, 0, 4194304, true)
