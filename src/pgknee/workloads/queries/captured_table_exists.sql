-- a captured table on the target (by schema and table name), NULL when it has none of that name
SELECT to_regclass(format('%%I.%%I', %s::text, %s::text))
