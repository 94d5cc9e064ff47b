-- a captured statement prepared by pgknee (never executed): the type the server infers for each $n
SELECT array(SELECT format_type(t, NULL) FROM unnest(parameter_types::oid[]) AS t)
FROM pg_prepared_statements WHERE name = 'pgknee_capture_types'
