/* The result document: JSON round trip of the model, canonical keys, and every validation rule
 * with the field it names. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "aw/refblob.h"
#include "aw/result.h"

/* A result of three cells (one skipped); `refs` 0: with the mulchain-v1 series alone, as
 * written before the family (a "reference" object); else with the family of those kernels
 * (bits of enum aw_ref: "references"), kernel k's value beside cell i (i + 1) * (k + 1) / 8. */
static struct aw_result *sample_result_with(unsigned refs)
{
	struct aw_result *r = aw_result_new();
	struct aw_cell *c;

	assert_non_null(r);
	assert_int_equal(aw_set_str(&r->project, "demo"), 0);
	assert_int_equal(aw_set_str(&r->commit, "0123abcd"), 0);
	assert_int_equal(aw_set_str(&r->ref, "refs/heads/main"), 0);
	r->trigger = AW_TRIGGER_CI;
	snprintf(r->started_at, sizeof(r->started_at), "2026-11-29T10:00:00.000000Z");
	snprintf(r->finished_at, sizeof(r->finished_at), "2026-11-29T10:00:05.500000Z");
	r->host = json_pack("{s:s, s:s, s:s, s:{s:s}, s:s}", "name", "grace-1", "arch", "aarch64",
	                    "cpu_model", "Neoverse-V2", "labels", "team", "kernel", "platform_hash",
	                    "0123456789abcdef");
	assert_non_null(r->host);
	assert_int_equal(aw_set_str(&r->matrix_name, "atomwatch"), 0);
	r->matrix_version = 1;
	assert_int_equal(aw_set_str(&r->matrix_hash, "aabbccddeeff0011"), 0);
	assert_int_equal(aw_set_str(&r->matrix_profile, "quick"), 0);

	c = aw_result_add_cell(r);
	assert_int_equal(aw_set_str(&c->op, "stadd"), 0);
	c->cpu = 3;
	c->n = 200;
	c->batch = 4096;
	c->min = 48.25;
	c->p50 = 50.5;
	c->p95 = 52;
	c->p99 = 60.125;
	c->max = 70;
	c->mean = 51;
	c->stddev = 1.5;
	c->ci_lo = 50.25;
	c->ci_hi = 50.75;
	c->baseline_ns = 0.25;
	assert_int_equal(aw_cell_make_key(c), 0);

	c = aw_result_add_cell(r);
	assert_int_equal(aw_set_str(&c->op, "ldadd"), 0);
	assert_int_equal(aw_set_str(&c->reader, "srcu_fast"), 0);
	c->cpu = 0;
	c->status = AW_CELL_SKIPPED;
	assert_int_equal(aw_set_str(&c->reason, "needs LSE"), 0);
	assert_int_equal(aw_cell_make_key(c), 0);

	c = aw_result_add_cell(r);
	assert_int_equal(aw_set_str(&c->op, "llsc"), 0);
	assert_int_equal(aw_set_str(&c->placement, "near"), 0);
	c->cpu = 0;
	c->contender_cpu = 1;
	c->c = 10;
	c->d = 100;
	c->n = 1;
	c->p50 = 0;
	c->below_resolution = true;
	assert_int_equal(aw_cell_make_key(c), 0);

	if (refs) {
		/* every kernel beside the two measured cells; none beside the skipped one */
		assert_int_equal(aw_result_set_references(r, refs), 0);
		for (int k = 0; k < AW_REF_COUNT; k++)
			if (refs & (1u << k))
				for (size_t i = 0; i < 3; i += 2)
					r->cells[i].ref_ns[k] = (double)((i + 1) * (k + 1)) / 8;
		return r;
	}
	/* the reference kernel beside the two measured cells; none beside the skipped one */
	assert_int_equal(aw_set_str(&r->reference_kernel, "mulchain-v1"), 0);
	r->cells[0].reference_ns = 0.875;
	r->cells[2].reference_ns = 0.90625;
	return r;
}

static struct aw_result *sample_result(void)
{
	return sample_result_with(0);
}

