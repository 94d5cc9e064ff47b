\set owner random(0, 499)
SELECT count(*), sum(balance) FROM accounts WHERE region = 'eu' AND owner = :owner;
