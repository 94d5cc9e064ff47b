-- the e-wallet's total balance as seeded (the braces: its schema)
SELECT sum(balance) FROM {}.wallets
