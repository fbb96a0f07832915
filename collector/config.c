/* configs/collector.yaml: a table of known keys, each with a type and a range, filled from a
 * libyaml document (the only libyaml user of the collector). Every error carries the
 * file:line:col of the offending node. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "analysis.h"
#include "aw/log.h"
#include "aw/util.h"

#define CONFIG_FILE_MAX (1u << 20)

void aw_config_defaults(struct aw_collector_config *c)
{
	memset(c, 0, sizeof(*c));
	c->log_level = AW_LOG_INFO;
	c->http_threads = 4;
	c->max_body = 8u << 20;
	c->max_buffered = 256u << 20;
	c->max_connections = 1024;
	c->max_per_client = 128;
	c->http_timeout_s = 60;
	c->request_timeout_ms = 120000;
	c->drain_timeout_ms = 30000;
	c->read_requires_token = false;
	c->max_cells = 50000;
	c->batch_max = 64;
	c->queue_max_cells = 1000000;
	c->writers = 2;
	c->pool_size = 8;
	c->sqlite_sync_full = true;
	c->busy_timeout_ms = 10000;
	c->sqlite_cache = UINT64_C(1) << 20;
	c->jobs_max_wait_ms = 300000;
	c->jobs_recheck_ms = 1000;
	/* a daemon reports "running" at once: a claim with no report for a minute is one whose
	 * reply was lost (a daemon stopped as its poll was answered), and 10 min kept its job from
	 * the restarted daemon that long */
	c->jobs_reclaim_ms = 60000;
	c->jobs_default_ttl_ms = 24 * 3600000u;
	c->jobs_max_ttl_ms = 7 * 24 * 3600000u;
	c->detect_window = 30;
	c->detect_history = 40;
	c->detect_fdr = 0.05;
	c->ab_threshold = 0.005;
	c->cp_min_segment = 3;
	c->confirm_runs = 2;
	c->suspect_p = 0.20;
	c->confirm_budget = 10;
	c->level_share = 0.20;
	c->screen_noise = 0.01;
	c->confirm_jobs = 3;
	c->postingest_workers = 2;
	c->charts = true;
	c->chart_queue_max = 1024;
	c->chart_timeout_ms = 20000;
	c->task_lease_ms = 600000;
	c->trends_interval_ms = 30000;
	c->task_poll_ms = 500;
	c->task_attempts = 5;
	c->chart_cache_bytes = UINT64_C(1) << 30;
	c->retention_interval_ms = 3600000;
}

void aw_config_release(struct aw_collector_config *c)
{
	aw_freep(&c->listen);
	aw_freep(&c->db);
	aw_freep(&c->data_dir);
	aw_freep(&c->baseline_ref);
	aw_freep(&c->thresholds_file);
	aw_freep(&c->gnuplot);
}

int aw_config_finish(struct aw_collector_config *c)
{
	if (!c->listen && !(c->listen = strdup("0.0.0.0:8080")))
		return -ENOMEM;
	if (!c->data_dir && !(c->data_dir = strdup("/var/lib/atomwatch")))
		return -ENOMEM;
	if (!c->db && !(c->db = aw_asprintf("sqlite:%s/atomwatch.db", c->data_dir)))
		return -ENOMEM;
	if (c->retention_raw_days && !c->retention_keep_runs)
		c->retention_keep_runs = c->detect_history > AW_RETENTION_KEEP_MIN
		                             ? c->detect_history
		                             : AW_RETENTION_KEEP_MIN;
	return 0;
}

int aw_parse_size(const char *s, uint64_t *out)
{
	static const struct aw_unit units[] = {
	    {"", 1},           {"B", 1},           {"k", 1000},      {"kB", 1000},
	    {"KiB", 1u << 10}, {"M", 1000000},     {"MB", 1000000},  {"MiB", 1u << 20},
	    {"G", 1000000000}, {"GB", 1000000000}, {"GiB", 1u << 30}};

	return aw_parse_scaled(s, units, sizeof(units) / sizeof(units[0]), UINT64_MAX >> 31, true,
	                       out);
}

