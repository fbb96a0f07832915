/* The schema of the store, one script per version in each dialect, run in order by
 * store_migrate() (rows.c): SQLite's first (with what each column means), then PostgreSQL's. A
 * new version adds a script to both. */
#include "driver.h"

/* A run's order as ingest stores it: its commit's, else its own start. */
#define ORDER_OF_RUN                                                                \
	"COALESCE((SELECT c.order_us FROM commits c WHERE c.id = runs.commit_id), " \
	"runs.started_us)"

/* ---- SQLite ---- */

/* Migration N is migrations[N - 1]; never edit one that shipped, add the next. */
const char *const store_sqlite_migrations[] = {
    /* 1: the initial schema */
    "CREATE TABLE projects ("
    " id INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL UNIQUE,"
    " created_at TEXT NOT NULL);"
    "CREATE TABLE hosts ("
    " id INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL UNIQUE,"
    " arch TEXT NOT NULL,"
    " cpu_model TEXT NOT NULL,"
    " platform_hash TEXT,"
    " fingerprint_id INTEGER," /* the latest fingerprint */
    " first_seen TEXT NOT NULL,"
    " last_seen TEXT NOT NULL);"
    /* Each distinct host object a host reported, by the hash of its canonical JSON. */
    "CREATE TABLE fingerprints ("
    " id INTEGER PRIMARY KEY,"
    " host_id INTEGER NOT NULL REFERENCES hosts (id),"
    " hash TEXT NOT NULL,"
    " platform_hash TEXT,"
    " doc TEXT NOT NULL,"
    " first_seen TEXT NOT NULL,"
    " last_seen TEXT NOT NULL,"
    " UNIQUE (host_id, hash));"
    /* order_us places a commit on its refs: its own time, else its first run's start. */
    "CREATE TABLE commits ("
    " id INTEGER PRIMARY KEY,"
    " project_id INTEGER NOT NULL REFERENCES projects (id),"
    " sha TEXT NOT NULL,"
    " commit_time TEXT,"
    " commit_time_us INTEGER,"
    " first_started_us INTEGER NOT NULL,"
    " order_us INTEGER NOT NULL,"
    " UNIQUE (project_id, sha));"
    "CREATE INDEX commits_sha ON commits (sha);"
    /* id is the run's sequence: AUTOINCREMENT never reuses one, so cursors stay valid. */
    "CREATE TABLE runs ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " uuid TEXT NOT NULL UNIQUE,"
    " project_id INTEGER NOT NULL REFERENCES projects (id),"
    " host_id INTEGER NOT NULL REFERENCES hosts (id),"
    " fingerprint_id INTEGER NOT NULL REFERENCES fingerprints (id),"
    " commit_id INTEGER REFERENCES commits (id),"
    " ref TEXT NOT NULL,"
    " commit_time TEXT,"
    " trigger TEXT NOT NULL,"
    " started_at TEXT NOT NULL,"
    " started_us INTEGER NOT NULL,"
    " finished_at TEXT NOT NULL,"
    " matrix_name TEXT NOT NULL,"
    " matrix_version INTEGER NOT NULL,"
    " matrix_hash TEXT NOT NULL,"
    " matrix_profile TEXT,"
    " meta TEXT,"
    " n_cells INTEGER NOT NULL,"
    " content_hash TEXT NOT NULL,"
    " received_at TEXT NOT NULL);"
    "CREATE INDEX runs_host ON runs (host_id, id);"
    "CREATE INDEX runs_host_ref ON runs (host_id, ref, id);"
    "CREATE INDEX runs_commit ON runs (commit_id, host_id);"
    "CREATE INDEX runs_project ON runs (project_id, id);"
    /* A cell's identity: sig joins every field below (see store_cell_sig()). */
    "CREATE TABLE cells ("
    " id INTEGER PRIMARY KEY,"
    " sig TEXT NOT NULL UNIQUE,"
    " key TEXT NOT NULL,"
    " op TEXT NOT NULL,"
    " reader TEXT,"
    " subject TEXT,"
    " kernel TEXT,"
    " placement TEXT,"
    " cpu INTEGER,"
    " contender_cpu INTEGER,"
    " c INTEGER,"
    " d INTEGER NOT NULL);"
    "CREATE INDEX cells_key ON cells (key);"
    "CREATE TABLE measurements ("
    " run_id INTEGER NOT NULL REFERENCES runs (id),"
    " cell_id INTEGER NOT NULL REFERENCES cells (id),"
    " ord INTEGER NOT NULL," /* position in the document */
    " status TEXT NOT NULL,"
    " n INTEGER NOT NULL,"
    " batch INTEGER NOT NULL,"
    " min REAL, p50 REAL, p95 REAL, p99 REAL, max REAL, mean REAL, stddev REAL,"
    " ci_lo REAL, ci_hi REAL, baseline_ns REAL,"
    " below_resolution INTEGER NOT NULL,"
    " reason TEXT,"
    " PRIMARY KEY (run_id, cell_id)) WITHOUT ROWID;"
    "CREATE TABLE tokens ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " role TEXT NOT NULL CHECK (role IN ('agent', 'ci', 'admin')),"
    " host TEXT,"
    " hash TEXT NOT NULL UNIQUE,"
    " created_at TEXT NOT NULL,"
    " revoked_at TEXT,"
    " last_used_at TEXT,"
    " CHECK ((role = 'agent') = (host IS NOT NULL)));"
    "CREATE TABLE jobs ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " project TEXT NOT NULL,"
    " commit_sha TEXT NOT NULL,"
    " ref TEXT NOT NULL,"
    " subject TEXT,"
    " all_hosts INTEGER NOT NULL,"
    " created_at TEXT NOT NULL,"
    " expires_at TEXT NOT NULL,"
    " expires_us INTEGER NOT NULL,"
    " created_by INTEGER);"
    "CREATE INDEX jobs_expires ON jobs (expires_us);"
    "CREATE TABLE job_targets ("
    " job_id INTEGER NOT NULL REFERENCES jobs (id),"
    " host TEXT NOT NULL,"
    " PRIMARY KEY (job_id, host)) WITHOUT ROWID;"
    "CREATE INDEX job_targets_host ON job_targets (host, job_id);"
    "CREATE TABLE job_hosts ("
    " job_id INTEGER NOT NULL REFERENCES jobs (id),"
    " host TEXT NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN ('claimed', 'running', 'done', 'failed')),"
    " run_id TEXT,"
    " message TEXT,"
    " claimed_at TEXT NOT NULL,"
    " claimed_us INTEGER NOT NULL,"
    " updated_at TEXT NOT NULL,"
    " PRIMARY KEY (job_id, host)) WITHOUT ROWID;",
    /* 2: regression analysis: change points of each series and each commit's verdict per
     * host, both recomputed in the background after ingest (names, not ids: a cache that is
     * replaced whole, never joined on the ingest path) */
    "CREATE TABLE change_points ("
    " project TEXT NOT NULL,"
    " host TEXT NOT NULL,"
    " ref TEXT NOT NULL,"
    " cell_key TEXT NOT NULL,"
    " metric TEXT NOT NULL,"
    " commit_sha TEXT,"
    " run_uuid TEXT NOT NULL,"
    " order_us INTEGER NOT NULL,"
    " before REAL NOT NULL,"
    " after REAL NOT NULL,"
    " pvalue REAL NOT NULL,"
    " computed_at TEXT NOT NULL);"
    "CREATE INDEX change_points_series ON change_points (host, ref, project, cell_key, order_us);"
    "CREATE TABLE verdicts ("
    " project TEXT NOT NULL,"
    " commit_sha TEXT NOT NULL,"
    " host TEXT NOT NULL,"
    " baseline_ref TEXT NOT NULL,"
    " status TEXT NOT NULL,"
    " doc TEXT NOT NULL,"
    " order_us INTEGER NOT NULL,"
    " computed_at TEXT NOT NULL,"
    " PRIMARY KEY (project, commit_sha, host));"
    "CREATE INDEX verdicts_host ON verdicts (host, order_us);"
    "CREATE INDEX verdicts_order ON verdicts (order_us);",
    /* 3: one name per identifier (a run is `seq` as a number, `run_id` as a UUID, in every
     * table; a verdict's document is `json` as in store.h), the durable queue of the work after
     * an upload, and the drawn charts. RENAME COLUMN rewrites the indexes and the foreign keys
     * that name a column. */
    "ALTER TABLE runs RENAME COLUMN id TO seq;"
    "ALTER TABLE runs RENAME COLUMN uuid TO run_id;"
    "ALTER TABLE measurements RENAME COLUMN run_id TO run_seq;"
    "ALTER TABLE change_points RENAME COLUMN run_uuid TO run_id;"
    "ALTER TABLE verdicts RENAME COLUMN doc TO json;"
    /* One row per kind and (project, commit, host, ref), commit_sha '' for runs without one.
     * generation grows when it is enqueued again while claimed; max_attempts and lease_us are
     * those of its last claim, which tell a dead task (its attempts used up) from a live one. */
    "CREATE TABLE tasks ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " kind TEXT NOT NULL,"
    " project TEXT NOT NULL,"
    " commit_sha TEXT NOT NULL,"
    " host TEXT NOT NULL,"
    " ref TEXT NOT NULL,"
    " generation INTEGER NOT NULL,"
    " attempts INTEGER NOT NULL,"
    " max_attempts INTEGER,"
    " owner TEXT,"
    " claimed_at TEXT,"
    " claimed_us INTEGER,"
    " lease_us INTEGER,"
    " last_error TEXT,"
    " enqueued_at TEXT NOT NULL,"
    " UNIQUE (kind, project, commit_sha, host, ref));"
    /* data last: reading the columns before it does not read through it */
    "CREATE TABLE charts ("
    " path TEXT PRIMARY KEY,"
    " content_type TEXT NOT NULL,"
    " hash TEXT NOT NULL,"
    " updated_at TEXT NOT NULL,"
    " data BLOB NOT NULL);",
    /* 4: the run's reference series (a document's "reference" object; NULL: none) */
    "ALTER TABLE runs ADD COLUMN reference TEXT;",
    /* 5: confirmation: the run whose suspects a run re-measures (a document's
     * "confirmation_of"; NULL: a first run) and the re-measurements a first run's agent makes
     * itself ("confirm"; NULL: none) */
    "ALTER TABLE runs ADD COLUMN confirmation_of TEXT;"
    "ALTER TABLE runs ADD COLUMN confirm INTEGER;"
    /* a confirmation job: what it re-measures (JSON) and the run it confirms; the hosts
     * that poll for jobs (daemon hosts, which the collector queues confirmations for) */
    "ALTER TABLE jobs ADD COLUMN confirm TEXT;"
    "ALTER TABLE jobs ADD COLUMN confirmation_of TEXT;"
    "CREATE INDEX jobs_confirmation_of ON jobs (confirmation_of);"
    "CREATE TABLE job_polls (host TEXT PRIMARY KEY, polled_us INTEGER NOT NULL);",
    /* 6: interleaved A/B documents (atomwatch.ab/1): the document as uploaded and the
     * collector's judgment of it, found by id and by (project, head commit) */
    "CREATE TABLE ab_docs ("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " ab_id TEXT NOT NULL UNIQUE,"
    " project TEXT NOT NULL,"
    " host TEXT NOT NULL,"
    " subject TEXT NOT NULL,"
    " base_commit TEXT NOT NULL,"
    " head_commit TEXT NOT NULL,"
    " ref TEXT,"
    " aa INTEGER NOT NULL,"
    " verdict TEXT NOT NULL,"
    " content_hash TEXT NOT NULL,"
    " received_at TEXT NOT NULL,"
    " judgment TEXT NOT NULL,"
    " doc TEXT NOT NULL);"
    "CREATE INDEX ab_docs_head ON ab_docs (project, head_commit, seq);"
    /* an A/B job (atomwatch-ci trigger --ab): the base commit; NULL for a run */
    "ALTER TABLE jobs ADD COLUMN ab_base TEXT;",
    /* 7: issue 32, a history read in bounded time. The run's commit order on the run itself
     * (order_us: its commit's commits.order_us, kept equal by ingest when a later run moves
     * the commit; its own started_us without a commit), NULL until migration 8 fills it in
     * batches (runs_order_todo: what is left). An index for each filter combination the lists
     * use, the task queue's claim order, runs by start (retention finds the oldest), and the
     * aggregates that retention keeps of the runs it thins: per host, ref, cell and day or
     * week (by started_at), the count, min, median and max of the p50s. */
    "ALTER TABLE runs ADD COLUMN order_us INTEGER;"
    /* the commit's order before the latest run moved it: ingest moves the commit's earlier
     * runs only when it changed */
    "ALTER TABLE commits ADD COLUMN prev_order_us INTEGER;"
    "CREATE INDEX runs_order_todo ON runs (seq) WHERE order_us IS NULL;"
    "DROP INDEX runs_commit;"
    "CREATE INDEX runs_commit ON runs (commit_id, host_id, seq);"
    "CREATE INDEX runs_commit_seq ON runs (commit_id, seq);"
    "CREATE INDEX runs_started ON runs (started_us);"
    "CREATE INDEX verdicts_commit ON verdicts (commit_sha, order_us);"
    "CREATE INDEX verdicts_host_project ON verdicts (host, project, order_us);"
    "CREATE INDEX verdicts_project ON verdicts (project, order_us);"
    "CREATE INDEX change_points_cell ON change_points (host, ref, cell_key, order_us);"
    "CREATE INDEX tasks_claim ON tasks ((CASE WHEN kind = 'run' THEN 0 ELSE 1 END), id);"
    "CREATE INDEX ab_docs_head_only ON ab_docs (head_commit, seq);"
    "CREATE INDEX ab_docs_host ON ab_docs (host, seq);"
    "CREATE INDEX ab_docs_project ON ab_docs (project, seq);"
    "CREATE TABLE aggregates ("
    " host_id INTEGER NOT NULL REFERENCES hosts (id),"
    " ref TEXT NOT NULL,"
    " cell_id INTEGER NOT NULL REFERENCES cells (id),"
    " period TEXT NOT NULL CHECK (period IN ('day', 'week')),"
    " start_us INTEGER NOT NULL," /* UTC midnight; a week starts on Monday */
    " project_id INTEGER NOT NULL REFERENCES projects (id),"
    " n INTEGER NOT NULL,"
    " min REAL NOT NULL,"
    " median REAL NOT NULL,"
    " max REAL NOT NULL,"
    " PRIMARY KEY (host_id, ref, cell_id, period, start_us, project_id)) WITHOUT ROWID;",
    /* 8: every run's order filled in (store_backfills[7] first, in transactions of its own
     * until none is left: a migration killed half-way resumes where it stopped), then the
     * indexes that history reads walk in commit order. */
    "UPDATE runs SET order_us = " ORDER_OF_RUN " WHERE order_us IS NULL;"
    "DROP INDEX runs_order_todo;"
    "CREATE INDEX runs_history ON runs (host_id, ref, order_us, seq);"
    "CREATE INDEX runs_history_project ON runs (host_id, ref, project_id, order_us, seq);",
    /* 9: bisections (collector/store/bisects.c): one per finding (a project's regression on
     * one platform between two measured commits, for one subject; '' for the agent's step
     * command), the job that runs it, its progress and answer; the subjects a daemon host
     * reports when it polls. */
    "CREATE TABLE bisects ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " project TEXT NOT NULL,"
    " platform_hash TEXT NOT NULL,"
    " subject TEXT NOT NULL,"
    " ref TEXT NOT NULL,"
    " good TEXT NOT NULL,"
    " bad TEXT NOT NULL,"
    " host TEXT NOT NULL,"   /* whose finding it is */
    " runner TEXT NOT NULL," /* the daemon host its job went to */
    " job_id INTEGER,"
    " cells TEXT NOT NULL,"  /* JSON: the finding's cells */
    " reason TEXT NOT NULL," /* "verdict" or "changepoint" */
    " state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),"
    " steps_done INTEGER NOT NULL,"
    " expected_steps INTEGER,"
    " range_good TEXT, range_bad TEXT, range_commits INTEGER,"
    " culprit TEXT, change REAL, change_lo REAL, change_hi REAL, cell TEXT,"
    " outcome TEXT, message TEXT,"
    " commits TEXT," /* the commits measured, space-separated */
    " answer TEXT,"  /* the agent's JSON */
    " created_at TEXT NOT NULL,"
    " updated_at TEXT NOT NULL,"
    " UNIQUE (project, platform_hash, subject, good, bad));"
    "CREATE INDEX bisects_culprit ON bisects (culprit);"
    "CREATE INDEX bisects_bad ON bisects (bad);"
    "ALTER TABLE jobs ADD COLUMN bisect TEXT;"
    "ALTER TABLE job_polls ADD COLUMN subjects TEXT;"
    "ALTER TABLE job_polls ADD COLUMN step TEXT;",
    /* 10: a task may rest (collector/store/tasks.c): a host's trends, once drawn, are not
     * claimed again before not_before_us, whatever uploads ask meanwhile; a resting task with
     * nothing asked of it (idle) stays as the mark of its last pass. The claim walks only the
     * tasks that are not idle. */
    "ALTER TABLE tasks ADD COLUMN not_before_us INTEGER;"
    "ALTER TABLE tasks ADD COLUMN idle INTEGER NOT NULL DEFAULT 0;"
    "DROP INDEX tasks_claim;"
    "CREATE INDEX tasks_claim ON tasks ((CASE WHEN kind = 'run' THEN 0 ELSE 1 END), id) "
    "WHERE idle = 0;",
    /* 11: the run's reference series packed (common/include/aw/refblob.h): what a run stored
     * from now on carries instead of the JSON text of `reference`, which the runs stored
     * before keep (readers take either; nothing is rewritten) */
    "ALTER TABLE runs ADD COLUMN reference_bin BLOB;",
};

