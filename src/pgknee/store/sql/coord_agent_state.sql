-- an agent's state (no row: its row is gone, or another process took its name)
SELECT state FROM agents WHERE name = ? AND pid = ?
