SELECT 1 FROM pg_extension WHERE extname = %s
