/* What store.c and both backends (sqlite.c, pg.c) share: the error count, the
 * names of metrics, roles and statuses, cell signatures, the clock and the schema version. A
 * file of its own so that the backends depend on it and not on store.c, which depends on them
 * (it picks their driver). */
#include "driver.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "aw/util.h"

static atomic_uint_fast64_t db_errors, disk_full;
static atomic_bool disk_full_now;

void store_count_error(void)
{
	atomic_fetch_add_explicit(&db_errors, 1, memory_order_relaxed);
}

uint64_t store_errors_total(void)
{
	return atomic_load_explicit(&db_errors, memory_order_relaxed);
}

void store_count_disk_full(void)
{
	atomic_fetch_add_explicit(&disk_full, 1, memory_order_relaxed);
	atomic_store(&disk_full_now, true);
}

uint64_t store_disk_full_total(void)
{
	return atomic_load_explicit(&disk_full, memory_order_relaxed);
}

bool store_disk_full_now(void)
{
	return atomic_load(&disk_full_now);
}

void store_note_write_ok(void)
{
	if (atomic_load_explicit(&disk_full_now, memory_order_relaxed))
		atomic_store(&disk_full_now, false);
}

const char *const store_metric_columns[STORE_METRIC_COUNT] = {
    "min", "p50", "p95", "p99", "max", "mean", "stddev", "ci_lo", "ci_hi", "baseline_ns"};

static const char *const metric_names[STORE_METRIC_COUNT] = {
    "min", "p50", "p95", "p99", "max", "mean", "stddev", "ci_lo", "ci_hi", "baseline_ns"};

int store_metric_parse(const char *name, enum store_metric *out)
{
	for (int i = 0; i < STORE_METRIC_COUNT; i++) {
		if (!strcmp(name, metric_names[i])) {
			*out = (enum store_metric)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *store_metric_name(enum store_metric m)
{
	return metric_names[m];
}

static const char *const role_names[] = {"agent", "ci", "admin"};

const char *store_role_name(enum store_role r)
{
	return role_names[r];
}

int store_role_parse(const char *s, enum store_role *out)
{
	for (int i = 0; i < 3; i++) {
		if (!strcmp(s, role_names[i])) {
			*out = (enum store_role)i;
			return 0;
		}
	}
	return -EINVAL;
}

int store_status_parse(const char *s, enum aw_cell_status *out)
{
	for (int i = AW_CELL_OK; i <= AW_CELL_FAILED; i++) {
		if (s && !strcmp(s, aw_cell_status_name((enum aw_cell_status)i))) {
			*out = (enum aw_cell_status)i;
			return 0;
		}
	}
	return -EINVAL;
}

int store_cell_sig(const struct aw_cell *c, char *out, size_t len)
{
	char cpu[16] = "", ccpu[16] = "", cc[24] = "";
	int n;

	if (c->cpu != AW_NONE)
		snprintf(cpu, sizeof(cpu), "%d", c->cpu);
	if (c->contender_cpu != AW_NONE)
		snprintf(ccpu, sizeof(ccpu), "%d", c->contender_cpu);
	if (c->c != AW_NONE)
		snprintf(cc, sizeof(cc), "%lld", (long long)c->c);
	n = snprintf(out, len, "%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%lld", c->key,
	             c->op ? c->op : "", c->reader ? c->reader : "", c->subject ? c->subject : "",
	             c->kernel ? c->kernel : "", c->placement ? c->placement : "", cpu, ccpu, cc,
	             (long long)c->d);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

void store_now(char *text, int64_t *us)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	aw_time_format(&ts, text);
	*us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int store_schema_version(void)
{
	return STORE_SCHEMA_VERSION;
}
