/* The collector's configuration: defaults, every key of configs/collector.yaml, and errors that
 * point at file:line:col; the listen-address and size parsers. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"

/* Parses `text`; returns the error message (caller frees) or NULL on success. */
static char *parse(struct aw_collector_config *c, const char *text)
{
	char *err = NULL;
	int rc;

	aw_config_defaults(c);
	rc = aw_config_parse(c, text, strlen(text), "collector.yaml", &err);
	if (!rc) {
		assert_null(err);
		return NULL;
	}
	assert_int_equal(rc, -EINVAL);
	assert_non_null(err);
	return err;
}

static void expect_error(const char *text, const char *want)
{
	struct aw_collector_config c;
	char *err = parse(&c, text);

	assert_non_null(err);
	if (strcmp(err, want))
		fail_msg("got '%s', want '%s'", err, want);
	free(err);
	aw_config_release(&c);
}

static void test_defaults_and_full_file(void **state)
{
	struct aw_collector_config c;
	const char *text = "# every key\n"
	                   "listen: 127.0.0.1:9090\n"
	                   "db: postgres://aw@db/aw\n"
	                   "data_dir: /srv/aw\n"
	                   "log_level: debug\n"
	                   "http:\n"
	                   "  threads: 8\n"
	                   "  max_body: 16MiB\n"
	                   "  max_buffered: 1GiB\n"
	                   "  max_connections: 100\n"
	                   "  max_connections_per_client: 10\n"
	                   "  timeout: 2m\n"
	                   "  request_timeout: 30s\n"
	                   "  drain_timeout: 1500ms\n"
	                   "auth:\n"
	                   "  read_requires_token: true\n"
	                   "ingest:\n"
	                   "  max_cells: 1000\n"
	                   "  batch_max: 16\n"
	                   "  queue_max_cells: 100000\n"
	                   "  writers: 3\n"
	                   "store:\n"
	                   "  pool: 5\n"
	                   "  sqlite_synchronous: normal\n"
	                   "  busy_timeout: 2500ms\n"
	                   "  sqlite_cache: 256KiB\n"
	                   "jobs:\n"
	                   "  max_wait: 60s\n"
	                   "  recheck: 500ms\n"
	                   "  reclaim_after: 5m\n"
	                   "  default_ttl: 1h\n"
	                   "  max_ttl: 48h\n";

	(void)state;
	aw_config_defaults(&c);
	assert_int_equal(c.max_body, 8u << 20);
	assert_int_equal(c.jobs_reclaim_ms, 60000);
	assert_true(c.sqlite_sync_full);
	assert_false(c.read_requires_token);
	assert_null(parse(&c, text));
	assert_string_equal(c.listen, "127.0.0.1:9090");
	assert_string_equal(c.db, "postgres://aw@db/aw");
	assert_string_equal(c.data_dir, "/srv/aw");
	assert_int_equal(c.log_level, AW_LOG_DEBUG);
	assert_int_equal(c.http_threads, 8);
	assert_int_equal(c.max_body, 16u << 20);
	assert_int_equal(c.max_buffered, 1u << 30);
	assert_int_equal(c.max_connections, 100);
	assert_int_equal(c.max_per_client, 10);
	assert_int_equal(c.http_timeout_s, 120);
	assert_int_equal(c.request_timeout_ms, 30000);
	assert_int_equal(c.busy_timeout_ms, 2500);
	assert_int_equal(c.sqlite_cache, 256u << 10);
	assert_int_equal(c.drain_timeout_ms, 1500);
	assert_true(c.read_requires_token);
	assert_int_equal(c.max_cells, 1000);
	assert_int_equal(c.batch_max, 16);
	assert_int_equal(c.queue_max_cells, 100000);
	assert_int_equal(c.writers, 3);
	assert_int_equal(c.pool_size, 5);
	assert_false(c.sqlite_sync_full);
	assert_int_equal(c.jobs_max_wait_ms, 60000);
	assert_int_equal(c.jobs_recheck_ms, 500);
	assert_int_equal(c.jobs_reclaim_ms, 300000);
	assert_int_equal(c.jobs_default_ttl_ms, 3600000);
	assert_int_equal(c.jobs_max_ttl_ms, 48 * 3600000);
	aw_config_release(&c);
}