static void test_keys(void **state)
{
	struct aw_result *r = sample_result();
	struct aw_cell *c;

	(void)state;
	assert_string_equal(r->cells[0].key, "op=stadd cpu=3");
	assert_string_equal(r->cells[1].key, "reader=srcu_fast op=ldadd cpu=0");
	assert_string_equal(r->cells[2].key, "op=llsc cpu=0 contender=1 c=10 d=100");
	c = aw_result_add_cell(r);
	aw_set_str(&c->op, "ldadd");
	aw_set_str(&c->placement, "far");
	c->cpu = 0;
	c->c = 10;
	assert_int_equal(aw_cell_make_key(c), 0);
	assert_string_equal(c->key, "op=ldadd cpu=0 contender=far c=10");
	c = aw_result_add_cell(r);
	aw_set_str(&c->kernel, "srcu-fast");
	aw_set_str(&c->op, "refscale");
	assert_int_equal(aw_cell_make_key(c), 0);
	assert_string_equal(c->key, "kernel=srcu-fast");
	c = aw_result_add_cell(r);
	aw_set_str(&c->subject, "libpcpu");
	aw_set_str(&c->op, "inc");
	c->cpu = 2;
	assert_int_equal(aw_cell_make_key(c), 0);
	assert_string_equal(c->key, "subject=libpcpu op=inc cpu=2");
	aw_result_free(&r);
	assert_null(r);
}

static void test_round_trip(void **state)
{
	struct aw_result *r = sample_result(), *back;
	struct aw_verr e;
	json_t *j1, *j2;

	(void)state;
	j1 = aw_result_to_json(r);
	assert_non_null(j1);
	back = aw_result_from_json(j1, NULL, &e);
	if (!back)
		fail_msg("%s: %s: %s", e.code, e.field, e.message);
	j2 = aw_result_to_json(back);
	assert_true(json_equal(j1, j2));
	assert_string_equal(back->run_id, r->run_id);
	assert_int_equal(back->n_cells, 3);
	assert_true(back->cells[0].p99 == 60.125);
	assert_true(isnan(back->cells[1].p50));
	assert_int_equal(back->cells[1].status, AW_CELL_SKIPPED);
	assert_int_equal(back->cells[2].contender_cpu, 1);
	assert_true(back->cells[2].below_resolution);
	assert_int_equal(back->trigger, AW_TRIGGER_CI);
	assert_string_equal(back->reference_kernel, "mulchain-v1");
	assert_true(back->cells[0].reference_ns == 0.875);
	assert_true(isnan(back->cells[1].reference_ns));
	assert_true(back->cells[2].reference_ns == 0.90625);
	/* the text form parses back to the same document too */
	{
		char *text = json_dumps(j1, JSON_COMPACT);
		json_t *j3 = json_loads(text, 0, NULL);

		assert_true(json_equal(j1, j3));
		json_decref(j3);
		free(text);
	}
	json_decref(j1);
	json_decref(j2);
	aw_result_free(&back);
	aw_result_free(&r);
}

/* Applies `mutate` (a JSON patch as "path=json") to a valid document (sample_result_with(refs))
 * and checks the rejection. */
static void expect_reject_in(unsigned refs, const char *path, const char *value_json,
                             const char *code, const char *field)
{
	struct aw_result *r = sample_result_with(refs);
	json_t *doc = aw_result_to_json(r), *target = doc, *value = NULL;
	char buf[128], *save = NULL, *tok, *next;
	struct aw_verr e;
	struct aw_result *back;

	assert_true(snprintf(buf, sizeof(buf), "%s", path) < (int)sizeof(buf));
	tok = strtok_r(buf, ".", &save);
	while ((next = strtok_r(NULL, ".", &save))) {
		char *br = strchr(tok, '[');

		if (br) {
			*br = '\0';
			target =
			    json_array_get(json_object_get(target, tok), strtoul(br + 1, NULL, 10));
		} else {
			target = json_object_get(target, tok);
		}
		tok = next;
	}
	if (value_json) {
		value = json_loads(value_json, JSON_DECODE_ANY, NULL);
		assert_non_null(value);
		json_object_set_new(target, tok, value);
	} else {
		json_object_del(target, tok);
	}
	back = aw_result_from_json(doc, NULL, &e);
	if (back)
		fail_msg("%s=%s was accepted", path, value_json ? value_json : "(deleted)");
	if (strcmp(e.code, code) || strcmp(e.field, field))
		fail_msg("%s=%s: got %s at '%s' (%s), want %s at '%s'", path,
		         value_json ? value_json : "(deleted)", e.code, e.field, e.message, code,
		         field);
	assert_true(strlen(e.message) > 0);
	json_decref(doc);
	aw_result_free(&r);
}

