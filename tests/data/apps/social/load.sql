-- social initial population, deterministic (no random()). Run after schema.sql.
--   user_profiles 5,000
--   follows ~50,000: user u follows the users ((u - 1 + 331 * k) % 5000) + 1 for
--     k = 1 .. 5 + (u * 7919) % 11, i.e. 5..15 followees, 10 on average;
--   followers: the same edges the other way round (f1 is followed by f2);
--   tweets 50,000, skewed over the users (uid 1 has ~700, the last ones ~5 each);
--   added_tweets empty.
-- The follow graph is a formula so that the pgbench scripts can compute the ids the
-- first statement of GetTweetsFromFollowing / GetFollowers returns and pass them to
-- the second one's IN list, as the application does with the rows it got.

INSERT INTO social.user_profiles (uid, name, email, partitionid, partitionid2, followers)
SELECT u,
       'user' || u || '-' || substr(md5(u::text), 1, 8),
       'user' || u || '@example.com',
       u % 16,
       (u % 4)::smallint,
       0
FROM generate_series(1, 5000) AS u;

INSERT INTO social.follows (f1, f2)
SELECT u, ((u - 1 + 331 * k) % 5000) + 1
FROM generate_series(1, 5000) AS u, generate_series(1, 15) AS k
WHERE k <= 5 + (u * 7919) % 11;

INSERT INTO social.followers (f1, f2)
SELECT f2, f1 FROM social.follows;

UPDATE social.user_profiles AS p
   SET followers = c.n
  FROM (SELECT f1, count(*) AS n FROM social.followers GROUP BY f1) AS c
 WHERE p.uid = c.f1;

-- h = (i * 7919) % 50000 runs through 0..49999 once; uid = 1 + h^2 / 500000 gives the
-- low uids many tweets and every user at least 5.
INSERT INTO social.tweets (id, uid, text, createdate)
SELECT i,
       1 + (((i::bigint * 7919) % 50000) * ((i::bigint * 7919) % 50000) / 500000)::int,
       left(repeat(md5(i::text) || ' ', 5), 20 + (i * 7919) % 121),
       timestamp '2026-01-01' + i * interval '1 minute'
FROM generate_series(1, 50000) AS i;
SELECT setval('social.tweets_id_seq', (SELECT max(id) FROM social.tweets));

ANALYZE social.user_profiles;
ANALYZE social.follows;
ANALYZE social.followers;
ANALYZE social.tweets;
ANALYZE social.added_tweets;
