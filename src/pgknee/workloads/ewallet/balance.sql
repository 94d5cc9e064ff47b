-- balance: the balance of a random user's wallet.
\set user_id random(1, :n_users)
SELECT balance FROM {{schema}}.wallets WHERE user_id = :user_id;
