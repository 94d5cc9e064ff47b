-- the database the workload is captured from
SELECT current_database()
