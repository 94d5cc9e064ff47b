-- what the meta table records (the workload, its scale, when it was seeded); the braces: schema, meta table
SELECT key, value FROM {}.{}