int aw_parse_listen(const char *s, char *host, size_t host_len, unsigned *port, char **err)
{
	const char *colon, *h = s;
	size_t hl;
	uint64_t p;

	if (!s || !*s)
		return aw_errorf(err, -EINVAL, "empty listen address");
	if (*s == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return aw_errorf(err, -EINVAL, "listen address '%s' must be [ADDRESS]:PORT",
			                 s);
		h = s + 1;
		hl = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || memchr(s, ':', (size_t)(colon - s)))
			return aw_errorf(err, -EINVAL,
			                 "listen address '%s' must be HOST:PORT (IPv6 in brackets)",
			                 s);
		hl = (size_t)(colon - s);
	}
	if (hl >= host_len)
		return aw_errorf(err, -EINVAL, "listen address '%s' is too long", s);
	if (aw_parse_u64(colon + 1, 65535, &p))
		return aw_errorf(err, -EINVAL, "listen address '%s' has a bad port", s);
	memcpy(host, h, hl);
	host[hl] = '\0';
	*port = (unsigned)p;
	return 0;
}

enum key_type {
	K_STRING,
	K_UINT,
	K_SIZE,
	K_DURATION,
	K_BOOL,
	K_LOG_LEVEL,
	K_SYNC,
	K_RATIO,     /* a fraction in (0, 0.5] */
	K_RATIO_ZERO /* the same or 0 (off) */
};

struct key {
	const char *section; /* NULL: top level */
	const char *name;
	enum key_type type;
	size_t offset;
	uint64_t min, max;
};

#define F(field) offsetof(struct aw_collector_config, field)

