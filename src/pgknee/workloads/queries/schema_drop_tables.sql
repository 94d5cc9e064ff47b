-- pgknee's own tables of the workload, never CASCADE (the braces: their qualified names, comma separated)
DROP TABLE {} RESTRICT
