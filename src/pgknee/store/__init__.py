"""The SQLite collector database: versioned schema, typed reads and writes."""

from pgknee.store.db import Store

__all__ = ["Store"]
