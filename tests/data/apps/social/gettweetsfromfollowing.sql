-- GetTweetsFromFollowing, the statements of BenchBase's
-- twitter/procedures/GetTweetsFromFollowing.java: the (up to 20) users :uid follows,
-- then their tweets with an IN list of 20 parameters, padded with the last id when
-- fewer than 20 rows came back (as BenchBase fills its 20 placeholders).
-- pgbench cannot read a result set into a list: the followee ids are computed with the
-- loader's formula (user u follows ((u - 1 + 331 * k) % 5000) + 1 for
-- k = 1 .. 5 + (u * 7919) % 11), which gives exactly the rows the first SELECT returns.
-- The user is uniform over 1..5000, as in BenchBase's TwitterWorker.
\set nusers 5000
\set uid random(1, :nusers)
\set following_cnt 5 + (:uid * 7919) % 11
\set f1 ((:uid - 1 + 331 * least(1, :following_cnt)) % :nusers) + 1
\set f2 ((:uid - 1 + 331 * least(2, :following_cnt)) % :nusers) + 1
\set f3 ((:uid - 1 + 331 * least(3, :following_cnt)) % :nusers) + 1
\set f4 ((:uid - 1 + 331 * least(4, :following_cnt)) % :nusers) + 1
\set f5 ((:uid - 1 + 331 * least(5, :following_cnt)) % :nusers) + 1
\set f6 ((:uid - 1 + 331 * least(6, :following_cnt)) % :nusers) + 1
\set f7 ((:uid - 1 + 331 * least(7, :following_cnt)) % :nusers) + 1
\set f8 ((:uid - 1 + 331 * least(8, :following_cnt)) % :nusers) + 1
\set f9 ((:uid - 1 + 331 * least(9, :following_cnt)) % :nusers) + 1
\set f10 ((:uid - 1 + 331 * least(10, :following_cnt)) % :nusers) + 1
\set f11 ((:uid - 1 + 331 * least(11, :following_cnt)) % :nusers) + 1
\set f12 ((:uid - 1 + 331 * least(12, :following_cnt)) % :nusers) + 1
\set f13 ((:uid - 1 + 331 * least(13, :following_cnt)) % :nusers) + 1
\set f14 ((:uid - 1 + 331 * least(14, :following_cnt)) % :nusers) + 1
\set f15 ((:uid - 1 + 331 * least(15, :following_cnt)) % :nusers) + 1
\set f16 ((:uid - 1 + 331 * least(16, :following_cnt)) % :nusers) + 1
\set f17 ((:uid - 1 + 331 * least(17, :following_cnt)) % :nusers) + 1
\set f18 ((:uid - 1 + 331 * least(18, :following_cnt)) % :nusers) + 1
\set f19 ((:uid - 1 + 331 * least(19, :following_cnt)) % :nusers) + 1
\set f20 ((:uid - 1 + 331 * least(20, :following_cnt)) % :nusers) + 1
BEGIN;
SELECT f2 FROM social.follows WHERE f1 = :uid LIMIT 20;
SELECT * FROM social.tweets WHERE uid IN (:f1, :f2, :f3, :f4, :f5, :f6, :f7, :f8, :f9, :f10, :f11, :f12, :f13, :f14, :f15, :f16, :f17, :f18, :f19, :f20);
COMMIT;
