-- pgknee collector database, format 2: what a step's variant changed besides the protocol.
ALTER TABLE steps ADD COLUMN pipeline INTEGER NOT NULL DEFAULT 0;
ALTER TABLE steps ADD COLUMN connect_per_txn INTEGER NOT NULL DEFAULT 0;
