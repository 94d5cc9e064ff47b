-- the simulated network hop of a step's variant (rtt=, rtt_jitter=; netsim relay between pgbench
-- and its endpoint), in ms; 0: pgbench reached its endpoint directly. What the round trip really
-- was (probed) is in step_facts (net.*).
ALTER TABLE steps ADD COLUMN rtt_ms REAL NOT NULL DEFAULT 0;
ALTER TABLE steps ADD COLUMN rtt_jitter_ms REAL NOT NULL DEFAULT 0;
