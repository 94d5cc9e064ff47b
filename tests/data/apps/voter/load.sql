-- voter initial population, deterministic (no random()). Run after schema.sql.
--   contestants 6 (BenchBase's NUM_CONTESTANTS and its first six names),
--   area_code_state 305 (BenchBase's VoterConstants AREA_CODES / STATE_CODES),
--   votes 50,000 from phone numbers of those area codes.

INSERT INTO voter.contestants (contestant_number, contestant_name) VALUES
    (1, 'Edwina Burnam'), (2, 'Tabatha Gehling'), (3, 'Kelly Clauss'),
    (4, 'Jessie Alloway'), (5, 'Alana Bregman'), (6, 'Jessie Eichman');

INSERT INTO voter.area_code_state (area_code, state) VALUES
    (907, 'AK'), (205, 'AL'), (256, 'AL'), (334, 'AL'), (251, 'AL'), (870, 'AR'), (501, 'AR'), (479, 'AR'),
    (480, 'AZ'), (602, 'AZ'), (623, 'AZ'), (928, 'AZ'), (520, 'AZ'), (341, 'CA'), (764, 'CA'), (628, 'CA'),
    (831, 'CA'), (925, 'CA'), (909, 'CA'), (562, 'CA'), (661, 'CA'), (510, 'CA'), (650, 'CA'), (949, 'CA'),
    (760, 'CA'), (415, 'CA'), (951, 'CA'), (209, 'CA'), (669, 'CA'), (408, 'CA'), (559, 'CA'), (626, 'CA'),
    (442, 'CA'), (530, 'CA'), (916, 'CA'), (627, 'CA'), (714, 'CA'), (707, 'CA'), (310, 'CA'), (323, 'CA'),
    (213, 'CA'), (424, 'CA'), (747, 'CA'), (818, 'CA'), (858, 'CA'), (935, 'CA'), (619, 'CA'), (805, 'CA'),
    (369, 'CA'), (720, 'CO'), (303, 'CO'), (970, 'CO'), (719, 'CO'), (860, 'CT'), (203, 'CT'), (959, 'CT'),
    (475, 'CT'), (202, 'DC'), (302, 'DE'), (689, 'FL'), (407, 'FL'), (239, 'FL'), (850, 'FL'), (727, 'FL'),
    (321, 'FL'), (754, 'FL'), (954, 'FL'), (927, 'FL'), (352, 'FL'), (863, 'FL'), (386, 'FL'), (904, 'FL'),
    (561, 'FL'), (772, 'FL'), (786, 'FL'), (305, 'FL'), (941, 'FL'), (813, 'FL'), (478, 'GA'), (770, 'GA'),
    (470, 'GA'), (404, 'GA'), (762, 'GA'), (706, 'GA'), (678, 'GA'), (912, 'GA'), (229, 'GA'), (808, 'HI'),
    (515, 'IA'), (319, 'IA'), (563, 'IA'), (641, 'IA'), (712, 'IA'), (208, 'ID'), (217, 'IL'), (872, 'IL'),
    (312, 'IL'), (773, 'IL'), (464, 'IL'), (708, 'IL'), (224, 'IL'), (847, 'IL'), (779, 'IL'), (815, 'IL'),
    (618, 'IL'), (309, 'IL'), (331, 'IL'), (630, 'IL'), (317, 'IN'), (765, 'IN'), (574, 'IN'), (260, 'IN'),
    (219, 'IN'), (812, 'IN'), (913, 'KS'), (785, 'KS'), (316, 'KS'), (620, 'KS'), (606, 'KY'), (859, 'KY'),
    (502, 'KY'), (270, 'KY'), (504, 'LA'), (985, 'LA'), (225, 'LA'), (318, 'LA'), (337, 'LA'), (774, 'MA'),
    (508, 'MA'), (339, 'MA'), (781, 'MA'), (857, 'MA'), (617, 'MA'), (978, 'MA'), (351, 'MA'), (413, 'MA'),
    (443, 'MD'), (410, 'MD'), (301, 'MD'), (240, 'MD'), (207, 'ME'), (517, 'MI'), (810, 'MI'), (278, 'MI'),
    (679, 'MI'), (313, 'MI'), (586, 'MI'), (947, 'MI'), (248, 'MI'), (734, 'MI'), (269, 'MI'), (989, 'MI'),
    (906, 'MI'), (616, 'MI'), (231, 'MI'), (612, 'MN'), (320, 'MN'), (651, 'MN'), (763, 'MN'), (952, 'MN'),
    (218, 'MN'), (507, 'MN'), (636, 'MO'), (660, 'MO'), (975, 'MO'), (816, 'MO'), (573, 'MO'), (314, 'MO'),
    (557, 'MO'), (417, 'MO'), (769, 'MS'), (601, 'MS'), (662, 'MS'), (228, 'MS'), (406, 'MT'), (336, 'NC'),
    (252, 'NC'), (984, 'NC'), (919, 'NC'), (980, 'NC'), (910, 'NC'), (828, 'NC'), (704, 'NC'), (701, 'ND'),
    (402, 'NE'), (308, 'NE'), (603, 'NH'), (908, 'NJ'), (848, 'NJ'), (732, 'NJ'), (551, 'NJ'), (201, 'NJ'),
    (862, 'NJ'), (973, 'NJ'), (609, 'NJ'), (856, 'NJ'), (575, 'NM'), (957, 'NM'), (505, 'NM'), (775, 'NV'),
    (702, 'NV'), (315, 'NY'), (518, 'NY'), (646, 'NY'), (347, 'NY'), (212, 'NY'), (718, 'NY'), (516, 'NY'),
    (917, 'NY'), (845, 'NY'), (631, 'NY'), (716, 'NY'), (585, 'NY'), (607, 'NY'), (914, 'NY'), (216, 'OH'),
    (330, 'OH'), (234, 'OH'), (567, 'OH'), (419, 'OH'), (440, 'OH'), (380, 'OH'), (740, 'OH'), (614, 'OH'),
    (283, 'OH'), (513, 'OH'), (937, 'OH'), (918, 'OK'), (580, 'OK'), (405, 'OK'), (503, 'OR'), (541, 'OR'),
    (971, 'OR'), (814, 'PA'), (717, 'PA'), (570, 'PA'), (878, 'PA'), (835, 'PA'), (484, 'PA'), (610, 'PA'),
    (267, 'PA'), (215, 'PA'), (724, 'PA'), (412, 'PA'), (401, 'RI'), (843, 'SC'), (864, 'SC'), (803, 'SC'),
    (605, 'SD'), (423, 'TN'), (865, 'TN'), (931, 'TN'), (615, 'TN'), (901, 'TN'), (731, 'TN'), (254, 'TX'),
    (325, 'TX'), (713, 'TX'), (940, 'TX'), (817, 'TX'), (430, 'TX'), (903, 'TX'), (806, 'TX'), (737, 'TX'),
    (512, 'TX'), (361, 'TX'), (210, 'TX'), (979, 'TX'), (936, 'TX'), (409, 'TX'), (972, 'TX'), (469, 'TX'),
    (214, 'TX'), (682, 'TX'), (832, 'TX'), (281, 'TX'), (830, 'TX'), (956, 'TX'), (432, 'TX'), (915, 'TX'),
    (435, 'UT'), (801, 'UT'), (385, 'UT'), (434, 'VA'), (804, 'VA'), (757, 'VA'), (703, 'VA'), (571, 'VA'),
    (276, 'VA'), (236, 'VA'), (540, 'VA'), (802, 'VT'), (509, 'WA'), (360, 'WA'), (564, 'WA'), (206, 'WA'),
    (425, 'WA'), (253, 'WA'), (715, 'WI'), (920, 'WI'), (262, 'WI'), (414, 'WI'), (608, 'WI'), (304, 'WV'),
    (307, 'WY');

-- Vote i comes from area code number (i * 7919) % 305 (in code order) and the phone
-- number area_code * 10^7 + (i * 104729) % 10^7; its contestant follows the same
-- per-area-code preference as vote.sql half of the time, a hash the other half.
INSERT INTO voter.votes (vote_id, phone_number, state, contestant_number, created)
SELECT i,
       a.area_code::bigint * 10000000 + (i::bigint * 104729) % 10000000,
       a.state,
       CASE WHEN i % 2 = 0 THEN (i * 7919) % 6 + 1
            WHEN (a.area_code * 7919) % 100 < 30 THEN 1
            ELSE (a.area_code * 104729) % 6 + 1 END,
       timestamp '2026-01-01' + i * interval '1 second'
FROM generate_series(1, 50000) AS i
JOIN (SELECT area_code, state, row_number() OVER (ORDER BY area_code) - 1 AS idx
        FROM voter.area_code_state) AS a
  ON a.idx = (i * 7919) % 305;
SELECT setval('voter.votes_vote_id_seq', (SELECT max(vote_id) FROM voter.votes));

ANALYZE voter.contestants;
ANALYZE voter.area_code_state;
ANALYZE voter.votes;
