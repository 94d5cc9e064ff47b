-- the schema marked as pgknee's: its comment is pg.MARK (a unit test holds it to it)
COMMENT ON SCHEMA {schema} IS 'pgknee results store: made and written by pgknee only'
