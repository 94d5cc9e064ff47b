-- Vote, the statements of BenchBase's voter/procedures/Vote.java (VoltDB's Voter):
-- check the contestant, count the phone number's votes (at most 1000 allowed), look
-- the caller's state up by area code, INSERT the vote stamped now(); its id comes from
-- the bigserial default. An unknown contestant ends the transaction without a vote.
--
-- Inputs as in BenchBase's PhoneCallGenerator: a phone number area_code * 10^7 +
-- 0..9,999,999, the area code's favourite contestant half of the time (1 for ~30% of the
-- codes, a hash of the code otherwise) and a uniform one the other half, and 1% of the
-- calls for contestant 999, which does not exist. pgbench has no arrays to pick from
-- the 305 known area codes, so the area code is uniform over 201..989; a code that is
-- not in area_code_state (~61% of the calls) is recorded with state 'XX', as BenchBase's
-- Vote does for such numbers. pgbench cannot test strings or hold a made-up one: the
-- state lookup's \aset carries a found flag and the 'XX' insert is its own branch.
\set max_votes 1000
\set ncontestants 6
\set area_code random(201, 989)
\set phone_number :area_code * 10000000 + random(0, 9999999)
\set contestant_number case when random(0, 1) = 1 then random(1, :ncontestants) when (:area_code * 7919) % 100 < 30 then 1 else (:area_code * 104729) % :ncontestants + 1 end
\set contestant_number case when random(1, 100) = 1 then 999 else :contestant_number end
\set valid_contestant 0
\set state_found 0
BEGIN;
SELECT contestant_number AS valid_contestant FROM voter.contestants WHERE contestant_number = :contestant_number \aset
\if :valid_contestant
SELECT COUNT(*) AS num_votes FROM voter.votes WHERE phone_number = :phone_number \gset
\if :num_votes < :max_votes
SELECT state, 1 AS state_found FROM voter.area_code_state WHERE area_code = :area_code \aset
\if :state_found
INSERT INTO voter.votes (phone_number, state, contestant_number, created)
VALUES (:phone_number, :state, :contestant_number, now());
\else
INSERT INTO voter.votes (phone_number, state, contestant_number, created)
VALUES (:phone_number, 'XX', :contestant_number, now());
\endif
\endif
\endif
COMMIT;