static const struct key keys[] = {
    {NULL, "listen", K_STRING, F(listen), 0, 0},
    {NULL, "db", K_STRING, F(db), 0, 0},
    {NULL, "data_dir", K_STRING, F(data_dir), 0, 0},
    {NULL, "log_level", K_LOG_LEVEL, F(log_level), 0, 0},
    {"http", "threads", K_UINT, F(http_threads), 1, 256},
    {"http", "max_body", K_SIZE, F(max_body), 1024, 1u << 30},
    {"http", "max_buffered", K_SIZE, F(max_buffered), 1u << 20, UINT64_C(64) << 30},
    {"http", "max_connections", K_UINT, F(max_connections), 4, 100000},
    {"http", "max_connections_per_client", K_UINT, F(max_per_client), 1, 100000},
    {"http", "timeout", K_DURATION, F(http_timeout_s), 1000, 3600000},
    {"http", "request_timeout", K_DURATION, F(request_timeout_ms), 1000, 3600000},
    {"http", "drain_timeout", K_DURATION, F(drain_timeout_ms), 0, 3600000},
    {"auth", "read_requires_token", K_BOOL, F(read_requires_token), 0, 0},
    {"ingest", "max_cells", K_UINT, F(max_cells), 1, 1000000},
    {"ingest", "batch_max", K_UINT, F(batch_max), 1, 10000},
    {"ingest", "queue_max_cells", K_UINT, F(queue_max_cells), 1, UINT64_C(100000000)},
    {"ingest", "writers", K_UINT, F(writers), 1, 64},
    {"store", "pool", K_UINT, F(pool_size), 1, 1024},
    {"store", "sqlite_synchronous", K_SYNC, F(sqlite_sync_full), 0, 0},
    {"store", "busy_timeout", K_DURATION, F(busy_timeout_ms), 10, 600000},
    {"store", "sqlite_cache", K_SIZE, F(sqlite_cache), 64u << 10, UINT64_C(1) << 34},
    {"jobs", "max_wait", K_DURATION, F(jobs_max_wait_ms), 0, 3600000},
    {"jobs", "recheck", K_DURATION, F(jobs_recheck_ms), 10, 60000},
    {"jobs", "reclaim_after", K_DURATION, F(jobs_reclaim_ms), 1000, UINT64_C(604800000)},
    {"jobs", "default_ttl", K_DURATION, F(jobs_default_ttl_ms), 1000, UINT64_C(31536000000)},
    {"jobs", "max_ttl", K_DURATION, F(jobs_max_ttl_ms), 1000, UINT64_C(31536000000)},
    {"detection", "baseline_ref", K_STRING, F(baseline_ref), 0, 0},
    {"detection", "window", K_UINT, F(detect_window), 2, 1000},
    {"detection", "history", K_UINT, F(detect_history), 2, 10000},
    {"detection", "fdr", K_RATIO, F(detect_fdr), 0, 0},
    {"detection", "min_segment", K_UINT, F(cp_min_segment), 2, 1000},
    {"detection", "thresholds", K_STRING, F(thresholds_file), 0, 0},
    {"detection", "confirm_runs", K_UINT, F(confirm_runs), 1, 16},
    {"detection", "suspect_p", K_RATIO, F(suspect_p), 0, 0}, /* retired: read, ignored */
    {"detection", "confirm_budget", K_UINT, F(confirm_budget), 1, 100},
    {"detection", "level_share", K_RATIO, F(level_share), 0, 0},
    {"detection", "screen_noise", K_RATIO_ZERO, F(screen_noise), 0, 0},
    {"detection", "confirm_jobs", K_UINT, F(confirm_jobs), 0, 16},
    {"detection", "ab_threshold", K_RATIO, F(ab_threshold), 0, 0},
    {"postingest", "workers", K_UINT, F(postingest_workers), 0, 64},
    {"postingest", "charts", K_BOOL, F(charts), 0, 0},
    {"postingest", "queue", K_UINT, F(chart_queue_max), 1, 1000000},
    {"postingest", "gnuplot", K_STRING, F(gnuplot), 0, 0},
    {"postingest", "timeout", K_DURATION, F(chart_timeout_ms), 1000, 600000},
    {"postingest", "lease", K_DURATION, F(task_lease_ms), 1000, UINT64_C(86400000)},
    {"postingest", "poll", K_DURATION, F(task_poll_ms), 10, 60000},
    {"postingest", "attempts", K_UINT, F(task_attempts), 1, 100},
    {"postingest", "trends_interval", K_DURATION, F(trends_interval_ms), 0, UINT64_C(86400000)},
    {"postingest", "chart_cache", K_SIZE, F(chart_cache_bytes), 1u << 20, UINT64_C(1) << 44},
    /* 0 is refused below, with a word on why (the range admits it to get there) */
    {"retention", "raw_days", K_UINT, F(retention_raw_days), 0, 36500},
    {"retention", "keep_runs", K_UINT, F(retention_keep_runs), 0, 1000000},
    {"retention", "interval", K_DURATION, F(retention_interval_ms), 60000, UINT64_C(604800000)},
    /* the names of earlier releases, when the workers were the "render workers" */
    {"render", "workers", K_UINT, F(postingest_workers), 0, 64},
    {"render", "queue", K_UINT, F(chart_queue_max), 1, 1000000},
    {"render", "gnuplot", K_STRING, F(gnuplot), 0, 0},
    {"render", "timeout", K_DURATION, F(chart_timeout_ms), 1000, 600000},
};

/* Deprecated keys, still read, and the keys they are now. */
static const struct {
	const char *old, *now;
} renamed[] = {
    {"render.workers", "postingest.workers"},
    {"render.queue", "postingest.queue"},
    {"render.gnuplot", "postingest.gnuplot"},
    {"render.timeout", "postingest.timeout"},
    /* (no longer used: the model's confirmation decides what is re-measured) */
    {"detection.suspect_p", NULL},
};

static const char *const sections[] = {"http", "auth",       "ingest", "store",    "detection",
                                       "jobs", "postingest", "render", "retention"};

