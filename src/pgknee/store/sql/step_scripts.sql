-- each script's results in a step; the columns are ScriptRow's fields
SELECT {columns} FROM step_scripts WHERE step_id = ? ORDER BY script_no
