-- a step's row copied into the destination store, which gives it its id
INSERT INTO steps ({columns}) VALUES ({values}) RETURNING step_id
