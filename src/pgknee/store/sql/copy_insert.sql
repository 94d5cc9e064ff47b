-- a row copied into the destination store; table and columns from the store's own schema
INSERT INTO {table} ({columns}) VALUES ({values})
