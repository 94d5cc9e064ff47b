-- the session's statements name the store's tables without their schema
SET search_path TO {schema}
