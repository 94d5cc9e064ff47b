-- GetFollowers, the statements of BenchBase's twitter/procedures/GetFollowers.java:
-- the (up to 20) followers of :uid, then their names with an IN list of 20 parameters.
-- pgbench cannot read a result set into a list: the follower ids are computed from the
-- loader's formula. The users that can follow v are u_k = ((v - 1 - 331 * k) mod 5000) + 1,
-- k = 1..15, and u_k does when it follows at least k users (5 + (u_k * 7919) % 11 >= k),
-- so u_1..u_5 always do. Slots whose u_k does not follow v, and slots 16..20, repeat u_1
-- (BenchBase repeats the last id): the IN list holds exactly the rows the first
-- SELECT returns. The user is uniform over 1..5000, as in BenchBase's TwitterWorker.
\set nusers 5000
\set uid random(1, :nusers)
\set u1 ((:uid - 1 - 331 * 1 + :nusers) % :nusers) + 1
\set u2 ((:uid - 1 - 331 * 2 + :nusers) % :nusers) + 1
\set u3 ((:uid - 1 - 331 * 3 + :nusers) % :nusers) + 1
\set u4 ((:uid - 1 - 331 * 4 + :nusers) % :nusers) + 1
\set u5 ((:uid - 1 - 331 * 5 + :nusers) % :nusers) + 1
\set u6 ((:uid - 1 - 331 * 6 + :nusers) % :nusers) + 1
\set u7 ((:uid - 1 - 331 * 7 + :nusers) % :nusers) + 1
\set u8 ((:uid - 1 - 331 * 8 + :nusers) % :nusers) + 1
\set u9 ((:uid - 1 - 331 * 9 + :nusers) % :nusers) + 1
\set u10 ((:uid - 1 - 331 * 10 + :nusers) % :nusers) + 1
\set u11 ((:uid - 1 - 331 * 11 + :nusers) % :nusers) + 1
\set u12 ((:uid - 1 - 331 * 12 + :nusers) % :nusers) + 1
\set u13 ((:uid - 1 - 331 * 13 + :nusers) % :nusers) + 1
\set u14 ((:uid - 1 - 331 * 14 + :nusers) % :nusers) + 1
\set u15 ((:uid - 1 - 331 * 15 + :nusers) % :nusers) + 1
\set f1 :u1
\set f2 case when 5 + (:u2 * 7919) % 11 >= 2 then :u2 else :u1 end
\set f3 case when 5 + (:u3 * 7919) % 11 >= 3 then :u3 else :u1 end
\set f4 case when 5 + (:u4 * 7919) % 11 >= 4 then :u4 else :u1 end
\set f5 case when 5 + (:u5 * 7919) % 11 >= 5 then :u5 else :u1 end
\set f6 case when 5 + (:u6 * 7919) % 11 >= 6 then :u6 else :u1 end
\set f7 case when 5 + (:u7 * 7919) % 11 >= 7 then :u7 else :u1 end
\set f8 case when 5 + (:u8 * 7919) % 11 >= 8 then :u8 else :u1 end
\set f9 case when 5 + (:u9 * 7919) % 11 >= 9 then :u9 else :u1 end
\set f10 case when 5 + (:u10 * 7919) % 11 >= 10 then :u10 else :u1 end
\set f11 case when 5 + (:u11 * 7919) % 11 >= 11 then :u11 else :u1 end
\set f12 case when 5 + (:u12 * 7919) % 11 >= 12 then :u12 else :u1 end
\set f13 case when 5 + (:u13 * 7919) % 11 >= 13 then :u13 else :u1 end
\set f14 case when 5 + (:u14 * 7919) % 11 >= 14 then :u14 else :u1 end
\set f15 case when 5 + (:u15 * 7919) % 11 >= 15 then :u15 else :u1 end
\set f16 :u1
\set f17 :u1
\set f18 :u1
\set f19 :u1
\set f20 :u1
BEGIN;
SELECT f2 FROM social.followers WHERE f1 = :uid LIMIT 20;
SELECT uid, name FROM social.user_profiles WHERE uid IN (:f1, :f2, :f3, :f4, :f5, :f6, :f7, :f8, :f9, :f10, :f11, :f12, :f13, :f14, :f15, :f16, :f17, :f18, :f19, :f20);
COMMIT;
