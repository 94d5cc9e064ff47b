-- pgknee's mark on the schema it created: its comment (the braces: the schema, then the comment as a literal)
COMMENT ON SCHEMA {} IS {}
