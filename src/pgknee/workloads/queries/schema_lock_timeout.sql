-- how long the drop may wait for a lock another session holds, in this transaction only (the braces: a literal)
SET LOCAL lock_timeout = {}
