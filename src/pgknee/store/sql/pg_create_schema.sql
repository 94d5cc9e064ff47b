-- the store's schema, made in a database that has none of that name
CREATE SCHEMA {schema}