/* Fields stored as unsigned int rather than uint64_t. */
static bool is_uint_field(size_t offset)
{
	return offset == F(http_threads) || offset == F(max_connections) ||
	       offset == F(max_per_client) || offset == F(http_timeout_s) ||
	       offset == F(batch_max) || offset == F(writers) || offset == F(pool_size) ||
	       offset == F(detect_window) || offset == F(detect_history) ||
	       offset == F(cp_min_segment) || offset == F(confirm_runs) ||
	       offset == F(confirm_budget) || offset == F(confirm_jobs) ||
	       offset == F(postingest_workers) || offset == F(chart_queue_max) ||
	       offset == F(task_attempts) || offset == F(retention_raw_days) ||
	       offset == F(retention_keep_runs);
}

struct loader {
	yaml_document_t *doc;
	const char *name;
	char **err;
	/* the nodes of the keys checked against others once the whole file is read */
	const yaml_node_t *raw_days, *keep_runs, *interval, *history, *window;
};

static int at(struct loader *l, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Formats "name:line:col: message" into *err; returns -EINVAL. */
static int at(struct loader *l, const yaml_node_t *n, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return aw_errorf(l->err, -EINVAL, "%s:%zu:%zu: %s", l->name, n->start_mark.line + 1,
	                 n->start_mark.column + 1, msg);
}

static int set_value(struct loader *l, struct aw_collector_config *c, const struct key *k,
                     const yaml_node_t *v, const char *path)
{
	const char *s;
	char *base = (char *)c + k->offset;
	uint64_t x = 0;

	if (v->type != YAML_SCALAR_NODE)
		return at(l, v, "'%s' must be a single value", path);
	s = (const char *)v->data.scalar.value;
	if (strlen(s) != v->data.scalar.length)
		return at(l, v, "'%s' holds a NUL byte", path);
	switch (k->type) {
	case K_STRING: {
		char *copy;

		if (!*s)
			return at(l, v, "'%s' must not be empty", path);
		copy = strdup(s);
		if (!copy)
			return aw_errorf(l->err, -ENOMEM, "out of memory");
		free(*(char **)base);
		*(char **)base = copy;
		return 0;
	}
	case K_BOOL:
		if (!strcmp(s, "true") || !strcmp(s, "yes") || !strcmp(s, "on"))
			*(bool *)base = true;
		else if (!strcmp(s, "false") || !strcmp(s, "no") || !strcmp(s, "off"))
			*(bool *)base = false;
		else
			return at(l, v, "'%s' must be true or false, not '%.32s'", path, s);
		return 0;
	case K_LOG_LEVEL: {
		static const char *const levels[] = {"error", "warning", "info", "debug"};

		for (int i = 0; i < 4; i++) {
			if (!strcmp(s, levels[i])) {
				*(enum aw_log_level *)base = (enum aw_log_level)i;
				return 0;
			}
		}
		return at(l, v, "'%s' must be error, warning, info or debug, not '%.32s'", path, s);
	}
	case K_SYNC:
		if (!strcmp(s, "full"))
			*(bool *)base = true;
		else if (!strcmp(s, "normal"))
			*(bool *)base = false;
		else
			return at(l, v, "'%s' must be full or normal, not '%.32s'", path, s);
		return 0;
	case K_RATIO:
	case K_RATIO_ZERO: {
		bool zero = k->type == K_RATIO_ZERO; /* (aw_parse_ratio() refuses negatives) */

		if (aw_parse_ratio(s, 0.5, (double *)base) || (!zero && *(double *)base == 0))
			return at(l, v,
			          "'%s' must be %sa fraction in (0, 0.5] such as %s, not '%.32s'",
			          path, zero ? "0 or " : "", zero ? "1% or 0.01" : "5% or 0.05", s);
		return 0;
	}
	case K_UINT:
		if (aw_parse_u64(s, UINT64_MAX, &x))
			return at(l, v, "'%s' must be a whole number, not '%.32s'", path, s);
		break;
	case K_SIZE:
		if (aw_parse_size(s, &x))
			return at(l, v, "'%s' must be a size such as 8MiB, not '%.32s'", path, s);
		break;
	case K_DURATION:
		if (aw_parse_duration_ms(s, &x))
			return at(l, v, "'%s' must be a duration such as 30s, not '%.32s'", path,
			          s);
		break;
	}
	if (x < k->min || x > k->max)
		return at(l, v, "'%s' must be between %llu and %llu%s", path,
		          (unsigned long long)k->min, (unsigned long long)k->max,
		          k->type == K_DURATION ? " ms"
		          : k->type == K_SIZE   ? " bytes"
		                                : "");
	if (k->offset == F(http_timeout_s))
		x /= 1000;
	if (is_uint_field(k->offset))
		*(unsigned *)base = (unsigned)x;
	else
		*(uint64_t *)base = x;
	return 0;
}

/* Keeps the node of a key that check_retention() weighs against others. */
static void remember(struct loader *l, const struct key *k, const yaml_node_t *v)
{
	if (k->offset == F(retention_raw_days))
		l->raw_days = v;
	else if (k->offset == F(retention_keep_runs))
		l->keep_runs = v;
	else if (k->offset == F(retention_interval_ms))
		l->interval = v;
	else if (k->offset == F(detect_history))
		l->history = v;
	else if (k->offset == F(detect_window))
		l->window = v;
}

/* Retention against itself and what detection reads, once the whole file is read (the sections
 * may come in any order). A retention that would thin runs the verdicts' baseline or the change
 * points still read is refused, and so is a window of 0. */
static int check_retention(struct loader *l, const struct aw_collector_config *c)
{
	unsigned needed =
	    c->detect_history > c->detect_window ? c->detect_history : c->detect_window;
	const char *what = c->detect_history >= c->detect_window ? "history" : "window";

	if (!l->raw_days && (l->keep_runs || l->interval))
		return at(l, l->keep_runs ? l->keep_runs : l->interval,
		          "'retention.%s' needs 'retention.raw_days', which turns retention on",
		          l->keep_runs ? "keep_runs" : "interval");
	if (!l->raw_days)
		return 0;
	if (!c->retention_raw_days)
		return at(
		    l, l->raw_days,
		    "'retention.raw_days' is 0, a window that keeps no run: give the days "
		    "every run is kept (1 or more), or leave 'retention' out to keep them all");
	if (l->keep_runs && c->retention_keep_runs < needed)
		return at(
		    l, l->keep_runs,
		    "'retention.keep_runs' (%u) is shorter than 'detection.%s' (%u): the "
		    "verdicts' baseline and the change points read that many runs of each host "
		    "and ref",
		    c->retention_keep_runs, what, needed);
	return 0;
}

static int load_mapping(struct loader *l, struct aw_collector_config *c, const yaml_node_t *map,
                        const char *section)
{
	yaml_node_pair_t *pair;
	int rc;

	if (map->type != YAML_MAPPING_NODE)
		return at(l, map,
		          section ? "'%s' must be a mapping" : "%sthe file must be a mapping",
		          section ? section : "");
	for (pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top; pair++) {
		yaml_node_t *kn = yaml_document_get_node(l->doc, pair->key);
		yaml_node_t *vn = yaml_document_get_node(l->doc, pair->value);
		const char *name;
		char path[96];
		size_t i;

		if (!kn || !vn || kn->type != YAML_SCALAR_NODE)
			return at(l, kn ? kn : map, "keys must be plain names");
		name = (const char *)kn->data.scalar.value;
		snprintf(path, sizeof(path), "%s%s%.48s", section ? section : "",
		         section ? "." : "", name);
		if (!section) {
			for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
				if (!strcmp(name, sections[i]))
					break;
			if (i < sizeof(sections) / sizeof(sections[0])) {
				rc = load_mapping(l, c, vn, sections[i]);
				if (rc)
					return rc;
				continue;
			}
		}
		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			if (!strcmp(name, keys[i].name) &&
			    ((!section && !keys[i].section) ||
			     (section && keys[i].section && !strcmp(section, keys[i].section))))
				break;
		}
		if (i == sizeof(keys) / sizeof(keys[0]))
			return at(l, kn, "unknown key '%s'", path);
		rc = set_value(l, c, &keys[i], vn, path);
		if (rc)
			return rc;
		remember(l, &keys[i], vn);
		for (i = 0; i < sizeof(renamed) / sizeof(renamed[0]); i++) {
			if (strcmp(path, renamed[i].old))
				continue;
			if (renamed[i].now)
				aw_warn("%s:%zu:%zu: '%s' is deprecated; use '%s'", l->name,
				        kn->start_mark.line + 1, kn->start_mark.column + 1, path,
				        renamed[i].now);
			else
				aw_warn("%s:%zu:%zu: '%s' is no longer used; it is ignored",
				        l->name, kn->start_mark.line + 1, kn->start_mark.column + 1,
				        path);
			c->deprecated_keys++;
		}
	}
	return 0;
}

