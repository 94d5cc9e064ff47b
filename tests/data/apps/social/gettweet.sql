-- GetTweet, the statement of BenchBase's twitter/procedures/GetTweet.java: one tweet by
-- id. The id is uniform over the 50,000 loaded tweets (BenchBase replays ids of
-- existing tweets from a trace file).
\set ntweets 50000
\set tweet_id random(1, :ntweets)
BEGIN;
SELECT * FROM social.tweets WHERE id = :tweet_id;
COMMIT;
