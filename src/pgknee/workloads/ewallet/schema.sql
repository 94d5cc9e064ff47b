-- The e-wallet workload (article 000, section 5), in pgknee's own schema (created and
-- marked by workloads/schema.py in the same transaction).

CREATE TABLE {{schema}}.users (
    id   bigint PRIMARY KEY,
    name text   NOT NULL
);

CREATE TABLE {{schema}}.wallets (
    id         bigint      PRIMARY KEY,
    user_id    bigint      NOT NULL UNIQUE REFERENCES {{schema}}.users (id),
    balance    bigint      NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE {{schema}}.transactions (
    id              bigserial   PRIMARY KEY,
    idempotency_key uuid        NOT NULL UNIQUE,
    amount          bigint      NOT NULL CHECK (amount > 0),
    status          text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE {{schema}}.ledger_entries (
    id             bigserial   PRIMARY KEY,
    transaction_id bigint      NOT NULL REFERENCES {{schema}}.transactions (id),
    wallet_id      bigint      NOT NULL REFERENCES {{schema}}.wallets (id),
    amount         bigint      NOT NULL CHECK (amount > 0),
    direction      text        NOT NULL CHECK (direction IN ('debit', 'credit')),
    created_at     timestamptz NOT NULL DEFAULT now()
);
