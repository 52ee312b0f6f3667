-- scratchbench history store, version 1.
-- One row per run, per test case of a run, per figure of a case, per repetition sample.
CREATE TABLE runs (
    run_id        TEXT PRIMARY KEY,      -- scratchbench run directory name, or session uuid
    session_uuid  TEXT UNIQUE,           -- ReFrame's session
    site          TEXT,
    system        TEXT,
    tag           TEXT,                  -- quick, nightly, acceptance
    revision      TEXT,                  -- git revision of scratchbench
    note          TEXT,                  -- free text, e.g. a change ticket
    started       REAL,                  -- unix time
    finished      REAL,
    reframe_version TEXT,
    hostname      TEXT,
    source        TEXT,                  -- the run report ingested
    ingested_at   REAL
);
CREATE TABLE cases (
    case_id       INTEGER PRIMARY KEY,
    run_id        TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    series        TEXT NOT NULL,         -- system:partition|environ|display name: one history line
    check_name    TEXT NOT NULL,
    display_name  TEXT NOT NULL,
    system        TEXT, partition TEXT, environ TEXT,
    scratch_target TEXT, scratch_kind TEXT,
    nodes         INTEGER, tasks_per_node INTEGER, num_tasks INTEGER,
    transfer_size INTEGER, api TEXT, workload TEXT,
    params        TEXT,                  -- JSON of the check's parameters
    result        TEXT, fail_phase TEXT, fail_reason TEXT,
    jobid         TEXT, nodelist TEXT, exclusive INTEGER, access TEXT,
    completed     REAL,
    UNIQUE (run_id, series)
);
CREATE INDEX cases_series ON cases(series);
CREATE INDEX cases_target ON cases(scratch_target);
CREATE TABLE figures (
    figure_id     INTEGER PRIMARY KEY,
    case_id       INTEGER NOT NULL REFERENCES cases(case_id) ON DELETE CASCADE,
    metric        TEXT NOT NULL,
    value         REAL,
    unit          TEXT,
    reference     REAL, lower REAL, upper REAL,
    result        TEXT,
    UNIQUE (case_id, metric)
);
CREATE INDEX figures_metric ON figures(metric);
CREATE TABLE samples (
    figure_id     INTEGER NOT NULL REFERENCES figures(figure_id) ON DELETE CASCADE,
    idx           INTEGER NOT NULL,
    value         REAL,
    PRIMARY KEY (figure_id, idx)
);
