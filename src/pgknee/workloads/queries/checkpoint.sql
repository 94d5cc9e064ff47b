-- a checkpoint once a workload's data is seeded or initialised (superuser or pg_checkpoint)
CHECKPOINT