static void test_finish(void **state)
{
	struct aw_collector_config c;

	(void)state;
	assert_null(parse(&c, "data_dir: /tmp/x\n"));
	assert_int_equal(aw_config_finish(&c), 0);
	assert_string_equal(c.db, "sqlite:/tmp/x/atomwatch.db");
	assert_string_equal(c.listen, "0.0.0.0:8080");
	aw_config_release(&c);
	assert_null(parse(&c, ""));
	assert_int_equal(aw_config_finish(&c), 0);
	assert_string_equal(c.db, "sqlite:/var/lib/atomwatch/atomwatch.db");
	aw_config_release(&c);
}

static void test_errors(void **state)
{
	(void)state;
	expect_error("listen: a\nport: 8080\n", "collector.yaml:2:1: unknown key 'port'");
	expect_error("http:\n  threads: 4\n  thread: 2\n",
	             "collector.yaml:3:3: unknown key 'http.thread'");
	expect_error("http:\n  threads: many\n",
	             "collector.yaml:2:12: 'http.threads' must be a whole number, not 'many'");
	expect_error("http:\n  threads: 0\n",
	             "collector.yaml:2:12: 'http.threads' must be between 1 and 256");
	expect_error("http:\n  max_body: 8 furlongs\n",
	             "collector.yaml:2:13: 'http.max_body' must be a size such as 8MiB, not '8 "
	             "furlongs'");
	expect_error("auth:\n  read_requires_token: maybe\n",
	             "collector.yaml:2:24: 'auth.read_requires_token' must be true or false, not "
	             "'maybe'");
	expect_error("store:\n  sqlite_synchronous: off\n",
	             "collector.yaml:2:23: 'store.sqlite_synchronous' must be full or normal, not "
	             "'off'");
	expect_error("jobs:\n  recheck: soon\n",
	             "collector.yaml:2:12: 'jobs.recheck' must be a duration such as 30s, not "
	             "'soon'");
	expect_error("http: 4\n", "collector.yaml:1:7: 'http' must be a mapping");
	expect_error("listen:\n  - a\n", "collector.yaml:2:3: 'listen' must be a single value");
	expect_error("- a\n", "collector.yaml:1:1: the file must be a mapping");
	expect_error("listen: \"\"\n", "collector.yaml:1:9: 'listen' must not be empty");
	expect_error("log_level: loud\n",
	             "collector.yaml:1:12: 'log_level' must be error, warning, info or debug, "
	             "not 'loud'");
	expect_error("listen: [a\n", "collector.yaml:2:1: did not find expected ',' or ']'");
	expect_error("http:\n  auth:\n    x: 1\n", "collector.yaml:2:3: unknown key 'http.auth'");
}

static void test_load_file(void **state)
{
	struct aw_collector_config c;
	char path[] = "/tmp/aw-config-XXXXXX";
	char *err = NULL;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "ingest:\n  batch_max: x\n", 23), 23);
	close(fd);
	aw_config_defaults(&c);
	assert_int_equal(aw_config_load(&c, path, &err), -EINVAL);
	assert_non_null(strstr(err, ":2:14: 'ingest.batch_max' must be a whole number"));
	assert_int_equal(strncmp(err, path, strlen(path)), 0);
	free(err);
	err = NULL;
	unlink(path);
	assert_int_equal(aw_config_load(&c, path, &err), -ENOENT);
	assert_non_null(strstr(err, "cannot open"));
	free(err);
	aw_config_release(&c);
}