static void expect_reject(const char *path, const char *value_json, const char *code,
                          const char *field)
{
	expect_reject_in(0, path, value_json, code, field);
}

/* "confirmation_of" and "confirm": optional (older documents stay valid), round-tripped, and a
 * run confirming itself or a confirmation asking for confirmations refused */
static void test_confirmation_fields(void **state)
{
	struct aw_result *r = sample_result(), *back;
	struct aw_verr e;
	json_t *doc;

	(void)state;
	doc = aw_result_to_json(r);
	assert_null(json_object_get(doc, "confirmation_of"));
	assert_null(json_object_get(doc, "confirm"));
	back = aw_result_from_json(doc, NULL, &e);
	assert_non_null(back);
	assert_null(back->confirmation_of);
	assert_int_equal(back->confirm, 0);
	aw_result_free(&back);
	json_decref(doc);

	r->confirm = 3;
	doc = aw_result_to_json(r);
	assert_int_equal(json_integer_value(json_object_get(doc, "confirm")), 3);
	back = aw_result_from_json(doc, NULL, &e);
	assert_non_null(back);
	assert_int_equal(back->confirm, 3);
	aw_result_free(&back);
	json_decref(doc);

	r->confirm = 0;
	assert_int_equal(aw_set_str(&r->confirmation_of, "0e7c5a9b-1d2f-4a3b-8c4d-5e6f7a8b9c0d"),
	                 0);
	doc = aw_result_to_json(r);
	back = aw_result_from_json(doc, NULL, &e);
	assert_non_null(back);
	assert_string_equal(back->confirmation_of, "0e7c5a9b-1d2f-4a3b-8c4d-5e6f7a8b9c0d");
	aw_result_free(&back);
	json_object_set_new(doc, "confirm", json_integer(2));
	assert_null(aw_result_from_json(doc, NULL, &e));
	assert_string_equal(e.field, "confirm");
	json_object_del(doc, "confirm");
	json_object_set_new(doc, "confirmation_of", json_string(r->run_id));
	assert_null(aw_result_from_json(doc, NULL, &e));
	assert_string_equal(e.field, "confirmation_of");
	json_decref(doc);
	aw_result_free(&r);
}

/* "bisect" is a trigger of its own (a bisection's runs), and the older words stay valid. */
static void test_trigger_bisect(void **state)
{
	static const char *const words[] = {"ci", "schedule", "manual", "import", "bisect"};
	struct aw_result *r = sample_result(), *back;
	enum aw_trigger t;
	struct aw_verr e;
	json_t *doc;

	(void)state;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		assert_int_equal(aw_trigger_parse(words[i], &t), 0);
		assert_string_equal(aw_trigger_name(t), words[i]);
	}
	assert_int_equal(aw_trigger_parse("bisection", &t), -EINVAL);
	r->trigger = AW_TRIGGER_BISECT;
	doc = aw_result_to_json(r);
	assert_string_equal(json_string_value(json_object_get(doc, "trigger")), "bisect");
	back = aw_result_from_json(doc, NULL, &e);
	assert_non_null(back);
	assert_int_equal(back->trigger, AW_TRIGGER_BISECT);
	aw_result_free(&back);
	json_decref(doc);
	aw_result_free(&r);
}

