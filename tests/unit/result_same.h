/* Whether two result models are the same field for field, doubles bit for bit (a NAN is a NAN),
 * host and meta by json_equal(): what the fast reader of uploads (aw_result_parse_fast()) must
 * give against aw_result_from_json(). Shared by the unit test and the fuzz target; on a
 * difference it names the first one on stderr. */
#ifndef AW_TEST_RESULT_SAME_H
#define AW_TEST_RESULT_SAME_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "aw/result.h"

static bool same_str(const char *what, const char *a, const char *b)
{
	if ((!a && !b) || (a && b && !strcmp(a, b)))
		return true;
	fprintf(stderr, "result_same: %s: '%s' vs '%s'\n", what, a ? a : "(null)",
	        b ? b : "(null)");
	return false;
}

static bool same_bits(const char *what, long cell, double a, double b)
{
	uint64_t x, y;

	memcpy(&x, &a, sizeof(x));
	memcpy(&y, &b, sizeof(y));
	if (x == y || (a != a && b != b))
		return true;
	fprintf(stderr, "result_same: cells[%ld].%s: %.17g (%016llx) vs %.17g (%016llx)\n", cell,
	        what, a, (unsigned long long)x, b, (unsigned long long)y);
	return false;
}

/* `cell` -1: a field of the run */
static bool same_int(const char *what, long cell, int64_t a, int64_t b)
{
	if (a == b)
		return true;
	fprintf(stderr, "result_same: cells[%ld].%s: %lld vs %lld\n", cell, what, (long long)a,
	        (long long)b);
	return false;
}

static bool same_json(const char *what, const json_t *a, const json_t *b)
{
	if ((!a && !b) || (a && b && json_equal(a, b)))
		return true;
	fprintf(stderr, "result_same: %s differs\n", what);
	return false;
}

static bool same_cell(size_t cell, const struct aw_cell *a, const struct aw_cell *b)
{
	long i = (long)cell;

	bool ok = same_str("key", a->key, b->key) && same_str("op", a->op, b->op) &&
	          same_str("reader", a->reader, b->reader) &&
	          same_str("subject", a->subject, b->subject) &&
	          same_str("kernel", a->kernel, b->kernel) &&
	          same_str("placement", a->placement, b->placement) &&
	          same_str("reason", a->reason, b->reason) && same_int("cpu", i, a->cpu, b->cpu) &&
	          same_int("contender_cpu", i, a->contender_cpu, b->contender_cpu) &&
	          same_int("c", i, a->c, b->c) && same_int("d", i, a->d, b->d) &&
	          same_int("n", i, (int64_t)a->n, (int64_t)b->n) &&
	          same_int("batch", i, (int64_t)a->batch, (int64_t)b->batch) &&
	          same_int("below_resolution", i, a->below_resolution, b->below_resolution) &&
	          same_int("status", i, a->status, b->status) &&
	          same_bits("min", i, a->min, b->min) && same_bits("p50", i, a->p50, b->p50) &&
	          same_bits("p95", i, a->p95, b->p95) && same_bits("p99", i, a->p99, b->p99) &&
	          same_bits("max", i, a->max, b->max) && same_bits("mean", i, a->mean, b->mean) &&
	          same_bits("stddev", i, a->stddev, b->stddev) &&
	          same_bits("ci_lo", i, a->ci_lo, b->ci_lo) &&
	          same_bits("ci_hi", i, a->ci_hi, b->ci_hi) &&
	          same_bits("baseline_ns", i, a->baseline_ns, b->baseline_ns);

	for (int k = 0; ok && k < AW_REF_COUNT; k++)
		ok = same_bits("ref_ns", i, a->ref_ns[k], b->ref_ns[k]);
	return ok;
}

static bool result_same(const struct aw_result *a, const struct aw_result *b)
{
	bool ok = same_str("run_id", a->run_id, b->run_id) &&
	          same_str("project", a->project, b->project) &&
	          same_str("commit", a->commit, b->commit) && same_str("ref", a->ref, b->ref) &&
	          same_str("commit_time", a->commit_time, b->commit_time) &&
	          same_int("trigger", -1, a->trigger, b->trigger) &&
	          same_str("started_at", a->started_at, b->started_at) &&
	          same_str("finished_at", a->finished_at, b->finished_at) &&
	          same_json("host", a->host, b->host) &&
	          same_str("matrix_name", a->matrix_name, b->matrix_name) &&
	          same_int("matrix_version", -1, a->matrix_version, b->matrix_version) &&
	          same_str("matrix_hash", a->matrix_hash, b->matrix_hash) &&
	          same_str("matrix_profile", a->matrix_profile, b->matrix_profile) &&
	          same_json("meta", a->meta, b->meta) &&
	          same_str("reference_kernel", a->reference_kernel, b->reference_kernel) &&
	          same_int("references", -1, a->references, b->references) &&
	          same_str("confirmation_of", a->confirmation_of, b->confirmation_of) &&
	          same_int("confirm", -1, a->confirm, b->confirm) &&
	          same_int("n_cells", -1, (int64_t)a->n_cells, (int64_t)b->n_cells);

	for (size_t i = 0; ok && i < a->n_cells; i++)
		ok = same_cell(i, &a->cells[i], &b->cells[i]);
	return ok;
}

#endif
