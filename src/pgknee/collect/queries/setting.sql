-- a setting by name, NULL when unknown (a placeholder no loaded library defines)
SELECT current_setting(%s, true)
