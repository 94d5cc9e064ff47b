"""pgknee: the PostgreSQL connection-concurrency lab."""

__version__ = "0.1.0"
APP_NAME = "pgknee"
