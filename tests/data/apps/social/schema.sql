-- social: BenchBase's twitter schema (twitter/ddl-postgres.sql): user_profiles, follows
-- (f1 follows f2), followers (f2 follows f1, the mirror of follows), tweets (loaded)
-- and added_tweets (where InsertTweet writes). Tweet ids are bigserial; the loader
-- moves tweets' sequence past the loaded ids. BenchBase's unused indexes on
-- user_profiles (followers, partitionid) are left out.

CREATE SCHEMA social;

CREATE TABLE social.user_profiles (
    uid          int          NOT NULL,
    name         varchar(255) DEFAULT NULL,
    email        varchar(255) DEFAULT NULL,
    partitionid  int          DEFAULT NULL,
    partitionid2 smallint     DEFAULT NULL,
    followers    int          DEFAULT NULL,
    PRIMARY KEY (uid)
);

-- GetFollowers: SELECT f2 FROM followers WHERE f1 = ? LIMIT 20 (the primary key).
CREATE TABLE social.followers (
    f1 int NOT NULL REFERENCES social.user_profiles (uid),
    f2 int NOT NULL REFERENCES social.user_profiles (uid),
    PRIMARY KEY (f1, f2)
);

-- GetTweetsFromFollowing: SELECT f2 FROM follows WHERE f1 = ? LIMIT 20 (the primary key).
CREATE TABLE social.follows (
    f1 int NOT NULL REFERENCES social.user_profiles (uid),
    f2 int NOT NULL REFERENCES social.user_profiles (uid),
    PRIMARY KEY (f1, f2)
);

CREATE TABLE social.tweets (
    id         bigserial NOT NULL,
    uid        int       NOT NULL REFERENCES social.user_profiles (uid),
    text       char(140) NOT NULL,
    createdate timestamp DEFAULT NULL,
    PRIMARY KEY (id)
);
-- GetUserTweets (uid = ?) and GetTweetsFromFollowing (uid IN (...)).
CREATE INDEX tweets_uid_idx ON social.tweets (uid);

CREATE TABLE social.added_tweets (
    id         bigserial NOT NULL,
    uid        int       NOT NULL REFERENCES social.user_profiles (uid),
    text       char(140) NOT NULL,
    createdate timestamp DEFAULT NULL,
    PRIMARY KEY (id)
);
CREATE INDEX added_tweets_uid_idx ON social.added_tweets (uid);