/* Parses YAML text and hands its root node (when the document is not empty) to `fn`; libyaml
 * errors come back as "name:line:col: problem". */
static int with_yaml(const char *text, size_t len, const char *name, char **err,
                     int (*fn)(struct loader *l, const yaml_node_t *root, void *cls), void *cls)
{
	struct loader l = {.name = name, .err = err};
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	int rc;

	if (!yaml_parser_initialize(&parser))
		return aw_errorf(err, -ENOMEM, "out of memory");
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		rc = aw_errorf(err, -EINVAL, "%s:%zu:%zu: %s", name, parser.problem_mark.line + 1,
		               parser.problem_mark.column + 1,
		               parser.problem ? parser.problem : "cannot parse");
		yaml_parser_delete(&parser);
		return rc;
	}
	l.doc = &doc;
	root = yaml_document_get_root_node(&doc);
	rc = root ? fn(&l, root, cls) : 0; /* an empty file changes nothing */
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return rc;
}

/* Reads a whole file of at most CONFIG_FILE_MAX bytes and parses it with `parse`. */
static int with_file(const char *path, char **err,
                     int (*parse)(void *obj, const char *text, size_t len, const char *name,
                                  char **err),
                     void *obj)
{
	char *text = NULL;
	size_t len;
	int rc;

	rc = aw_read_file(path, CONFIG_FILE_MAX, &text, &len, err);
	if (rc)
		return rc;
	rc = parse(obj, text, len, path, err);
	free(text);
	return rc;
}

