-- GetUserTweets, the statement of BenchBase's twitter/procedures/GetUserTweets.java:
-- up to 10 tweets of a user. The user is uniform over 1..5000, as in BenchBase's
-- TwitterWorker (the tweets themselves are skewed over the users by the loader).
\set nusers 5000
\set uid random(1, :nusers)
BEGIN;
SELECT * FROM social.tweets WHERE uid = :uid LIMIT 10;
COMMIT;
