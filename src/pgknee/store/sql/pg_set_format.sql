-- the store's format, once its migrations are applied
UPDATE store_format SET value = ? WHERE key = 'user_version'
