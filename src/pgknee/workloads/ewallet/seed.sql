-- Seeding, server side. {{users}} and {{transactions}} come from the scale.
-- Every seeded transfer is a balanced debit/credit pair between two different
-- wallets, and each wallet's balance is its opening balance plus its ledger.
INSERT INTO {{schema}}.users (id, name)
SELECT g, 'user_' || g FROM generate_series(1, {{users}}) AS g;

INSERT INTO {{schema}}.wallets (id, user_id, balance, updated_at)
SELECT g, g, {{opening_balance}}, now() FROM generate_series(1, {{users}}) AS g;

INSERT INTO {{schema}}.transactions (id, idempotency_key, amount, status, created_at)
SELECT g, gen_random_uuid(), 1 + floor(random() * 1000)::bigint, 'completed',
       now() - random() * interval '365 days'
FROM generate_series(1, {{transactions}}) AS g;

SELECT setval('{{schema}}.transactions_id_seq', {{transactions}});

INSERT INTO {{schema}}.ledger_entries (transaction_id, wallet_id, amount, direction, created_at)
SELECT t.id, e.wallet_id, t.amount, e.direction, t.created_at
FROM (
    SELECT id, amount, created_at,
           1 + floor(random() * {{users}})::bigint AS from_id,
           1 + floor(random() * ({{users}} - 1))::bigint AS offs
    FROM {{schema}}.transactions
) AS t
CROSS JOIN LATERAL (VALUES
    (t.from_id, 'debit'),
    (1 + (t.from_id - 1 + t.offs) % {{users}}, 'credit')
) AS e (wallet_id, direction)
ORDER BY t.created_at;

CREATE INDEX ledger_entries_wallet_created_idx ON {{schema}}.ledger_entries (wallet_id, created_at DESC);

UPDATE {{schema}}.wallets AS w
SET balance = {{opening_balance}} + l.net
FROM (
    SELECT wallet_id, sum(CASE direction WHEN 'credit' THEN amount ELSE -amount END) AS net
    FROM {{schema}}.ledger_entries GROUP BY wallet_id
) AS l
WHERE l.wallet_id = w.id;

-- the foreign keys of schema.sql, validated once over the rows seeded
ALTER TABLE {{schema}}.wallets ADD FOREIGN KEY (user_id) REFERENCES {{schema}}.users (id);
ALTER TABLE {{schema}}.ledger_entries ADD FOREIGN KEY (transaction_id) REFERENCES {{schema}}.transactions (id);
ALTER TABLE {{schema}}.ledger_entries ADD FOREIGN KEY (wallet_id) REFERENCES {{schema}}.wallets (id);
