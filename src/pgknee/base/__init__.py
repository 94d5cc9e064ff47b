"""What every layer leans on: errors, timestamps, SQL files, connection strings."""
