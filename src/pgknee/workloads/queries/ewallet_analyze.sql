-- planner statistics for a seeded e-wallet table (the braces: schema, table)
ANALYZE {}.{}
