"""The collector database, in an SQLite file or a PostgreSQL database: versioned schema, typed
reads and writes (store.db.Store opens either; store.location says which)."""
