-- article 004's read-heavy script: each transaction scans up to 5,000 accounts of one branch
-- and returns one row, so it reads many pages (with data larger than shared_buffers, many of
-- them come from the page cache or the disk)
\set nbranches :scale
\set naccounts 100000 * :scale
\set aid random(1, :naccounts)
\set bid random(1, :nbranches)
BEGIN;
SELECT * FROM {{schema}}.pgbench_accounts WHERE aid >= :aid AND aid < (:aid + 5000) AND bid = :bid LIMIT 1;
END;
