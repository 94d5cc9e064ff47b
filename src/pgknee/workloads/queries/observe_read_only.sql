-- the observing session reads only: a write would fail, not happen
SET default_transaction_read_only = on