_Static_assert(sizeof(store_sqlite_migrations) / sizeof(store_sqlite_migrations[0]) ==
                   STORE_SCHEMA_VERSION,
               "one migration per schema version");

/* ---- PostgreSQL ---- */

/* Migration N is store_pg_migrations[N - 1]; never edit one that shipped, add the next. */
const char *const store_pg_migrations[] = {
    /* 1: the initial schema; see SQLite's above for the meaning of each column */
    "CREATE TABLE projects ("
    " id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " name TEXT NOT NULL UNIQUE,"
    " created_at TEXT NOT NULL);"
    "CREATE TABLE hosts ("
    " id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " name TEXT NOT NULL UNIQUE,"
    " arch TEXT NOT NULL,"
    " cpu_model TEXT NOT NULL,"
    " platform_hash TEXT,"
    " fingerprint_id BIGINT,"
    " first_seen TEXT NOT NULL,"
    " last_seen TEXT NOT NULL);"
    "CREATE TABLE fingerprints ("
    " id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " host_id BIGINT NOT NULL REFERENCES hosts (id),"
    " hash TEXT NOT NULL,"
    " platform_hash TEXT,"
    " doc TEXT NOT NULL,"
    " first_seen TEXT NOT NULL,"
    " last_seen TEXT NOT NULL,"
    " UNIQUE (host_id, hash));"
    "CREATE TABLE commits ("
    " id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " project_id BIGINT NOT NULL REFERENCES projects (id),"
    " sha TEXT NOT NULL,"
    " commit_time TEXT,"
    " commit_time_us BIGINT,"
    " first_started_us BIGINT NOT NULL,"
    " order_us BIGINT NOT NULL,"
    " UNIQUE (project_id, sha));"
    "CREATE INDEX commits_sha ON commits (sha);"
    "CREATE TABLE runs ("
    " id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " uuid TEXT NOT NULL UNIQUE,"
    " project_id BIGINT NOT NULL REFERENCES projects (id),"
    " host_id BIGINT NOT NULL REFERENCES hosts (id),"
    " fingerprint_id BIGINT NOT NULL REFERENCES fingerprints (id),"
    " commit_id BIGINT REFERENCES commits (id),"
    " ref TEXT NOT NULL,"
    " commit_time TEXT,"
    " trigger TEXT NOT NULL,"
    " started_at TEXT NOT NULL,"
    " started_us BIGINT NOT NULL,"
    " finished_at TEXT NOT NULL,"
    " matrix_name TEXT NOT NULL,"
    " matrix_version BIGINT NOT NULL,"
    " matrix_hash TEXT NOT NULL,"
    " matrix_profile TEXT,"
    " meta TEXT,"
    " n_cells BIGINT NOT NULL,"
    " content_hash TEXT NOT NULL,"
    " received_at TEXT NOT NULL);"
    "CREATE INDEX runs_host ON runs (host_id, id);"
    "CREATE INDEX runs_host_ref ON runs (host_id, ref, id);"
    "CREATE INDEX runs_commit ON runs (commit_id, host_id);"
    "CREATE INDEX runs_project ON runs (project_id, id);"
    "CREATE TABLE cells ("
    " id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " sig TEXT NOT NULL UNIQUE,"
    " key TEXT NOT NULL,"
    " op TEXT NOT NULL,"
    " reader TEXT,"
    " subject TEXT,"
    " kernel TEXT,"
    " placement TEXT,"
    " cpu INTEGER,"
    " contender_cpu INTEGER,"
    " c BIGINT,"
    " d BIGINT NOT NULL);"
    "CREATE INDEX cells_key ON cells (key);"
    "CREATE TABLE measurements ("
    " run_id BIGINT NOT NULL REFERENCES runs (id),"
    " cell_id BIGINT NOT NULL REFERENCES cells (id),"
    " ord INTEGER NOT NULL,"
    " status TEXT NOT NULL,"
    " n BIGINT NOT NULL,"
    " batch BIGINT NOT NULL,"
    " min DOUBLE PRECISION, p50 DOUBLE PRECISION, p95 DOUBLE PRECISION,"
    " p99 DOUBLE PRECISION, max DOUBLE PRECISION, mean DOUBLE PRECISION,"
    " stddev DOUBLE PRECISION, ci_lo DOUBLE PRECISION, ci_hi DOUBLE PRECISION,"
    " baseline_ns DOUBLE PRECISION,"
    " below_resolution BOOLEAN NOT NULL,"
    " reason TEXT,"
    " PRIMARY KEY (run_id, cell_id));"
    "CREATE TABLE tokens ("
    " id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " role TEXT NOT NULL CHECK (role IN ('agent', 'ci', 'admin')),"
    " host TEXT,"
    " hash TEXT NOT NULL UNIQUE,"
    " created_at TEXT NOT NULL,"
    " revoked_at TEXT,"
    " last_used_at TEXT,"
    " CHECK ((role = 'agent') = (host IS NOT NULL)));"
    "CREATE TABLE jobs ("
    " id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " project TEXT NOT NULL,"
    " commit_sha TEXT NOT NULL,"
    " ref TEXT NOT NULL,"
    " subject TEXT,"
    " all_hosts BOOLEAN NOT NULL,"
    " created_at TEXT NOT NULL,"
    " expires_at TEXT NOT NULL,"
    " expires_us BIGINT NOT NULL,"
    " created_by BIGINT);"
    "CREATE INDEX jobs_expires ON jobs (expires_us);"
    "CREATE TABLE job_targets ("
    " job_id BIGINT NOT NULL REFERENCES jobs (id),"
    " host TEXT NOT NULL,"
    " PRIMARY KEY (job_id, host));"
    "CREATE INDEX job_targets_host ON job_targets (host, job_id);"
    "CREATE TABLE job_hosts ("
    " job_id BIGINT NOT NULL REFERENCES jobs (id),"
    " host TEXT NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN ('claimed', 'running', 'done', 'failed')),"
    " run_id TEXT,"
    " message TEXT,"
    " claimed_at TEXT NOT NULL,"
    " claimed_us BIGINT NOT NULL,"
    " updated_at TEXT NOT NULL,"
    " PRIMARY KEY (job_id, host));",
    /* 2: regression analysis (see SQLite's above) */
    "CREATE TABLE change_points ("
    " project TEXT NOT NULL,"
    " host TEXT NOT NULL,"
    " ref TEXT NOT NULL,"
    " cell_key TEXT NOT NULL,"
    " metric TEXT NOT NULL,"
    " commit_sha TEXT,"
    " run_uuid TEXT NOT NULL,"
    " order_us BIGINT NOT NULL,"
    " before DOUBLE PRECISION NOT NULL,"
    " after DOUBLE PRECISION NOT NULL,"
    " pvalue DOUBLE PRECISION NOT NULL,"
    " computed_at TEXT NOT NULL);"
    "CREATE INDEX change_points_series ON change_points (host, ref, project, cell_key, order_us);"
    "CREATE TABLE verdicts ("
    " project TEXT NOT NULL,"
    " commit_sha TEXT NOT NULL,"
    " host TEXT NOT NULL,"
    " baseline_ref TEXT NOT NULL,"
    " status TEXT NOT NULL,"
    " doc TEXT NOT NULL,"
    " order_us BIGINT NOT NULL,"
    " computed_at TEXT NOT NULL,"
    " PRIMARY KEY (project, commit_sha, host));"
    "CREATE INDEX verdicts_host ON verdicts (host, order_us);"
    "CREATE INDEX verdicts_order ON verdicts (order_us);",
    /* 3: one name per identifier, the durable queue of post-ingest tasks, the drawn charts
     * (see SQLite's above); constraints and sequences named after a column follow it */
    "ALTER TABLE runs RENAME COLUMN id TO seq;"
    "ALTER SEQUENCE runs_id_seq RENAME TO runs_seq_seq;"
    "ALTER TABLE runs RENAME COLUMN uuid TO run_id;"
    "ALTER TABLE runs RENAME CONSTRAINT runs_uuid_key TO runs_run_id_key;"
    "ALTER TABLE measurements RENAME COLUMN run_id TO run_seq;"
    "ALTER TABLE measurements RENAME CONSTRAINT measurements_run_id_fkey TO "
    "measurements_run_seq_fkey;"
    "ALTER TABLE change_points RENAME COLUMN run_uuid TO run_id;"
    "ALTER TABLE verdicts RENAME COLUMN doc TO json;"
    "CREATE TABLE tasks ("
    " id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " kind TEXT NOT NULL,"
    " project TEXT NOT NULL,"
    " commit_sha TEXT NOT NULL,"
    " host TEXT NOT NULL,"
    " ref TEXT NOT NULL,"
    " generation BIGINT NOT NULL,"
    " attempts INTEGER NOT NULL,"
    " max_attempts INTEGER,"
    " owner TEXT,"
    " claimed_at TEXT,"
    " claimed_us BIGINT,"
    " lease_us BIGINT,"
    " last_error TEXT,"
    " enqueued_at TEXT NOT NULL,"
    " UNIQUE (kind, project, commit_sha, host, ref));"
    "CREATE TABLE charts ("
    " path TEXT PRIMARY KEY,"
    " content_type TEXT NOT NULL,"
    " hash TEXT NOT NULL,"
    " updated_at TEXT NOT NULL,"
    " data BYTEA NOT NULL);",
    /* 4: the run's reference series (a document's "reference" object; NULL: none) */
    "ALTER TABLE runs ADD COLUMN reference TEXT;",
    /* 5: confirmation: the run whose suspects a run re-measures (a document's
     * "confirmation_of"; NULL: a first run) and the re-measurements a first run's agent makes
     * itself ("confirm"; NULL: none) */
    "ALTER TABLE runs ADD COLUMN confirmation_of TEXT;"
    "ALTER TABLE runs ADD COLUMN confirm BIGINT;"
    /* a confirmation job: what it re-measures (JSON) and the run it confirms; the hosts
     * that poll for jobs (daemon hosts, which the collector queues confirmations for) */
    "ALTER TABLE jobs ADD COLUMN confirm TEXT;"
    "ALTER TABLE jobs ADD COLUMN confirmation_of TEXT;"
    "CREATE INDEX jobs_confirmation_of ON jobs (confirmation_of);"
    "CREATE TABLE job_polls (host TEXT PRIMARY KEY, polled_us BIGINT NOT NULL);",
    /* 6: interleaved A/B documents (atomwatch.ab/1): the document as uploaded and the
     * collector's judgment of it, found by id and by (project, head commit) */
    "CREATE TABLE ab_docs ("
    " seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " ab_id TEXT NOT NULL UNIQUE,"
    " project TEXT NOT NULL,"
    " host TEXT NOT NULL,"
    " subject TEXT NOT NULL,"
    " base_commit TEXT NOT NULL,"
    " head_commit TEXT NOT NULL,"
    " ref TEXT,"
    " aa INTEGER NOT NULL,"
    " verdict TEXT NOT NULL,"
    " content_hash TEXT NOT NULL,"
    " received_at TEXT NOT NULL,"
    " judgment TEXT NOT NULL,"
    " doc TEXT NOT NULL);"
    "CREATE INDEX ab_docs_head ON ab_docs (project, head_commit, seq);"
    /* an A/B job (atomwatch-ci trigger --ab): the base commit; NULL for a run */
    "ALTER TABLE jobs ADD COLUMN ab_base TEXT;",
    /* 7: a history read in bounded time (see SQLite's above) */
    "ALTER TABLE runs ADD COLUMN order_us BIGINT;"
    "ALTER TABLE commits ADD COLUMN prev_order_us BIGINT;"
    "CREATE INDEX runs_order_todo ON runs (seq) WHERE order_us IS NULL;"
    "DROP INDEX runs_commit;"
    "CREATE INDEX runs_commit ON runs (commit_id, host_id, seq);"
    "CREATE INDEX runs_commit_seq ON runs (commit_id, seq);"
    "CREATE INDEX runs_started ON runs (started_us);"
    "CREATE INDEX verdicts_commit ON verdicts (commit_sha, order_us);"
    "CREATE INDEX verdicts_host_project ON verdicts (host, project, order_us);"
    "CREATE INDEX verdicts_project ON verdicts (project, order_us);"
    "CREATE INDEX change_points_cell ON change_points (host, ref, cell_key, order_us);"
    "CREATE INDEX tasks_claim ON tasks ((CASE WHEN kind = 'run' THEN 0 ELSE 1 END), id);"
    "CREATE INDEX ab_docs_head_only ON ab_docs (head_commit, seq);"
    "CREATE INDEX ab_docs_host ON ab_docs (host, seq);"
    "CREATE INDEX ab_docs_project ON ab_docs (project, seq);"
    "CREATE TABLE aggregates ("
    " host_id BIGINT NOT NULL REFERENCES hosts (id),"
    " ref TEXT NOT NULL,"
    " cell_id BIGINT NOT NULL REFERENCES cells (id),"
    " period TEXT NOT NULL CHECK (period IN ('day', 'week')),"
    " start_us BIGINT NOT NULL,"
    " project_id BIGINT NOT NULL REFERENCES projects (id),"
    " n BIGINT NOT NULL,"
    " min DOUBLE PRECISION NOT NULL,"
    " median DOUBLE PRECISION NOT NULL,"
    " max DOUBLE PRECISION NOT NULL,"
    " PRIMARY KEY (host_id, ref, cell_id, period, start_us, project_id));",
    /* 8: every run's order filled in, then NOT NULL and the history's indexes (see SQLite's
     * above); the table locked against writes first, so that no run of an older collector
     * slips in between the last update and the constraint */
    "LOCK TABLE runs IN SHARE ROW EXCLUSIVE MODE;"
    "UPDATE runs SET order_us = " ORDER_OF_RUN " WHERE order_us IS NULL;"
    "DROP INDEX runs_order_todo;"
    "ALTER TABLE runs ALTER COLUMN order_us SET NOT NULL;"
    "CREATE INDEX runs_history ON runs (host_id, ref, order_us, seq);"
    "CREATE INDEX runs_history_project ON runs (host_id, ref, project_id, order_us, seq);",
    /* 9: bisections (see SQLite's above) */
    "CREATE TABLE bisects ("
    " id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " project TEXT NOT NULL,"
    " platform_hash TEXT NOT NULL,"
    " subject TEXT NOT NULL,"
    " ref TEXT NOT NULL,"
    " good TEXT NOT NULL,"
    " bad TEXT NOT NULL,"
    " host TEXT NOT NULL,"
    " runner TEXT NOT NULL,"
    " job_id BIGINT,"
    " cells TEXT NOT NULL,"
    " reason TEXT NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),"
    " steps_done INTEGER NOT NULL,"
    " expected_steps INTEGER,"
    " range_good TEXT, range_bad TEXT, range_commits BIGINT,"
    " culprit TEXT, change DOUBLE PRECISION, change_lo DOUBLE PRECISION,"
    " change_hi DOUBLE PRECISION, cell TEXT,"
    " outcome TEXT, message TEXT,"
    " commits TEXT,"
    " answer TEXT,"
    " created_at TEXT NOT NULL,"
    " updated_at TEXT NOT NULL,"
    " UNIQUE (project, platform_hash, subject, good, bad));"
    "CREATE INDEX bisects_culprit ON bisects (culprit);"
    "CREATE INDEX bisects_bad ON bisects (bad);"
    "ALTER TABLE jobs ADD COLUMN bisect TEXT;"
    "ALTER TABLE job_polls ADD COLUMN subjects TEXT;"
    "ALTER TABLE job_polls ADD COLUMN step TEXT;",
    /* 10: resting tasks (see SQLite's above) */
    "ALTER TABLE tasks ADD COLUMN not_before_us BIGINT;"
    "ALTER TABLE tasks ADD COLUMN idle INTEGER NOT NULL DEFAULT 0;"
    "DROP INDEX tasks_claim;"
    "CREATE INDEX tasks_claim ON tasks ((CASE WHEN kind = 'run' THEN 0 ELSE 1 END), id) "
    "WHERE idle = 0;",
    /* 11: packed reference series (see SQLite's above) */
    "ALTER TABLE runs ADD COLUMN reference_bin BYTEA;",
};

_Static_assert(sizeof(store_pg_migrations) / sizeof(store_pg_migrations[0]) == STORE_SCHEMA_VERSION,
               "one migration per schema version");

/* ---- both ---- */

/* Statements a migration runs before its script, again and again, each time in a transaction
 * of its own, until it changes no row (?1: the rows of one pass): long work a process killed
 * half-way resumes, since the migration's version is recorded only after its script. */
const char *const store_backfills[STORE_SCHEMA_VERSION] = {
    [8 - 1] = "UPDATE runs SET order_us = " ORDER_OF_RUN " WHERE seq IN (SELECT seq FROM runs "
              "WHERE order_us IS NULL ORDER BY seq LIMIT ?1)",
};
