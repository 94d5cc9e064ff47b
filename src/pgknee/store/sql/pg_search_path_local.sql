-- the migrations' statements name the store's tables without their schema (to the end of the transaction)
SET LOCAL search_path TO {schema}
