-- is the server there: one round trip (pgknee's statistics session; a login through a pooler)
SELECT 1
