-- scratchbench history store, version 5.
-- What each scratch target was in a run, as a job on a node of the partition saw it
-- (scratchbench/fsconfig.py: the mount, statfs, the file system's own tools, kernel,
-- Slurm and MPI versions, the site's own facts), one row per target, partition and
-- environment that collected it, and one row naming why for a target whose
-- configuration could not be read in that run (facts NULL, problem set).
CREATE TABLE filesystem_configs (
    config_id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    scratch_target TEXT NOT NULL,
    system TEXT,
    partition TEXT,
    environ TEXT,
    -- the job's completion time of the case that collected it (Unix seconds)
    collected REAL,
    -- the parsed facts as JSON (fsconfig.parse_collected), NULL when none were read
    facts TEXT,
    -- why the configuration (or part of it) could not be read, one problem a line
    problem TEXT,
    UNIQUE (run_id, scratch_target, system, partition, environ)
);
CREATE INDEX filesystem_configs_target ON filesystem_configs (scratch_target, run_id);
