-- the meta table inside pgknee's schema: what was seeded, at what scale (the braces: schema, meta table)
CREATE TABLE {}.{} (key text PRIMARY KEY, value text NOT NULL)