static void test_rejections(void **state)
{
	(void)state;
	expect_reject("schema", "\"atomwatch.result/2\"", "unsupported_schema", "schema");
	expect_reject("schema", "\"other\"", "invalid", "schema");
	expect_reject("schema", NULL, "required", "schema");
	expect_reject("run_id", "\"not-a-uuid\"", "invalid", "run_id");
	expect_reject("project", "\"bad name!\"", "invalid", "project");
	expect_reject("project", "42", "type", "project");
	expect_reject("commit", "\"xyz1234\"", "invalid", "commit");
	expect_reject("commit", "\"abc12\"", "invalid", "commit");
	expect_reject("ref", "\"a..b\"", "invalid", "ref");
	expect_reject("trigger", "\"cron\"", "invalid", "trigger");
	expect_reject("started_at", "\"yesterday\"", "invalid", "started_at");
	expect_reject("finished_at", "\"2026-11-29T09:00:00Z\"", "order", "finished_at");
	expect_reject("extra", "1", "unknown_field", "extra");
	expect_reject("host", "[]", "type", "host");
	expect_reject("host.name", "\"a b\"", "invalid", "host.name");
	expect_reject("host.name", NULL, "required", "host.name");
	expect_reject("host.labels", "{\"team\": 5}", "type", "host.labels.team");
	expect_reject("host.labels", "{\"bad key\": \"x\"}", "invalid", "host.labels.bad key");
	expect_reject("host.labels", NULL, "required", "host.labels");
	expect_reject("host.cpu_model", "\"a\\u0001b\"", "invalid", "host.cpu_model");
	expect_reject("matrix.version", "0", "range", "matrix.version");
	expect_reject("matrix.version", "1.5", "type", "matrix.version");
	expect_reject("matrix.hash", "\"XYZ\"", "invalid", "matrix.hash");
	expect_reject("matrix.colour", "\"red\"", "unknown_field", "matrix.colour");
	expect_reject("cells", "{}", "type", "cells");
	/* confirmation fields */
	expect_reject("confirmation_of", "42", "type", "confirmation_of");
	expect_reject("confirmation_of", "[\"x\"]", "type", "confirmation_of");
	expect_reject("confirmation_of", "\"not-a-uuid\"", "invalid", "confirmation_of");
	expect_reject("confirm", "0", "range", "confirm");
	expect_reject("confirm", "17", "range", "confirm");
	expect_reject("confirm", "\"3\"", "type", "confirm");
	expect_reject("confirm", "2.5", "type", "confirm");
	expect_reject("cells[0].p50", "-1", "range", "cells[0].p50");
	expect_reject("cells[0].p50", "\"fast\"", "type", "cells[0].p50");
	expect_reject("cells[0].p50", "100", "order", "cells[0].p95");
	expect_reject("cells[0].min", "51", "order", "cells[0].p50");
	expect_reject("cells[0].max", "1", "order", "cells[0].max");
	expect_reject("cells[0].p50", NULL, "required", "cells[0].p50");
	expect_reject("cells[0].ci_lo", "60", "order", "cells[0].ci_lo");
	expect_reject("cells[0].n", "0", "range", "cells[0].n");
	expect_reject("cells[0].cpu", "-1", "range", "cells[0].cpu");
	expect_reject("cells[0].cpu", "\"3\"", "type", "cells[0].cpu");
	expect_reject("cells[0].unit", "\"us\"", "invalid", "cells[0].unit");
	expect_reject("cells[0].status", "\"great\"", "invalid", "cells[0].status");
	expect_reject("cells[0].key", "\"reader=srcu_fast op=ldadd cpu=0\"", "duplicate",
	              "cells[1].key");
	expect_reject("cells[0].speed", "1", "unknown_field", "cells[0].speed");
	expect_reject("cells[0].below_resolution", "\"yes\"", "type", "cells[0].below_resolution");
	expect_reject("cells[1].reason", NULL, "required", "cells[1].reason");
	expect_reject("cells[2].placement", "\"middle\"", "invalid", "cells[2].placement");
	expect_reject("meta", "[]", "type", "meta");
	expect_reject("reference", "[]", "type", "reference");
	expect_reject("reference.kernel", NULL, "required", "reference.kernel");
	expect_reject("reference.kernel", "\"mul chain\"", "invalid", "reference.kernel");
	expect_reject("reference.unit", "\"cycles\"", "invalid", "reference.unit");
	expect_reject("reference.unit", NULL, "required", "reference.unit");
	expect_reject("reference.colour", "1", "unknown_field", "reference.colour");
	expect_reject("reference.values", NULL, "required", "reference.values");
	expect_reject("reference.values", "{}", "type", "reference.values");
	expect_reject("reference.values", "[1, 2]", "length", "reference.values");
	expect_reject("reference.values", "[1, 2, 3, 4]", "length", "reference.values");
	expect_reject("reference.values", "[]", "length", "reference.values");
	expect_reject("reference.values", "[1, null, -0.5]", "range", "reference.values[2]");
	expect_reject("reference.values", "[0, null, 1]", "range", "reference.values[0]");
	expect_reject("reference.values", "[1, \"fast\", 1]", "type", "reference.values[1]");
	expect_reject("reference.values", "[1, 1, true]", "type", "reference.values[2]");
	/* the older object holds mulchain-v1 alone, and every kernel must be known */
	expect_reject("reference.kernel", "\"mulindep-v1\"", "invalid", "reference.kernel");
	expect_reject("reference.kernel", "\"mulchain-v2\"", "unknown_kernel", "reference.kernel");
	expect_reject("reference.references", "[]", "unknown_field", "reference.references");
}

