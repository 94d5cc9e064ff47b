-- this session's own statistics reported now (PostgreSQL 15+; a backend flushes them at most once a
-- second): the window's end read then holds every statement of pgknee's it takes out
SELECT /* pgknee:observe */ pg_stat_force_next_flush()
