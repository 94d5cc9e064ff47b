-- InsertTweet, the statement of BenchBase's twitter/procedures/InsertTweet.java: a new
-- tweet of a user in added_tweets, its id from the bigserial default, stamped now().
-- pgbench variables cannot hold a text the script makes up, so the tweet's text (20..140
-- characters) is derived from a random number on the server; the application would send it.
\set nusers 5000
\set uid random(1, :nusers)
\set tweet_seed random(1, 1000000000)
\set tweet_len random(20, 140)
BEGIN;
INSERT INTO social.added_tweets (uid, text, createdate)
VALUES (:uid, left(repeat(md5(CAST(:tweet_seed AS text)) || ' ', 5), :tweet_len), now());
COMMIT;