/* The family: each series checked like the older object, its path naming the entry. */
static void test_references_rejections(void **state)
{
	const unsigned all = AW_REF_ALL;

	(void)state;
	expect_reject_in(all, "references", "{}", "type", "references");
	expect_reject_in(all, "references", "[]", "length", "references");
	expect_reject_in(all, "references", "[5]", "type", "references[0]");
	expect_reject_in(all, "reference",
	                 "{\"kernel\": \"mulchain-v1\", \"unit\": \"ns\", "
	                 "\"values\": [1, null, 1]}",
	                 "invalid", "reference");
	expect_reject_in(all, "references[2].kernel", "\"mulfast-v9\"", "unknown_kernel",
	                 "references[2].kernel");
	expect_reject_in(all, "references[2].kernel", "\"mul fast\"", "invalid",
	                 "references[2].kernel");
	expect_reject_in(all, "references[1].kernel", "\"mulchain-v1\"", "duplicate",
	                 "references[1].kernel");
	expect_reject_in(all, "references[3].kernel", NULL, "required", "references[3].kernel");
	expect_reject_in(all, "references[0].unit", "\"cycles\"", "invalid", "references[0].unit");
	expect_reject_in(all, "references[2].colour", "1", "unknown_field", "references[2].colour");
	expect_reject_in(all, "references[1].values", NULL, "required", "references[1].values");
	expect_reject_in(all, "references[1].values", "[1, 2]", "length", "references[1].values");
	expect_reject_in(all, "references[3].values", "[1, null, -0.5]", "range",
	                 "references[3].values[2]");
	expect_reject_in(all, "references[1].values", "[1, \"fast\", 1]", "type",
	                 "references[1].values[1]");
}

/* The reference series: documents without it (every one before it existed) stay valid and
 * gain none; its JSON form is one value per cell, null where none was measured, and the
 * model's non-finite values never reach the JSON as numbers. */
static void test_reference(void **state)
{
	struct aw_result *r = sample_result(), *back;
	json_t *doc, *values;
	struct aw_verr e;

	(void)state;
	doc = aw_result_to_json(r);
	assert_non_null(doc);
	values = json_object_get(json_object_get(doc, "reference"), "values");
	assert_int_equal(json_array_size(values), 3);
	assert_true(json_real_value(json_array_get(values, 0)) == 0.875);
	assert_true(json_is_null(json_array_get(values, 1)));
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(doc, "reference"), "unit")), "ns");

	json_object_del(doc, "reference");
	back = aw_result_from_json(doc, NULL, &e);
	if (!back)
		fail_msg("%s: %s: %s", e.code, e.field, e.message);
	assert_null(back->reference_kernel);
	for (size_t i = 0; i < back->n_cells; i++)
		assert_true(isnan(back->cells[i].reference_ns));
	json_decref(doc);
	doc = aw_result_to_json(back);
	assert_null(json_object_get(doc, "reference"));
	json_decref(doc);
	aw_result_free(&back);

	/* "reference": null is the same as none */
	doc = aw_result_to_json(r);
	json_object_set_new(doc, "reference", json_null());
	back = aw_result_from_json(doc, NULL, &e);
	assert_non_null(back);
	assert_null(back->reference_kernel);
	aw_result_free(&back);
	json_decref(doc);

	/* what a store does: keep the object beside the cells, put it back on a rebuilt run */
	{
		json_t *ref = aw_result_reference_to_json(r), *bad;
		struct aw_result *plain;

		assert_non_null(ref);
		doc = aw_result_to_json(r);
		json_object_del(doc, "reference");
		plain = aw_result_from_json(doc, NULL, &e);
		assert_non_null(plain);
		assert_null(aw_result_reference_to_json(plain));
		assert_int_equal(aw_result_reference_from_json(plain, ref, &e), 0);
		assert_string_equal(plain->reference_kernel, "mulchain-v1");
		assert_true(plain->cells[2].reference_ns == 0.90625);
		json_decref(doc);
		doc = aw_result_to_json(plain);
		values = aw_result_to_json(r);
		assert_true(json_equal(doc, values));
		json_decref(values);
		json_decref(doc);
		bad = json_deep_copy(ref);
		json_array_remove(json_object_get(bad, "values"), 0);
		assert_int_equal(aw_result_reference_from_json(plain, bad, &e), -EINVAL);
		assert_string_equal(e.field, "reference.values");
		assert_string_equal(e.code, "length");
		assert_null(plain->reference_kernel);
		assert_true(isnan(plain->cells[0].reference_ns));
		json_decref(bad);
		/* stored before kernel names were checked: read back without it */
		bad = json_deep_copy(ref);
		json_object_set_new(bad, "kernel", json_string("mychain-v1"));
		assert_int_equal(aw_result_reference_from_json(plain, bad, &e), 0);
		assert_null(plain->reference_kernel);
		assert_true(isnan(plain->cells[0].reference_ns));
		json_decref(bad);
		json_decref(ref);
		aw_result_free(&plain);
	}

	r->cells[0].reference_ns = INFINITY;
	r->cells[2].reference_ns = NAN;
	doc = aw_result_to_json(r);
	values = json_object_get(json_object_get(doc, "reference"), "values");
	for (size_t i = 0; i < 3; i++)
		assert_true(json_is_null(json_array_get(values, i)));
	back = aw_result_from_json(doc, NULL, &e);
	assert_non_null(back);
	assert_true(isnan(back->cells[0].reference_ns));
	aw_result_free(&back);
	json_decref(doc);
	aw_result_free(&r);
}

