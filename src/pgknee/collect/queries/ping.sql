-- is the server there: one round trip on pgknee's statistics session
SELECT 1
