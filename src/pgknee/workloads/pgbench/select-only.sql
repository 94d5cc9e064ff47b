-- select-only: pgbench's builtin select-only script, as PostgreSQL 15 prints it
\set aid random(1, 100000 * :scale)
SELECT abalance FROM {{schema}}.pgbench_accounts WHERE aid = :aid;