static void test_listen(void **state)
{
	char host[64], *err = NULL;
	unsigned port;

	(void)state;
	assert_int_equal(aw_parse_listen("127.0.0.1:8080", host, sizeof(host), &port, NULL), 0);
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(port, 8080);
	assert_int_equal(aw_parse_listen(":0", host, sizeof(host), &port, NULL), 0);
	assert_string_equal(host, "");
	assert_int_equal(port, 0);
	assert_int_equal(aw_parse_listen("[::1]:9", host, sizeof(host), &port, NULL), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(port, 9);
	assert_int_equal(aw_parse_listen("localhost:65535", host, sizeof(host), &port, NULL), 0);
	assert_int_equal(aw_parse_listen("localhost:65536", host, sizeof(host), &port, &err),
	                 -EINVAL);
	assert_string_equal(err, "listen address 'localhost:65536' has a bad port");
	assert_int_equal(aw_parse_listen("::1:80", host, sizeof(host), &port, &err), -EINVAL);
	assert_int_equal(aw_parse_listen("8080", host, sizeof(host), &port, &err), -EINVAL);
	assert_int_equal(aw_parse_listen("[::1]8080", host, sizeof(host), &port, &err), -EINVAL);
	assert_int_equal(aw_parse_listen("h:", host, sizeof(host), &port, &err), -EINVAL);
	assert_int_equal(aw_parse_listen("", host, sizeof(host), &port, &err), -EINVAL);
	free(err);
}

static void test_sizes(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(aw_parse_size("8MiB", &v), 0);
	assert_int_equal(v, 8u << 20);
	assert_int_equal(aw_parse_size("512KiB", &v), 0);
	assert_int_equal(v, 512u << 10);
	assert_int_equal(aw_parse_size("64 MB", &v), 0);
	assert_int_equal(v, 64000000);
	assert_int_equal(aw_parse_size("100", &v), 0);
	assert_int_equal(v, 100);
	assert_int_equal(aw_parse_size("1GiB", &v), 0);
	assert_int_equal(v, 1u << 30);
	assert_int_equal(aw_parse_size("MiB", &v), -EINVAL);
	assert_int_equal(aw_parse_size("8 MiBs", &v), -EINVAL);
	assert_int_equal(aw_parse_size("-1", &v), -EINVAL);
	assert_int_equal(aw_parse_size("99999999999999999999", &v), -EINVAL);
}

/* The keys of earlier releases (render.*): read as the postingest.* keys they became, each
 * counted (and warned about, naming file:line:col). */
static void test_render_keys(void **state)
{
	struct aw_collector_config c;

	(void)state;
	aw_config_defaults(&c);
	assert_int_equal(c.postingest_workers, 2);
	assert_int_equal(c.chart_queue_max, 1024);
	assert_null(c.gnuplot);
	assert_int_equal(c.chart_timeout_ms, 20000);
	assert_int_equal(c.deprecated_keys, 0);
	assert_null(parse(&c, "render:\n  workers: 0\n  queue: 10\n  gnuplot: /opt/gp\n"
	                      "  timeout: 5s\n"));
	assert_int_equal(c.postingest_workers, 0);
	assert_int_equal(c.chart_queue_max, 10);
	assert_string_equal(c.gnuplot, "/opt/gp");
	assert_int_equal(c.chart_timeout_ms, 5000);
	assert_int_equal(c.deprecated_keys, 4);
	assert_true(c.charts); /* render.workers 0 no longer means "no verdicts" by itself */
	aw_config_release(&c);
	expect_error("render:\n  workers: 65\n",
	             "collector.yaml:2:12: 'render.workers' must be between 0 and 64");
	expect_error("render:\n  queue: 0\n",
	             "collector.yaml:2:10: 'render.queue' must be between 1 and 1000000");
	expect_error("http:\n  max_connections_per_client: 0\n",
	             "collector.yaml:2:31: 'http.max_connections_per_client' must be between 1 and "
	             "100000");
	expect_error("http:\n  request_timeout: 500ms\n",
	             "collector.yaml:2:20: 'http.request_timeout' must be between 1000 and 3600000 "
	             "ms");
	expect_error(
	    "store:\n  busy_timeout: forever\n",
	    "collector.yaml:2:17: 'store.busy_timeout' must be a duration such as 30s, not "
	    "'forever'");
	expect_error("store:\n  sqlite_cache: 4KiB\n",
	             "collector.yaml:2:17: 'store.sqlite_cache' must be between 65536 and "
	             "17179869184 bytes");
	expect_error("render:\n  timeout: 1ms\n",
	             "collector.yaml:2:12: 'render.timeout' must be between 1000 and 600000 ms");
	expect_error("render:\n  charts: off\n", "collector.yaml:2:3: unknown key 'render.charts'");
}

static void test_postingest_keys(void **state)
{
	struct aw_collector_config c;

	(void)state;
	aw_config_defaults(&c);
	assert_true(c.charts);
	assert_int_equal(c.task_lease_ms, 600000);
	assert_int_equal(c.task_poll_ms, 500);
	assert_int_equal(c.task_attempts, 5);
	assert_int_equal(c.trends_interval_ms, 30000);
	assert_int_equal(c.chart_cache_bytes, UINT64_C(1) << 30);
	assert_null(parse(&c, "postingest:\n  workers: 3\n  charts: off\n  queue: 20\n"
	                      "  gnuplot: /opt/gp\n  timeout: 7s\n  lease: 2m\n  poll: 50ms\n"
	                      "  attempts: 2\n  chart_cache: 64MiB\n  trends_interval: 0\n"));
	assert_int_equal(c.postingest_workers, 3);
	assert_false(c.charts);
	assert_int_equal(c.chart_queue_max, 20);
	assert_string_equal(c.gnuplot, "/opt/gp");
	assert_int_equal(c.chart_timeout_ms, 7000);
	assert_int_equal(c.task_lease_ms, 120000);
	assert_int_equal(c.task_poll_ms, 50);
	assert_int_equal(c.task_attempts, 2);
	assert_int_equal(c.trends_interval_ms, 0);
	assert_int_equal(c.chart_cache_bytes, 64u << 20);
	assert_int_equal(c.deprecated_keys, 0);
	aw_config_release(&c);
	/* an old and a new name in one file: the later wins, as for any key written twice */
	assert_null(parse(&c, "postingest:\n  workers: 3\nrender:\n  workers: 1\n"));
	assert_int_equal(c.postingest_workers, 1);
	assert_int_equal(c.deprecated_keys, 1);
	aw_config_release(&c);
	expect_error("postingest:\n  poll: 1ms\n",
	             "collector.yaml:2:9: 'postingest.poll' must be between 10 and 60000 ms");
	expect_error("postingest:\n  attempts: 0\n",
	             "collector.yaml:2:13: 'postingest.attempts' must be between 1 and 100");
	expect_error("postingest:\n  chart_cache: 1KiB\n",
	             "collector.yaml:2:16: 'postingest.chart_cache' must be between 1048576 and "
	             "17592186044416 bytes");
	expect_error("postingest:\n  trends_interval: 25h\n",
	             "collector.yaml:2:20: 'postingest.trends_interval' must be between 0 and "
	             "86400000 ms");
	expect_error("postingest:\n  trends_interval: soon\n",
	             "collector.yaml:2:20: 'postingest.trends_interval' must be a duration such as "
	             "30s, not 'soon'");
	expect_error("postingest:\n  charts: maybe\n",
	             "collector.yaml:2:11: 'postingest.charts' must be true or false, not 'maybe'");
}

#define F(field) offsetof(struct aw_collector_config, field)

/* The double at `offset` of a config read from `yaml` over the defaults. */
static double ratio_read(const char *yaml, size_t offset)
{
	struct aw_collector_config c;
	double v;

	aw_config_defaults(&c);
	assert_null(parse(&c, yaml));
	memcpy(&v, (const char *)&c + offset, sizeof(v));
	aw_config_release(&c);
	return v;
}

/* detection.confirm_runs, confirm_budget, level_share, screen_noise and confirm_jobs:
 * defaults, values, ranges; detection.suspect_p, retired, still reads (a config of before
 * loads) and counts as a deprecated key */
static void test_confirm_keys(void **state)
{
	struct aw_collector_config c;

	(void)state;
	aw_config_defaults(&c);
	assert_int_equal(c.confirm_runs, 2);
	assert_int_equal(c.confirm_jobs, 3);
	assert_null(parse(&c, "detection:\n  confirm_runs: 3\n  confirm_jobs: 0\n"));
	assert_int_equal(c.confirm_runs, 3);
	assert_int_equal(c.confirm_jobs, 0);
	aw_config_release(&c);
	expect_error("detection:\n  confirm_runs: 0\n",
	             "collector.yaml:2:17: 'detection.confirm_runs' must be between 1 and 16");
	expect_error(
	    "detection:\n  confirm_jobs: -1\n",
	    "collector.yaml:2:17: 'detection.confirm_jobs' must be a whole number, not '-1'");
	expect_error("detection:\n  confirm_jobs: 17\n",
	             "collector.yaml:2:17: 'detection.confirm_jobs' must be between 0 and 16");
	aw_config_defaults(&c);
	assert_int_equal(c.confirm_budget, 10);
	assert_true(c.level_share == 0.20);
	assert_true(c.screen_noise == 0.01);
	assert_null(parse(&c, "detection:\n  confirm_budget: 4\n  level_share: 30%\n"));
	assert_int_equal(c.confirm_budget, 4);
	assert_true(fabs(c.level_share - 0.30) < 1e-12);
	assert_int_equal(c.deprecated_keys, 0);
	aw_config_release(&c);
	expect_error("detection:\n  confirm_budget: 0\n",
	             "collector.yaml:2:19: 'detection.confirm_budget' must be between 1 and 100");
	expect_error("detection:\n  confirm_budget: many\n",
	             "collector.yaml:2:19: 'detection.confirm_budget' must be a whole number, not "
	             "'many'");
	expect_error("detection:\n  level_share: 0.9\n",
	             "collector.yaml:2:16: 'detection.level_share' must be a fraction in (0, 0.5] "
	             "such as 5% or 0.05, not '0.9'");
	assert_null(parse(&c, "detection:\n  suspect_p: 1%\n"));
	assert_int_equal(c.deprecated_keys, 1);
	aw_config_release(&c);
	expect_error("detection:\n  suspect_p: 0.9\n",
	             "collector.yaml:2:14: 'detection.suspect_p' must be a fraction in (0, 0.5] "
	             "such as 5% or 0.05, not '0.9'");
	expect_error("detection:\n  suspect_p: often\n",
	             "collector.yaml:2:14: 'detection.suspect_p' must be a fraction in (0, 0.5] "
	             "such as 5% or 0.05, not 'often'");
	assert_true(ratio_read("detection:\n  screen_noise: 0\n", F(screen_noise)) == 0);
	assert_true(fabs(ratio_read("detection:\n  screen_noise: 2%\n", F(screen_noise)) - 0.02) <
	            1e-12);
	expect_error("detection:\n  screen_noise: -1%\n",
	             "collector.yaml:2:17: 'detection.screen_noise' must be 0 or a fraction in "
	             "(0, 0.5] such as 1% or 0.01, not '-1%'");
	expect_error("detection:\n  screen_noise: 60%\n",
	             "collector.yaml:2:17: 'detection.screen_noise' must be 0 or a fraction in "
	             "(0, 0.5] such as 1% or 0.01, not '60%'");
}

/* retention: off by default; on with raw_days, keeping detection.history or the trend window's
 * 100 runs, whichever is more, unless keep_runs says; a window of 0, or fewer runs kept than
 * detection reads (whichever section comes first), refused where the key is. */
static void test_retention_keys(void **state)
{
	struct aw_collector_config c;

	(void)state;
	aw_config_defaults(&c);
	assert_int_equal(c.retention_raw_days, 0);
	assert_int_equal(c.retention_interval_ms, 3600000);
	assert_int_equal(aw_config_finish(&c), 0);
	assert_int_equal(c.retention_keep_runs, 0);
	aw_config_release(&c);
	assert_null(parse(&c, "retention:\n  raw_days: 90\n"));
	assert_int_equal(aw_config_finish(&c), 0);
	assert_int_equal(c.retention_raw_days, 90);
	assert_int_equal(c.retention_keep_runs, 100);
	aw_config_release(&c);
	assert_null(parse(&c, "retention:\n  raw_days: 30\ndetection:\n  history: 250\n"));
	assert_int_equal(aw_config_finish(&c), 0);
	assert_int_equal(c.retention_keep_runs, 250);
	aw_config_release(&c);
	assert_null(parse(&c, "retention:\n  raw_days: 7\n  keep_runs: 40\n  interval: 6h\n"));
	assert_int_equal(aw_config_finish(&c), 0);
	assert_int_equal(c.retention_keep_runs, 40);
	assert_int_equal(c.retention_interval_ms, 6 * 3600000);
	aw_config_release(&c);
	expect_error(
	    "retention:\n  raw_days: 0\n",
	    "collector.yaml:2:13: 'retention.raw_days' is 0, a window that keeps no run: "
	    "give the days every run is kept (1 or more), or leave 'retention' out to keep "
	    "them all");
	expect_error("retention:\n  raw_days: 30\n  keep_runs: 20\n",
	             "collector.yaml:3:14: 'retention.keep_runs' (20) is shorter than "
	             "'detection.history' (40): the verdicts' baseline and the change points read "
	             "that many runs of each host and ref");
	expect_error("retention:\n  raw_days: 30\n  keep_runs: 50\ndetection:\n  history: 60\n",
	             "collector.yaml:3:14: 'retention.keep_runs' (50) is shorter than "
	             "'detection.history' (60): the verdicts' baseline and the change points read "
	             "that many runs of each host and ref");
	expect_error("detection:\n  window: 80\n  history: 60\nretention:\n  raw_days: 30\n"
	             "  keep_runs: 70\n",
	             "collector.yaml:6:14: 'retention.keep_runs' (70) is shorter than "
	             "'detection.window' (80): the verdicts' baseline and the change points read "
	             "that many runs of each host and ref");
	expect_error("retention:\n  keep_runs: 200\n",
	             "collector.yaml:2:14: 'retention.keep_runs' needs 'retention.raw_days', which "
	             "turns retention on");
	expect_error(
	    "retention:\n  raw_days: 30\n  interval: 0s\n",
	    "collector.yaml:3:13: 'retention.interval' must be between 60000 and 604800000 "
	    "ms");
	expect_error("retention:\n  raw_days: a year\n",
	             "collector.yaml:2:13: 'retention.raw_days' must be a whole number, not 'a "
	             "year'");
	expect_error("retention:\n  raw_days: 36501\n",
	             "collector.yaml:2:13: 'retention.raw_days' must be between 0 and 36500");
	expect_error("retention:\n  raw_weeks: 3\n",
	             "collector.yaml:2:3: unknown key 'retention.raw_weeks'");
}

/* The shipped configs/collector.yaml reads without errors or deprecated keys, and its
 * postingest values are the defaults it says they are. */
static void test_shipped_file(void **state)
{
	struct aw_collector_config c, d;
	const char *src = getenv("AW_SOURCE_DIR");
	char path[4096], *err = NULL;

	(void)state;
	if (!src)
		skip();
	snprintf(path, sizeof(path), "%s/configs/collector.yaml", src);
	aw_config_defaults(&c);
	aw_config_defaults(&d);
	assert_int_equal(aw_config_load(&c, path, &err), 0);
	assert_null(err);
	assert_int_equal(c.deprecated_keys, 0);
	assert_int_equal(c.postingest_workers, d.postingest_workers);
	assert_int_equal(c.charts, d.charts);
	assert_int_equal(c.chart_queue_max, d.chart_queue_max);
	assert_int_equal(c.chart_timeout_ms, d.chart_timeout_ms);
	assert_int_equal(c.task_lease_ms, d.task_lease_ms);
	assert_int_equal(c.task_poll_ms, d.task_poll_ms);
	assert_int_equal(c.task_attempts, d.task_attempts);
	assert_int_equal(c.trends_interval_ms, d.trends_interval_ms);
	assert_int_equal(c.chart_cache_bytes, d.chart_cache_bytes);
	assert_int_equal(c.max_connections, d.max_connections);
	assert_int_equal(c.max_per_client, d.max_per_client);
	assert_int_equal(c.request_timeout_ms, d.request_timeout_ms);
	assert_int_equal(c.busy_timeout_ms, d.busy_timeout_ms);
	assert_int_equal(c.sqlite_cache, d.sqlite_cache);
	aw_config_release(&c);
	aw_config_release(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults_and_full_file),
	    cmocka_unit_test(test_finish),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_load_file),
	    cmocka_unit_test(test_listen),
	    cmocka_unit_test(test_sizes),
	    cmocka_unit_test(test_render_keys),
	    cmocka_unit_test(test_postingest_keys),
	    cmocka_unit_test(test_confirm_keys),
	    cmocka_unit_test(test_retention_keys),
	    cmocka_unit_test(test_shipped_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
