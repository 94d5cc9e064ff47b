-- the reserve pool of a managed pgbouncer, beside its pool size: the step's database
-- concurrency is min(clients, pool_size + pool_reserve) (rules.database_concurrency)
ALTER TABLE steps ADD COLUMN pool_reserve INTEGER NOT NULL DEFAULT 0;
UPDATE steps SET pool_reserve = coalesce((SELECT CAST(value AS INTEGER) FROM step_pooler
                                          WHERE step_pooler.step_id = steps.step_id
                                            AND name = 'setting.reserve_pool'), 0);
