-- a fresh key's column on the target: the highest value it holds now (the replay's inserts start above it)
SELECT max({column})::text FROM {table}
