/* The collector's configuration: defaults, configs/collector.yaml (read with libyaml; errors as
 * "file:line:col: message"; unknown keys rejected) and the small parsers its values need. */
#ifndef AW_COLLECTOR_CONFIG_H
#define AW_COLLECTOR_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aw/log.h"

/* The fewest runs of each host and ref that retention keeps by default, whatever their age:
 * the trend charts' window (AW_TREND_POINTS of draw.h). */
#define AW_RETENTION_KEEP_MIN 100

struct aw_collector_config {
	char *listen;   /* "HOST:PORT" */
	char *db;       /* database URL; NULL: sqlite:<data_dir>/atomwatch.db */
	char *data_dir; /* state directory */
	enum aw_log_level log_level;

	/* http */
	unsigned http_threads;
	uint64_t max_body;           /* bytes of one request body (413 beyond) */
	uint64_t max_buffered;       /* bytes of request bodies held at once (503 beyond) */
	unsigned max_connections;    /* open connections at once */
	unsigned max_per_client;     /* of them from one client address */
	unsigned http_timeout_s;     /* idle connection timeout */
	uint64_t request_timeout_ms; /* a request's headers and body must arrive within this
	                              * (from the connection's start or its previous reply) */
	uint64_t drain_timeout_ms;   /* how long SIGTERM waits for in-flight requests */

	/* auth */
	bool read_requires_token;

	/* ingest */
	uint64_t max_cells;
	unsigned batch_max;       /* most documents in one transaction (group commit) */
	uint64_t queue_max_cells; /* cells of documents waiting for a writer (503 beyond) */
	unsigned writers;         /* writer threads (SQLite always uses one) */

	/* store */
	unsigned pool_size;
	bool sqlite_sync_full;
	uint64_t busy_timeout_ms; /* longest wait for a database lock before 503 */
	uint64_t sqlite_cache;    /* page cache bytes of each SQLite connection */

	/* jobs */
	uint64_t jobs_max_wait_ms;
	uint64_t jobs_recheck_ms;
	uint64_t jobs_reclaim_ms;
	uint64_t jobs_default_ttl_ms;
	uint64_t jobs_max_ttl_ms;

	/* detection */
	char *baseline_ref;      /* the ref the gate compares against ("main") */
	unsigned detect_window;  /* baseline runs since the last change point, at most (30) */
	unsigned detect_history; /* earlier runs read: excursions, change points (40) */
	double detect_fdr;       /* Benjamini-Hochberg level (0.05) */
	unsigned cp_min_segment; /* fewest runs on each side of a change point (3) */
	char *thresholds_file;   /* configs/thresholds.yaml; NULL: 5% (p50) and 10% (p99) */
	unsigned confirm_runs;   /* head runs of a cell a regression needs; fewer: suspect (2) */
	double suspect_p;        /* retired: read and ignored, with a warning */
	double screen_noise;     /* least noise one head run is judged with (0.01) */
	unsigned confirm_budget; /* re-measurements an undecided cell may get (10) */
	double level_share;      /* a level this share of a history or more must not regress
	                            (0.2) */
	unsigned confirm_jobs;   /* re-measurements queued for a daemon host's suspects (3);
	                            0: none */
	double ab_threshold;     /* smallest change an A/B document reports (0.005), before the
	                          * A/A floor */

	/* postingest (the work after an upload; the render.* keys of earlier releases still
	 * work, with a warning) */
	unsigned postingest_workers; /* threads taking post-ingest tasks; 0: none here (another
	                              * collector on the database does them) */
	bool charts;                 /* false: verdicts and change points only */
	unsigned chart_queue_max;    /* charts asked for by pages waiting at most (more dropped) */
	char *gnuplot;               /* NULL: /usr/bin/gnuplot */
	uint64_t chart_timeout_ms;   /* most time one chart may take */
	uint64_t task_lease_ms;      /* a claimed task is taken over after this */
	uint64_t task_poll_ms;       /* how often idle workers look for other collectors' tasks */
	unsigned task_attempts;      /* claims of a task before it is given up */
	uint64_t trends_interval_ms; /* a host's trends redrawn at most once in this */
	uint64_t chart_cache_bytes;  /* chart files kept in the data dir */

	/* retention (off unless retention.raw_days is set): raw runs for raw_days, and the newest
	 * keep_runs of each host and ref whatever their age; older runs thinned to daily and
	 * weekly aggregates (store.h, store_retention_run()) by a task queued every interval */
	unsigned retention_raw_days;  /* 0: keep every run */
	unsigned retention_keep_runs; /* 0: the larger of detection.history and the trend
	                               * window (100) */
	uint64_t retention_interval_ms;

	unsigned deprecated_keys; /* keys read under a deprecated name (each warned about once) */
};

/* Fills every field with its default (no allocation can fail: strings stay NULL until set,
 * listen and data_dir are resolved by aw_config_finish()). */
void aw_config_defaults(struct aw_collector_config *c);

/* Reads `path` over the current values. Returns 0, or a negative errno with *err as
 * "path:line:col: message" (or naming the path when it cannot be read). */
int aw_config_load(struct aw_collector_config *c, const char *path, char **err);

/* The same from a buffer; `name` is used in error messages. */
int aw_config_parse(struct aw_collector_config *c, const char *text, size_t len, const char *name,
                    char **err);

/* Fills what is still unset from what is set (the default database lives in data_dir; the
 * runs retention keeps follow detection.history). Returns 0 or -ENOMEM. */
int aw_config_finish(struct aw_collector_config *c);

struct aw_thresholds;

/* Reads a thresholds file (configs/thresholds.yaml) into *t (release with
 * aw_thresholds_release()). Returns 0, or a negative errno with *err as
 * "path:line:col: message". */
int aw_thresholds_load(struct aw_thresholds *t, const char *path, char **err);
int aw_thresholds_parse(struct aw_thresholds *t, const char *text, size_t len, const char *name,
                        char **err);
void aw_thresholds_release(struct aw_thresholds *t);

/* "5%" or "0.05" as a fraction in [0, max]. Returns 0 or -EINVAL. */
int aw_parse_ratio(const char *s, double max, double *out);

/* Frees the strings; the struct may be reused after aw_config_defaults(). */
void aw_config_release(struct aw_collector_config *c);

/* "HOST:PORT", "[V6]:PORT" or ":PORT" (every address). host receives the address without
 * brackets ("" for every address). Returns 0 or -EINVAL with *err. */
int aw_parse_listen(const char *s, char *host, size_t host_len, unsigned *port, char **err);

/* Sizes: "8MiB", "512KiB", "1GiB", "64MB", "100kB", "65536" (bytes). Returns 0 or -EINVAL. */
int aw_parse_size(const char *s, uint64_t *out);

#endif
