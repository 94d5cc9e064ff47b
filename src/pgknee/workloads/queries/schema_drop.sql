-- the workload's schema once its tables are gone, never CASCADE (the braces: its name)
DROP SCHEMA {} RESTRICT
