-- the extension is loaded and this role may read its profile
SELECT count(*) FROM pg_wait_sampling_profile
