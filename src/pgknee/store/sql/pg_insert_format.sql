-- a new store's format: pgknee's application_id, and format 0 until its migrations are applied
INSERT INTO {schema}.store_format VALUES ('application_id', ?), ('user_version', '0')
