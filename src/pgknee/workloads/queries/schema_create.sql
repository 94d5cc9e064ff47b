-- the workload's schema (the braces: its name)
CREATE SCHEMA {}