/* The family of reference series: a document carries it as "references" (one entry per
 * kernel, in any order, each once), which the model reads into each cell's ref_ns with
 * mulchain-v1's still its reference_ns; a family without mulchain-v1 leaves reference_ns
 * empty; a store keeps the family beside mulchain-v1's series and puts it back. */
static void test_references(void **state)
{
	struct aw_result *r = sample_result_with(AW_REF_ALL), *back;
	json_t *doc, *family, *again;
	struct aw_verr e;

	(void)state;
	assert_string_equal(r->reference_kernel, "mulchain-v1");
	assert_true(r->cells[2].reference_ns == r->cells[2].ref_ns[AW_REF_MULCHAIN]);
	doc = aw_result_to_json(r);
	assert_non_null(doc);
	assert_null(json_object_get(doc, "reference"));
	family = json_object_get(doc, "references");
	assert_int_equal(json_array_size(family), AW_REF_COUNT);
	for (int k = 0; k < AW_REF_COUNT; k++) {
		json_t *o = json_array_get(family, (size_t)k), *v = json_object_get(o, "values");

		assert_string_equal(json_string_value(json_object_get(o, "kernel")),
		                    aw_ref_name((enum aw_ref)k));
		assert_string_equal(json_string_value(json_object_get(o, "unit")), "ns");
		assert_int_equal(json_array_size(v), 3);
		assert_true(json_real_value(json_array_get(v, 2)) == 3.0 * (k + 1) / 8);
		assert_true(json_is_null(json_array_get(v, 1)));
	}
	/* in another order: the same run */
	json_array_insert(family, 0, json_array_get(family, 3));
	json_array_remove(family, 4);
	back = aw_result_from_json(doc, NULL, &e);
	if (!back)
		fail_msg("%s: %s: %s", e.code, e.field, e.message);
	assert_int_equal(back->references, AW_REF_ALL);
	assert_string_equal(back->reference_kernel, "mulchain-v1");
	assert_true(back->cells[0].reference_ns == 1.0 / 8);
	assert_true(back->cells[2].ref_ns[AW_REF_MEMCHASE] == 12.0 / 8);
	assert_true(isnan(back->cells[1].ref_ns[AW_REF_ATOMICADD]));
	json_decref(doc);
	doc = aw_result_to_json(r);
	again = aw_result_to_json(back);
	assert_true(json_equal(doc, again));
	json_decref(again);
	json_decref(doc);
	aw_result_free(&back);

	/* what a store keeps: mulchain-v1's series as before, the family beside it */
	{
		json_t *stored = aw_result_reference_to_json(r), *bad;
		struct aw_result *plain = sample_result();

		assert_non_null(stored);
		assert_string_equal(json_string_value(json_object_get(stored, "kernel")),
		                    "mulchain-v1");
		assert_int_equal(json_array_size(json_object_get(stored, "values")), 3);
		assert_int_equal(json_array_size(json_object_get(stored, "references")),
		                 AW_REF_COUNT);
		assert_int_equal(aw_result_reference_from_json(plain, stored, &e), 0);
		assert_int_equal(plain->references, AW_REF_ALL);
		doc = aw_result_to_json(r);
		again = aw_result_to_json(plain);
		json_object_set(again, "run_id", json_object_get(doc, "run_id"));
		assert_true(json_equal(doc, again));
		json_decref(again);
		json_decref(doc);
		bad = json_deep_copy(stored);
		json_object_set_new(json_array_get(json_object_get(bad, "references"), 1), "kernel",
		                    json_string("mulfast-v9"));
		assert_int_equal(aw_result_reference_from_json(plain, bad, &e), -EINVAL);
		assert_string_equal(e.field, "reference.references[1].kernel");
		assert_string_equal(e.code, "unknown_kernel");
		assert_null(plain->reference_kernel);
		assert_int_equal(plain->references, 0);
		assert_true(isnan(plain->cells[2].ref_ns[AW_REF_MEMCHASE]));
		json_decref(bad);
		json_decref(stored);
		aw_result_free(&plain);
	}
	aw_result_free(&r);

	/* a family without mulchain-v1: nothing for readers of reference_ns, nor for a store */
	r = sample_result_with(1u << AW_REF_MULINDEP | 1u << AW_REF_MEMCHASE);
	assert_null(r->reference_kernel);
	assert_null(aw_result_reference_to_json(r));
	doc = aw_result_to_json(r);
	assert_int_equal(json_array_size(json_object_get(doc, "references")), 2);
	back = aw_result_from_json(doc, NULL, &e);
	assert_non_null(back);
	assert_null(back->reference_kernel);
	assert_int_equal(back->references, 1u << AW_REF_MULINDEP | 1u << AW_REF_MEMCHASE);
	assert_true(isnan(back->cells[0].reference_ns));
	assert_true(back->cells[0].ref_ns[AW_REF_MULINDEP] == 2.0 / 8);
	aw_result_free(&back);
	/* "references": null is the same as none */
	json_object_set_new(doc, "references", json_null());
	back = aw_result_from_json(doc, NULL, &e);
	assert_non_null(back);
	assert_int_equal(back->references, 0);
	assert_true(isnan(back->cells[0].ref_ns[AW_REF_MULINDEP]));
	aw_result_free(&back);
	json_decref(doc);
	aw_result_free(&r);

	assert_int_equal(aw_ref_lookup("memchase-v1"), AW_REF_MEMCHASE);
	assert_int_equal(aw_ref_lookup("memchase"), -1);
}

