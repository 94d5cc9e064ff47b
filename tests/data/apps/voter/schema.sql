-- voter: BenchBase's voter schema (voter/ddl-postgres.sql, after VoltDB's Voter
-- example): contestants, area_code_state, votes. votes gets a bigserial vote_id as its
-- primary key (BenchBase's clients number the votes themselves, without a key);
-- the Vote transaction counts a phone number's votes through votes_phone_number_idx.

CREATE SCHEMA voter;

CREATE TABLE voter.contestants (
    contestant_number integer     NOT NULL,
    contestant_name   varchar(50) NOT NULL,
    PRIMARY KEY (contestant_number)
);

CREATE TABLE voter.area_code_state (
    area_code smallint   NOT NULL,
    state     varchar(2) NOT NULL,
    PRIMARY KEY (area_code)
);

CREATE TABLE voter.votes (
    vote_id           bigserial  NOT NULL,
    phone_number      bigint     NOT NULL,
    state             varchar(2) NOT NULL,
    contestant_number integer    NOT NULL REFERENCES voter.contestants (contestant_number),
    created           timestamp  NOT NULL,
    PRIMARY KEY (vote_id)
);
CREATE INDEX votes_phone_number_idx ON voter.votes (phone_number);

-- BenchBase's two result views.
CREATE VIEW voter.v_votes_by_phone_number (phone_number, num_votes) AS
SELECT phone_number, COUNT(*) FROM voter.votes GROUP BY phone_number;

CREATE VIEW voter.v_votes_by_contestant_number_state (contestant_number, state, num_votes) AS
SELECT contestant_number, state, COUNT(*) FROM voter.votes GROUP BY contestant_number, state;