static int config_root(struct loader *l, const yaml_node_t *root, void *cls)
{
	int rc = load_mapping(l, cls, root, NULL);

	return rc ? rc : check_retention(l, cls);
}

int aw_config_parse(struct aw_collector_config *c, const char *text, size_t len, const char *name,
                    char **err)
{
	return with_yaml(text, len, name, err, config_root, c);
}

static int config_parse(void *obj, const char *text, size_t len, const char *name, char **err)
{
	return aw_config_parse(obj, text, len, name, err);
}

int aw_config_load(struct aw_collector_config *c, const char *path, char **err)
{
	return with_file(path, err, config_parse, c);
}

/* ---- thresholds.yaml ---- */

int aw_parse_ratio(const char *s, double max, double *out)
{
	char *end;
	double v;

	if (!s || !*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v))
		return -EINVAL;
	if (*end == '%') {
		v /= 100;
		end++;
	}
	if (*end || v < 0 || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

void aw_thresholds_release(struct aw_thresholds *t)
{
	struct aw_threshold_rule *lists[3] = {t->p50_rules, t->p99_rules, t->gate_rules};
	size_t counts[3] = {t->n_p50_rules, t->n_p99_rules, t->n_gate_rules};

	for (int k = 0; k < 3; k++) {
		for (size_t i = 0; i < counts[k]; i++) {
			free((char *)lists[k][i].op);
			free((char *)lists[k][i].reader);
			free((char *)lists[k][i].key);
		}
		free(lists[k]);
	}
	memset(t, 0, sizeof(*t));
	t->p50 = 0.05;
	t->p99 = 0.25;
	t->p99_gate = AW_GATE_WARN;
}

static int scalar_of(struct loader *l, const yaml_node_t *v, const char *what, const char **out)
{
	if (v->type != YAML_SCALAR_NODE)
		return at(l, v, "'%s' must be a single value", what);
	*out = (const char *)v->data.scalar.value;
	if (strlen(*out) != v->data.scalar.length)
		return at(l, v, "'%s' holds a NUL byte", what);
	return 0;
}

static int ratio_of(struct loader *l, const yaml_node_t *v, const char *what, double *out)
{
	const char *s = NULL;
	int rc = scalar_of(l, v, what, &s);

	if (rc)
		return rc;
	if (!strcmp(s, "off")) {
		*out = INFINITY; /* never judged regressed */
		return 0;
	}
	if (aw_parse_ratio(s, 100, out) || *out <= 0)
		return at(l, v,
		          "'%s' must be a positive fraction such as 5%% or 0.05, or off, not "
		          "'%.32s'",
		          what, s);
	return 0;
}

static int add_rule(struct aw_threshold_rule **list, size_t *n, const struct aw_threshold_rule *r)
{
	struct aw_threshold_rule *p = realloc(*list, (*n + 1) * sizeof(*p));

	if (!p)
		return -ENOMEM;
	*list = p;
	p[*n] = *r;
	/* both lists own their own copies of the patterns */
	p[*n].op = r->op ? strdup(r->op) : NULL;
	p[*n].reader = r->reader ? strdup(r->reader) : NULL;
	p[*n].key = r->key ? strdup(r->key) : NULL;
	(*n)++;
	if ((r->op && !p[*n - 1].op) || (r->reader && !p[*n - 1].reader) ||
	    (r->key && !p[*n - 1].key))
		return -ENOMEM;
	return 0;
}

static int load_rule(struct loader *l, struct aw_thresholds *t, const yaml_node_t *map,
                     size_t index)
{
	struct aw_threshold_rule r = {0};
	double p50 = NAN, p99 = NAN;
	enum aw_gate gate = AW_GATE_FAIL;
	bool has_gate = false;
	yaml_node_pair_t *pair;
	int rc = 0;

	if (map->type != YAML_MAPPING_NODE)
		return at(l, map, "rule %zu must be a mapping of op/reader/key and p50/p99/gate",
		          index);
	for (pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top; pair++) {
		yaml_node_t *kn = yaml_document_get_node(l->doc, pair->key);
		yaml_node_t *vn = yaml_document_get_node(l->doc, pair->value);
		const char *name, *s = NULL;

		if (!kn || !vn || kn->type != YAML_SCALAR_NODE)
			return at(l, kn ? kn : map, "keys must be plain names");
		name = (const char *)kn->data.scalar.value;
		if (!strcmp(name, "p50")) {
			rc = ratio_of(l, vn, "p50", &p50);
		} else if (!strcmp(name, "p99")) {
			rc = ratio_of(l, vn, "p99", &p99);
		} else if (!strcmp(name, "gate")) {
			rc = scalar_of(l, vn, "gate", &s);
			if (!rc && aw_gate_parse(s, &gate))
				rc = at(l, vn, "'gate' must be fail, warn or off, not '%.32s'", s);
			has_gate = true;
		} else if (!strcmp(name, "op") || !strcmp(name, "reader") || !strcmp(name, "key")) {
			rc = scalar_of(l, vn, name, &s);
			if (!rc && (!*s || strlen(s) > 256))
				rc = at(l, vn, "'%s' must be a pattern of 1 to 256 characters",
				        name);
			if (!rc)
				*(name[0] == 'o' ? &r.op : name[0] == 'r' ? &r.reader : &r.key) = s;
		} else {
			rc = at(l, kn,
			        "unknown key '%.48s' in rule %zu (op, reader, key, p50, p99, gate)",
			        name, index);
		}
		if (rc)
			return rc;
	}
	if (!r.op && !r.reader && !r.key)
		return at(l, map, "rule %zu matches nothing: give op, reader or key", index);
	if (isnan(p50) && isnan(p99) && !has_gate)
		return at(l, map, "rule %zu sets no threshold: give p50, p99 or gate", index);
	if (!isnan(p50)) {
		r.threshold = p50;
		rc = add_rule(&t->p50_rules, &t->n_p50_rules, &r);
	}
	if (!rc && !isnan(p99)) {
		r.threshold = p99;
		rc = add_rule(&t->p99_rules, &t->n_p99_rules, &r);
	}
	if (!rc && has_gate) {
		r.threshold = (double)gate; /* see aw_thresholds.gate_rules */
		rc = add_rule(&t->gate_rules, &t->n_gate_rules, &r);
	}
	return rc ? aw_errorf(l->err, rc, "out of memory") : 0;
}

static int load_thresholds(struct loader *l, struct aw_thresholds *t, const yaml_node_t *root)
{
	yaml_node_pair_t *pair;
	int rc = 0;

	if (root->type != YAML_MAPPING_NODE)
		return at(l, root, "the file must be a mapping of p50, p99 and rules");
	for (pair = root->data.mapping.pairs.start; pair < root->data.mapping.pairs.top; pair++) {
		yaml_node_t *kn = yaml_document_get_node(l->doc, pair->key);
		yaml_node_t *vn = yaml_document_get_node(l->doc, pair->value);
		const char *name;

		if (!kn || !vn || kn->type != YAML_SCALAR_NODE)
			return at(l, kn ? kn : root, "keys must be plain names");
		name = (const char *)kn->data.scalar.value;
		if (!strcmp(name, "p50")) {
			rc = ratio_of(l, vn, "p50", &t->p50);
		} else if (!strcmp(name, "p99")) {
			rc = ratio_of(l, vn, "p99", &t->p99);
		} else if (!strcmp(name, "p99_gate")) {
			const char *g = NULL;

			rc = scalar_of(l, vn, "p99_gate", &g);
			if (!rc && aw_gate_parse(g, &t->p99_gate))
				rc = at(l, vn, "'p99_gate' must be fail, warn or off, not '%.32s'",
				        g);
		} else if (!strcmp(name, "rules")) {
			yaml_node_item_t *item;
			size_t i = 0;

			if (vn->type != YAML_SEQUENCE_NODE)
				return at(l, vn, "'rules' must be a list");
			for (item = vn->data.sequence.items.start;
			     !rc && item < vn->data.sequence.items.top; item++)
				rc = load_rule(l, t, yaml_document_get_node(l->doc, *item), ++i);
		} else {
			rc = at(l, kn, "unknown key '%.48s' (p50, p99, p99_gate, rules)", name);
		}
		if (rc)
			return rc;
	}
	return 0;
}

static int thresholds_root(struct loader *l, const yaml_node_t *root, void *cls)
{
	return load_thresholds(l, cls, root);
}

int aw_thresholds_parse(struct aw_thresholds *t, const char *text, size_t len, const char *name,
                        char **err)
{
	int rc;

	memset(t, 0, sizeof(*t));
	aw_thresholds_release(t);
	rc = with_yaml(text, len, name, err, thresholds_root, t);
	if (rc)
		aw_thresholds_release(t);
	return rc;
}

static int thresholds_parse(void *obj, const char *text, size_t len, const char *name, char **err)
{
	return aw_thresholds_parse(obj, text, len, name, err);
}

int aw_thresholds_load(struct aw_thresholds *t, const char *path, char **err)
{
	return with_file(path, err, thresholds_parse, t);
}
