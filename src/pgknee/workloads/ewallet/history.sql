-- history: the last 20 ledger entries of a random user's wallet.
\set wallet_id random(1, :n_users)
SELECT id, transaction_id, amount, direction, created_at FROM {{schema}}.ledger_entries WHERE wallet_id = :wallet_id ORDER BY created_at DESC LIMIT 20;
