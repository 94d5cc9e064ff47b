-- whether this role may read the schema's meta table: USAGE on the schema (by oid), SELECT on the table (by name)
SELECT has_schema_privilege(%s, 'USAGE') AND has_table_privilege(%s, 'SELECT')
