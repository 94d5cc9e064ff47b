-- an SQLite table's columns in order: name, declared type, place in the primary key (0: not in it)
SELECT name, type, pk FROM pragma_table_info(?) ORDER BY cid
