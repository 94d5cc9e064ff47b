-- each agent's share of a run's steps run by agents; the columns are AgentShare's fields (format 13 on)
SELECT step_id, {columns} FROM step_agents WHERE run_id = ? ORDER BY step_id, agent