static void test_limits(void **state)
{
	struct aw_result *r = sample_result();
	json_t *doc = aw_result_to_json(r);
	struct aw_result_limits lim = AW_RESULT_LIMITS_DEFAULT;
	struct aw_verr e;
	char big[600];

	(void)state;
	lim.max_cells = 2;
	assert_null(aw_result_from_json(doc, &lim, &e));
	assert_string_equal(e.code, "too_many");
	assert_string_equal(e.field, "cells");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	json_object_set_new(json_object_get(doc, "host"), "cpu_model", json_string(big));
	assert_null(aw_result_from_json(doc, NULL, &e));
	assert_string_equal(e.code, "too_long");
	assert_string_equal(e.field, "host.cpu_model");
	{
		json_t *arr = json_array();

		assert_null(aw_result_from_json(arr, NULL, &e));
		assert_string_equal(e.code, "type");
		json_decref(arr);
	}
	json_decref(doc);
	aw_result_free(&r);
}

/* The packed form (aw/refblob.h) of each shape a run's series take (the family, mulchain-v1
 * alone as before the family, none) gives back the same run, the JSON text a store kept before
 * it packs to the same bytes, and what is not a packed series of the run is refused. */
static void test_refblob(void **state)
{
	const unsigned shapes[] = {AW_REF_ALL, 1u << AW_REF_MULCHAIN | 1u << AW_REF_MEMGATHER, 0};

	(void)state;
	for (size_t t = 0; t < sizeof(shapes) / sizeof(shapes[0]); t++) {
		struct aw_result *r = sample_result_with(shapes[t]), *back = sample_result_with(0);
		json_t *ref = aw_result_reference_to_json(r), *a, *b;
		uint8_t *packed, *from_text;
		size_t len, text_len;
		char *text = json_dumps(ref, JSON_COMPACT);
		struct aw_refblob blob;

		assert_non_null(text);
		assert_int_equal(aw_refblob_pack(r, &packed, &len), 0);
		assert_int_equal(aw_refblob_from_json(text, &from_text, &text_len), 0);
		assert_int_equal(len, text_len);
		assert_memory_equal(packed, from_text, len);
		assert_int_equal(aw_refblob_open(packed, len, &blob), 0);
		assert_int_equal(blob.family, shapes[t]);
		assert_int_equal(blob.n_cells, 3);
		assert_true(isnan(aw_refblob_value(&blob, AW_REF_ATOMICADD, 0)) ==
		            !(shapes[t] & 1u << AW_REF_ATOMICADD));
		assert_true(isnan(aw_refblob_value(&blob, AW_REF_MULCHAIN, 3)));
		/* the run as the JSON gives it back */
		for (size_t i = 0; i < back->n_cells; i++)
			back->cells[i].ref_ns[AW_REF_MEMCHASE] = 99;
		assert_int_equal(aw_refblob_to_result(back, packed, len), 0);
		a = aw_result_reference_to_json(r);
		b = aw_result_reference_to_json(back);
		assert_true(json_equal(a, b));
		assert_int_equal(back->references, r->references);
		for (size_t i = 0; i < back->n_cells; i++)
			for (int k = 0; k < AW_REF_COUNT; k++)
				assert_true(isnan(back->cells[i].ref_ns[k])
				                ? isnan(r->cells[i].ref_ns[k])
				                : back->cells[i].ref_ns[k] ==
				                      r->cells[i].ref_ns[k]);
		json_decref(a);
		json_decref(b);
		/* refused: another magic, a cut, a family without mulchain-v1 or with an unknown
		 * kernel, another run's number of cells */
		packed[0] = 'X';
		assert_int_equal(aw_refblob_open(packed, len, &blob), -EINVAL);
		packed[0] = 'A';
		assert_int_equal(aw_refblob_open(packed, len - 1, &blob), -EINVAL);
		assert_int_equal(aw_refblob_open(packed, AW_REFBLOB_HEADER - 1, &blob), -EINVAL);
		assert_int_equal(aw_refblob_open(NULL, 0, &blob), -EINVAL);
		packed[4] = (uint8_t)(1u << AW_REF_MEMCHASE);
		assert_int_equal(aw_refblob_open(packed, len, &blob), -EINVAL);
		packed[4] = (uint8_t)(1u << AW_REF_COUNT | 1u);
		assert_int_equal(aw_refblob_open(packed, len, &blob), -EINVAL);
		packed[4] = (uint8_t)shapes[t];
		aw_result_free(&back);
		back = sample_result_with(0);
		assert_non_null(aw_result_add_cell(back));
		assert_int_equal(aw_refblob_to_result(back, packed, len), -EINVAL);
		aw_result_free(&back);
		free(packed);
		free(from_text);
		free(text);
		json_decref(ref);
		aw_result_free(&r);
	}
	{
		/* no series of mulchain-v1 in a text: none; not JSON, or unequal series: refused */
		uint8_t *p = (uint8_t *)"x";
		size_t len = 1;

		assert_int_equal(aw_refblob_from_json("{\"references\":[{\"kernel\":\"nope-v9\","
		                                      "\"values\":[1]}]}",
		                                      &p, &len),
		                 0);
		assert_null(p);
		assert_int_equal(len, 0);
		assert_int_equal(aw_refblob_from_json("{not json", &p, &len), -EINVAL);
		assert_int_equal(aw_refblob_from_json(
		                     "{\"kernel\":\"mulchain-v1\",\"values\":[1,2],\"references\":["
		                     "{\"kernel\":\"mulchain-v1\",\"values\":[1,2]},"
		                     "{\"kernel\":\"memchase-v1\",\"values\":[1]}]}",
		                     &p, &len),
		                 -EINVAL);
		assert_null(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_keys),           cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_rejections),     cmocka_unit_test(test_confirmation_fields),
	    cmocka_unit_test(test_limits),         cmocka_unit_test(test_reference),
	    cmocka_unit_test(test_references),     cmocka_unit_test(test_references_rejections),
	    cmocka_unit_test(test_trigger_bisect), cmocka_unit_test(test_refblob),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
