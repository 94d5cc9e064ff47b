-- the source's server version, as a number (170004)
SELECT current_setting('server_version_num')
