-- pgknee collector database, format 11: pg_wait_sampling as a second wait source. Per step, the
-- profile's counts added during the bench window, of the benchmark's backends only, by wait
-- event; and how many probes the collector made in that window (counted on a reference session
-- sleeping in pg_sleep, or assumed from profile_period when no such session could be held).
-- AAS of an event = count / probes.
CREATE TABLE step_wait_sampling (
    step_id        INTEGER PRIMARY KEY REFERENCES steps (step_id) ON DELETE CASCADE,
    probes         INTEGER NOT NULL,
    probes_counted INTEGER NOT NULL,   -- 1: counted on the reference session; 0: assumed
    window_s       REAL NOT NULL,      -- between the two reads of the profile
    backends       INTEGER NOT NULL    -- the benchmark's backends kept
);
CREATE TABLE step_wait_profile (
    step_id         INTEGER NOT NULL REFERENCES steps (step_id) ON DELETE CASCADE,
    wait_event_type TEXT NOT NULL,
    wait_event      TEXT NOT NULL,
    count           INTEGER NOT NULL,
    PRIMARY KEY (step_id, wait_event_type, wait_event)
);
