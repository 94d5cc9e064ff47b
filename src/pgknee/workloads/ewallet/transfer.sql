-- transfer: money from one random user's wallet to another's, double-entry.
-- The two wallets are locked in id order (lower first), so concurrent transfers
-- cannot deadlock. No \gset: the same script runs inside a pipeline.
\set from_id random(1, :n_users)
\set offs random(1, :n_users - 1)
\set to_id 1 + (:from_id - 1 + :offs) % :n_users
\set lo least(:from_id, :to_id)
\set hi greatest(:from_id, :to_id)
\set amount random(1, 100)
BEGIN;
UPDATE {{schema}}.wallets SET balance = balance + (CASE WHEN id = :from_id THEN -1 ELSE 1 END) * :amount::bigint, updated_at = now() WHERE id = :lo;
UPDATE {{schema}}.wallets SET balance = balance + (CASE WHEN id = :from_id THEN -1 ELSE 1 END) * :amount::bigint, updated_at = now() WHERE id = :hi;
INSERT INTO {{schema}}.transactions (idempotency_key, amount, status) VALUES (gen_random_uuid(), :amount, 'completed');
INSERT INTO {{schema}}.ledger_entries (transaction_id, wallet_id, amount, direction) VALUES (currval('{{schema}}.transactions_id_seq'), :from_id, :amount, 'debit'), (currval('{{schema}}.transactions_id_seq'), :to_id, :amount, 'credit');
END;
