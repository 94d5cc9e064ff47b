-- an agent is alive (its row, if another process has not taken its name)
UPDATE agents SET heartbeat_at = ? WHERE name = ? AND pid = ?
