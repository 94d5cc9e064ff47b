-- a read command's session writes nothing
SET default_transaction_read_only = on
