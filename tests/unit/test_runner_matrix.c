/* The matrix file reader (runner/matrix.c): the shipped configs/matrix.yaml and its resolved
 * profiles, every error with its exact line:col and message, the hash's canonical form and its
 * stability, and that nothing leaks or lingers after a failure (run it under the sanitizers). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aw/buf.h"
#include "aw/sha256.h"
#include "aw/util.h"
#include "internal.h"

/* A complete one-profile matrix, 11 lines; cases append profiles from line 12 on. */
#define BASE                                                        \
	"name: m\n"                                                 \
	"version: 1\n"                                              \
	"profiles:\n"                                               \
	"  default:\n"                                              \
	"    samples: 10\n"                                         \
	"    batch_min_ns: 1000\n"                                  \
	"    batch_min_ticks: 1000\n"                               \
	"    warmup_ms: 0\n"                                        \
	"    ops: {cpus: all, list: [plain]}\n"                     \
	"    readers: {cpus: first, list: [{reader: urcu_memb}]}\n" \
	"    contention: {cpus: first, placement: [near], ops: [c11_relaxed], c: [10], d: [0]}\n"

#define LABEL "t.yaml"

static int parse(const char *text, struct aw_matrix *m, char **err)
{
	return aw_matrix_parse(text, strlen(text), LABEL, m, err);
}

static void assert_zeroed(const struct aw_matrix *m)
{
	assert_null(m->path);
	assert_null(m->name);
	assert_null(m->profiles);
	assert_int_equal(m->n_profiles, 0);
	assert_int_equal(m->version, 0);
}

static void assert_names(char *const *got, size_t n_got, const char *const *want)
{
	size_t n = 0;

	while (want[n])
		n++;
	assert_int_equal(n_got, n);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(got[i], want[i]);
}

static void assert_values(const int64_t *got, size_t n_got, const int64_t *want, size_t n)
{
	assert_int_equal(n_got, n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(got[i], want[i]);
}

/* ---- the shipped matrix ---- */

static const char *const srcu_ops[] = {
    "plain",           "llsc",     "stadd",     "ldadd",       "prfm_keep_stadd",
    "prfm_strm_stadd", "lock_inc", "lock_xadd", "c11_relaxed", NULL};
static const char *const nmisafe_ops[] = {"llsc",      "stadd",       "ldadd",      "lock_inc",
                                          "lock_xadd", "c11_relaxed", "c11_seqcst", NULL};
static const char *const contention_ops[] = {
    "llsc",      "stadd",       "ldadd", "prfm_keep_stadd", "prfm_strm_stadd", "lock_inc",
    "lock_xadd", "c11_relaxed", NULL};

static void assert_default_readers(const struct aw_profile *p)
{
	static const char *const names[] = {"srcu", "srcu_fast", "srcu_nmisafe", "urcu_memb"};

	assert_int_equal(p->n_readers, 4);
	for (size_t i = 0; i < 4; i++)
		assert_string_equal(p->readers[i].reader, names[i]);
	assert_names(p->readers[0].ops, p->readers[0].n_ops, srcu_ops);
	assert_names(p->readers[1].ops, p->readers[1].n_ops, srcu_ops);
	assert_names(p->readers[2].ops, p->readers[2].n_ops, nmisafe_ops);
	assert_null(p->readers[3].ops);
	assert_int_equal(p->readers[3].n_ops, 0);
}

/* The default profile's op list is every op of opnames.c, in its order. */
static void assert_every_op(const struct aw_profile *p)
{
	unsigned n;
	const struct aw_op_info *ops = aw_op_infos(&n);

	assert_int_equal(p->n_ops, n);
	for (unsigned i = 0; i < n; i++)
		assert_string_equal(p->ops[i], ops[i].name);
}

static void test_shipped_matrix(void **state)
{
	const char *src = getenv("AW_SOURCE_DIR");
	struct aw_matrix m;
	const struct aw_profile *d, *q, *f;
	char *path, *err = NULL;
	char hd[AW_SHA256_HEX_LEN + 1], hq[AW_SHA256_HEX_LEN + 1], hf[AW_SHA256_HEX_LEN + 1];

	(void)state;
	assert_non_null(src);
	path = aw_asprintf("%s/configs/matrix.yaml", src);
	assert_non_null(path);
	assert_int_equal(aw_matrix_load(path, &m, &err), 0);
	assert_null(err);
	assert_string_equal(m.path, path);
	assert_string_equal(m.name, "atomwatch-matrix");
	assert_int_equal(m.version, 1);
	assert_int_equal(m.n_profiles, 4);

	d = aw_matrix_profile(&m, "default");
	q = aw_matrix_profile(&m, "quick");
	f = aw_matrix_profile(&m, "full");
	assert_non_null(d);
	assert_non_null(q);
	assert_non_null(f);
	assert_null(aw_matrix_profile(&m, "nope"));

	assert_string_equal(d->name, "default");
	assert_int_equal(d->samples, 200);
	assert_int_equal(d->batch_min_ns, 20000);
	assert_int_equal(d->batch_min_ticks, 1000);
	assert_int_equal(d->warmup_ns, 2000000);
	assert_string_equal(d->op_cpus, "all");
	assert_every_op(d);
	assert_string_equal(d->reader_cpus, "first-per-type");
	assert_default_readers(d);
	assert_string_equal(d->contention_cpus, "first");
	assert_true(d->near);
	assert_true(d->far);
	assert_names(d->contention_ops, d->n_contention_ops, contention_ops);
	assert_values(d->c_values, d->n_c, (const int64_t[]){10, 100, 1000}, 3);
	assert_values(d->d_values, d->n_d, (const int64_t[]){0, 100}, 2);

	/* quick: extends default, overrides samples, ops.cpus and three contention keys */
	assert_int_equal(q->samples, 100);
	assert_int_equal(q->batch_min_ns, 20000);
	assert_int_equal(q->batch_min_ticks, 1000);
	assert_int_equal(q->warmup_ns, 2000000);
	assert_string_equal(q->op_cpus, "first-per-type");
	assert_every_op(q);
	assert_string_equal(q->reader_cpus, "first-per-type");
	assert_default_readers(q);
	assert_string_equal(q->contention_cpus, "first");
	assert_true(q->near);
	assert_false(q->far);
	assert_names(q->contention_ops, q->n_contention_ops, contention_ops);
	assert_values(q->c_values, q->n_c, (const int64_t[]){100}, 1);
	assert_values(q->d_values, q->n_d, (const int64_t[]){0, 100}, 2);
	/* an inherited list is a copy, not the base's memory */
	assert_ptr_not_equal(q->ops, d->ops);
	assert_ptr_not_equal(q->readers, d->readers);

	/* full: extends default, overrides samples, readers.cpus, c and d */
	assert_int_equal(f->samples, 500);
	assert_int_equal(f->batch_min_ns, 20000);
	assert_string_equal(f->op_cpus, "all");
	assert_every_op(f);
	assert_string_equal(f->reader_cpus, "all");
	assert_default_readers(f);
	assert_string_equal(f->contention_cpus, "first");
	assert_true(f->near);
	assert_true(f->far);
	assert_names(f->contention_ops, f->n_contention_ops, contention_ops);
	assert_values(f->c_values, f->n_c, (const int64_t[]){0, 1, 10, 30, 100, 1000, 10000}, 7);
	assert_values(f->d_values, f->n_d, (const int64_t[]){0, 10, 100, 200, 300}, 5);

	/* no macro check but in the profile that asks for one */
	assert_int_equal(d->n_macro_tools + q->n_macro_tools + f->n_macro_tools, 0);
	{
		const struct aw_profile *mc = aw_matrix_profile(&m, "macro");
		char hm[AW_SHA256_HEX_LEN + 1];

		assert_non_null(mc);
		assert_int_equal(mc->samples, q->samples);
		assert_int_equal(mc->macro_runs, 5);
		assert_int_equal(mc->macro_groups, 4);
		assert_int_equal(mc->macro_loops, 200);
		assert_int_equal(mc->n_macro_tools, 2);
		assert_string_equal(mc->macro_tools[0], "hackbench");
		assert_string_equal(mc->macro_tools[1], "perf-messaging");
		assert_int_equal(aw_matrix_hash(&m, mc, hm), 0);
		assert_int_equal(aw_matrix_hash(&m, q, hq), 0);
		assert_string_not_equal(hm, hq); /* the check is part of what was measured */
	}
	assert_int_equal(aw_matrix_hash(&m, d, hd), 0);
	assert_int_equal(aw_matrix_hash(&m, q, hq), 0);
	assert_int_equal(aw_matrix_hash(&m, f, hf), 0);
	assert_int_equal(strlen(hd), AW_SHA256_HEX_LEN);
	assert_string_not_equal(hd, hq);
	assert_string_not_equal(hd, hf);
	assert_string_not_equal(hq, hf);

	aw_matrix_release(&m);
	assert_zeroed(&m);
	free(path);
}

/* The quick profile must stay quick (DESIGN: under ~20 s on a 2-CPU x86 VM): count its cells on
 * such a host, as the planner will, and bound their cost. */
static void test_quick_is_quick(void **state)
{
	const char *src = getenv("AW_SOURCE_DIR");
	struct aw_matrix m;
	const struct aw_profile *q;
	char *path, *err = NULL;
	double cells = 0, per_cell_s;

	(void)state;
	assert_non_null(src);
	path = aw_asprintf("%s/configs/matrix.yaml", src);
	assert_non_null(path);
	assert_int_equal(aw_matrix_load(path, &m, &err), 0);
	q = aw_matrix_profile(&m, "quick");
	assert_non_null(q);
	for (size_t i = 0; i < q->n_ops; i++)
		cells += aw_op_on_arch(aw_op_lookup(q->ops[i]), "x86_64") ? 1 : 0;
	for (size_t r = 0; r < q->n_readers; r++) {
		size_t n = q->readers[r].n_ops ? 0 : 1;

		for (size_t i = 0; i < q->readers[r].n_ops; i++)
			n += aw_op_on_arch(aw_op_lookup(q->readers[r].ops[i]), "x86_64");
		cells += (double)n;
	}
	for (size_t i = 0; i < q->n_contention_ops; i++)
		cells += aw_op_on_arch(aw_op_lookup(q->contention_ops[i]), "x86_64")
		             ? (double)(q->n_c * q->n_d * (q->near + q->far))
		             : 0;
	/* timed + empty loop per sample, plus warm-up and calibration (a generous 50 ms) */
	per_cell_s = 2.0 * q->samples * (double)q->batch_min_ns / 1e9 + q->warmup_ns / 1e9 + 0.05;
	assert_true(cells * per_cell_s < 10.0);
	aw_matrix_release(&m);
	free(path);
}

/* ---- errors ---- */

struct error_case {
	const char *what;
	const char *text;
	const char *message; /* without the "t.yaml:" prefix */
};

static const struct error_case error_cases[] = {
    /* YAML itself */
    {"syntax", "name: m\n version: 1\n", "2:9: mapping values are not allowed in this context"},
    {"syntax with context", "name: m\nversion: 1\nprofiles: {a: [1\n",
     "4:1: did not find expected ',' or ']' (while parsing a flow sequence at 3:15)"},
    {"bad utf-8", "name: m\nversion: 1\nprofiles:\n  a\xff: 1\n",
     "4:4: invalid leading UTF-8 octet (0xFF)"},
    {"nul in scalar", "name: \"a\\0b\"\n", "1:7: scalars must not contain NUL characters"},
    {"alias", "name: &n m\nversion: *n\n",
     "2:10: aliases are not supported (use 'extends' to share settings)"},
    {"two documents", BASE "---\nname: x\n",
     "12:1: more than one YAML document in the matrix file"},
    {"empty", "", "1:1: the matrix file is empty (expected name, version and profiles)"},
    {"only comments", "# nothing\n",
     "1:1: the matrix file is empty (expected name, version and profiles)"},
    {"nesting", "name: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n",
     "1:38: nesting deeper than 32 levels"},

    /* the top level */
    {"root not a mapping", "- name\n", "1:1: the matrix must be a mapping, got a sequence"},
    {"unknown top key", "nmae: m\n", "1:1: unknown key 'nmae' in the matrix"},
    {"duplicate top key", "name: m\nname: n\n", "2:1: duplicate key 'name' in the matrix"},
    {"non-scalar key", "[name]: m\n", "1:1: keys in the matrix must be scalars, got a sequence"},
    {"missing name", "version: 1\nprofiles: {}\n", "1:1: missing 'name' in the matrix"},
    {"missing version", "name: m\nprofiles: {}\n", "1:1: missing 'version' in the matrix"},
    {"missing profiles", "name: m\nversion: 1\n", "1:1: missing 'profiles' in the matrix"},
    {"bad name", "name: a b\nversion: 1\n",
     "1:7: bad matrix name 'a b' (expected [A-Za-z0-9._-]{1,64})"},
    {"name not a scalar", "name: {a: 1}\n",
     "1:7: 'name' in the matrix must be a scalar, got a mapping"},
    {"version zero", "name: m\nversion: 0\n",
     "2:10: 'version' in the matrix must be an integer in 1..2147483647, got '0'"},
    {"version not a number", "name: m\nversion: one\n",
     "2:10: 'version' in the matrix must be an integer in 1..2147483647, got 'one'"},
    {"version negative", "name: m\nversion: -3\n",
     "2:10: 'version' in the matrix must be an integer in 1..2147483647, got '-3'"},
    {"version too large", "name: m\nversion: 99999999999999999999999\n",
     "2:10: 'version' in the matrix must be an integer in 1..2147483647, got "
     "'99999999999999999999999'"},
    {"version a sequence", "name: m\nversion: [1]\n",
     "2:10: 'version' in the matrix must be an integer in 1..2147483647, got a sequence"},
    {"version fractional", "name: m\nversion: 1.5\n",
     "2:10: 'version' in the matrix must be an integer in 1..2147483647, got '1.5'"},

    /* profiles */
    {"profiles a sequence", "name: m\nversion: 1\nprofiles: [default]\n",
     "3:11: 'profiles' in the matrix must be a mapping, got a sequence"},
    {"missing default", "name: m\nversion: 1\nprofiles: {quick: {}}\n",
     "3:11: missing profile 'default' in 'profiles'"},
    {"duplicate profile", BASE "  default: {}\n", "12:3: duplicate profile 'default'"},
    {"bad profile name", BASE "  'a b': {}\n",
     "12:3: bad profile name 'a b' (expected [A-Za-z0-9._-]{1,64})"},
    {"profile not a mapping", BASE "  a: [1]\n",
     "12:6: profile 'a' must be a mapping, got a sequence"},
    {"profile empty", BASE "  a:\n", "12:5: profile 'a' must be a mapping, got nothing"},
    {"unknown key in profile", BASE "  quick:\n    extends: default\n    sampels: 5\n",
     "14:5: unknown key 'sampels' in profile 'quick'"},
    {"duplicate key in profile",
     BASE "  a:\n    extends: default\n    samples: 5\n    samples: 6\n",
     "15:5: duplicate key 'samples' in profile 'a'"},
    {"extends unknown", BASE "  a: {extends: defualt}\n",
     "12:16: profile 'a' extends unknown profile 'defualt'"},
    {"extends itself", BASE "  a: {extends: a}\n", "12:16: extends cycle: 'a' -> 'a'"},
    {"extends cycle", BASE "  a: {extends: b}\n  b: {extends: c}\n  c: {extends: a}\n",
     "14:16: extends cycle: 'a' -> 'b' -> 'c' -> 'a'"},
    {"extends cycle via default",
     "name: m\nversion: 1\nprofiles:\n  default: {extends: x}\n  x: {extends: default}\n",
     "5:16: extends cycle: 'default' -> 'x' -> 'default'"},
    {"extends not a scalar", BASE "  a: {extends: [default]}\n",
     "12:16: 'extends' in profile 'a' must be a scalar, got a sequence"},
    {"missing number", BASE "  a: {ops: {cpus: all}}\n", "12:6: missing 'samples' in profile 'a'"},
    {"missing section",
     BASE "  a: {samples: 1, batch_min_ns: 1, batch_min_ticks: 1000, warmup_ms: 0}\n",
     "12:6: missing 'ops' in profile 'a'"},
    {"missing key in section",
     "name: m\nversion: 1\nprofiles:\n  default:\n    samples: 10\n    batch_min_ns: 1000\n"
     "    batch_min_ticks: 1000\n    warmup_ms: 0\n    ops: {cpus: all}\n",
     "9:10: missing 'list' in 'ops' of profile 'default'"},
    {"missing in base of chain", BASE "  a: {extends: b}\n  b: {samples: 1}\n",
     "13:6: missing 'batch_min_ns' in profile 'b'"},

    /* numbers */
    {"samples zero", BASE "  a: {extends: default, samples: 0}\n",
     "12:34: 'samples' in profile 'a' must be an integer in 1..1000000, got '0'"},
    {"samples too large", BASE "  a: {extends: default, samples: 1000001}\n",
     "12:34: 'samples' in profile 'a' must be an integer in 1..1000000, got '1000001'"},
    {"samples empty", BASE "  a:\n    extends: default\n    samples:\n",
     "14:13: 'samples' in profile 'a' must be an integer in 1..1000000, got nothing"},
    {"batch_min_ns negative", BASE "  a: {extends: default, batch_min_ns: -1}\n",
     "12:39: 'batch_min_ns' in profile 'a' must be an integer in 0..1000000000, got '-1'"},
    {"batch_min_ticks too few", BASE "  a: {extends: default, batch_min_ticks: 999}\n",
     "12:42: 'batch_min_ticks' in profile 'a' must be an integer in 1000..1000000000, got '999'"},
    {"warmup_ms not a number", BASE "  a: {extends: default, warmup_ms: 2ms}\n",
     "12:36: 'warmup_ms' in profile 'a' must be an integer in 0..60000, got '2ms'"},
    {"c negative", BASE "  a: {extends: default, contention: {c: [1, -5]}}\n",
     "12:45: 'c' in 'contention' of profile 'a' must hold integers in 0..1000000, got '-5'"},
    {"d too large", BASE "  a: {extends: default, contention: {d: [1000001]}}\n",
     "12:42: 'd' in 'contention' of profile 'a' must hold integers in 0..1000000, got '1000001'"},
    {"c item a list", BASE "  a: {extends: default, contention: {c: [[1]]}}\n",
     "12:42: 'c' in 'contention' of profile 'a' must hold integers in 0..1000000, got a sequence"},
    {"duplicate c", BASE "  a: {extends: default, contention: {c: [1, 2, 1]}}\n",
     "12:48: duplicate c value 1"},

    /* sections and types */
    {"section a sequence", BASE "  a: {extends: default, ops: [plain]}\n",
     "12:30: 'ops' in profile 'a' must be a mapping, got a sequence"},
    {"section a scalar", BASE "  a: {extends: default, readers: srcu}\n",
     "12:34: 'readers' in profile 'a' must be a mapping, got 'srcu'"},
    {"list a scalar", BASE "  a: {extends: default, ops: {list: plain}}\n",
     "12:37: 'list' in 'ops' of profile 'a' must be a sequence, got 'plain'"},
    {"unknown key in section", BASE "  a: {extends: default, ops: {lst: [plain]}}\n",
     "12:31: unknown key 'lst' in 'ops' of profile 'a'"},
    {"duplicate key in section", BASE "  a: {extends: default, ops: {cpus: all, cpus: first}}\n",
     "12:42: duplicate key 'cpus' in 'ops' of profile 'a'"},
    {"op item a mapping", BASE "  a: {extends: default, ops: {list: [{plain: 1}]}}\n",
     "12:38: 'list' in 'ops' of profile 'a' must list op names, got a mapping"},

    /* ops */
    {"unknown op with hint", BASE "  a: {extends: default, ops: {list: [plain, stad]}}\n",
     "12:45: unknown op 'stad' (did you mean 'stadd'?)"},
    {"unknown op hint 2", BASE "  a: {extends: default, ops: {list: [lock_xad]}}\n",
     "12:38: unknown op 'lock_xad' (did you mean 'lock_xadd'?)"},
    {"unknown op no hint", BASE "  a: {extends: default, ops: {list: [frobnicate]}}\n",
     "12:38: unknown op 'frobnicate'"},
    {"duplicate op", BASE "  a: {extends: default, ops: {list: [plain, llsc, plain]}}\n",
     "12:51: duplicate op 'plain'"},
    {"empty op list", BASE "  a: {extends: default, ops: {list: []}}\n",
     "12:37: 'list' in 'ops' of profile 'a' must not be empty"},
    {"contended plain", BASE "  a: {extends: default, contention: {ops: [plain]}}\n",
     "12:44: op 'plain' cannot run contended: not an atomic increment"},
    {"contended xchg", BASE "  a: {extends: default, contention: {ops: [lock_inc, xchg]}}\n",
     "12:54: op 'xchg' cannot run contended: not an atomic increment"},
    {"contended swp", BASE "  a: {extends: default, contention: {ops: [swp]}}\n",
     "12:44: op 'swp' cannot run contended: not an atomic increment"},
    {"empty contention ops", BASE "  a: {extends: default, contention: {ops: []}}\n",
     "12:43: 'ops' in 'contention' of profile 'a' must not be empty"},
    {"empty c", BASE "  a: {extends: default, contention: {c: []}}\n",
     "12:41: 'c' in 'contention' of profile 'a' must not be empty"},

    /* readers */
    {"unknown reader", BASE "  a: {extends: default, readers: {list: [{reader: srcu_fats}]}}\n",
     "12:51: unknown reader 'srcu_fats'"},
    {"reader entry a scalar", BASE "  a: {extends: default, readers: {list: [srcu]}}\n",
     "12:42: 'list' in 'readers' of profile 'a' must hold mappings, got 'srcu'"},
    {"reader without name", BASE "  a: {extends: default, readers: {list: [{ops: [plain]}]}}\n",
     "12:42: missing 'reader' in an entry of 'readers' in profile 'a'"},
    {"reader unknown key",
     BASE "  a: {extends: default, readers: {list: [{reader: srcu, op: [plain]}]}}\n",
     "12:57: unknown key 'op' in an entry of 'readers' in profile 'a'"},
    {"reader without ops", BASE "  a: {extends: default, readers: {list: [{reader: srcu}]}}\n",
     "12:42: missing 'ops' in reader 'srcu' of profile 'a'"},
    {"reader empty ops",
     BASE "  a: {extends: default, readers: {list: [{reader: srcu, ops: []}]}}\n",
     "12:62: 'ops' in reader 'srcu' of profile 'a' must not be empty"},
    {"reader unknown op",
     BASE "  a: {extends: default, readers: {list: [{reader: srcu, ops: [ldad]}]}}\n",
     "12:63: unknown op 'ldad' (did you mean 'ldadd'?)"},
    {"urcu with ops",
     BASE "  a: {extends: default, readers: {list: [{reader: urcu_memb, ops: [plain]}]}}\n",
     "12:67: reader 'urcu_memb' takes no ops"},
    {"nmisafe on plain",
     BASE
     "  a: {extends: default, readers: {list: [{reader: srcu_nmisafe, ops: [llsc, plain]}]}}\n",
     "12:77: op 'plain' cannot back reader 'srcu_nmisafe': not an atomic increment"},
    {"duplicate reader",
     BASE "  a: {extends: default, readers: {list: [{reader: urcu_memb}, {reader: urcu_memb}]}}\n",
     "12:63: duplicate reader 'urcu_memb'"},
    {"empty readers list", BASE "  a: {extends: default, readers: {list: []}}\n",
     "12:41: 'list' in 'readers' of profile 'a' must not be empty"},

    /* cpus and placement */
    {"bad cpus word", BASE "  a: {extends: default, ops: {cpus: some}}\n",
     "12:37: bad cpus value 'some' in 'ops' of profile 'a' (expected all, first, first-per-type "
     "or a CPU list such as 0,2-3)"},
    {"bad cpus list", BASE "  a: {extends: default, readers: {cpus: '0-'}}\n",
     "12:41: bad cpus value '0-' in 'readers' of profile 'a' (expected all, first, "
     "first-per-type or a CPU list such as 0,2-3)"},
    {"bad cpus range", BASE "  a: {extends: default, contention: {cpus: '3-1'}}\n",
     "12:44: bad cpus value '3-1' in 'contention' of profile 'a' (expected all, first, "
     "first-per-type or a CPU list such as 0,2-3)"},
    {"cpus too large", BASE "  a: {extends: default, ops: {cpus: '99999'}}\n",
     "12:37: bad cpus value '99999' in 'ops' of profile 'a': CPU number above 4095"},
    {"cpus a sequence", BASE "  a: {extends: default, ops: {cpus: [0, 1]}}\n",
     "12:37: 'cpus' in 'ops' of profile 'a' must be a scalar, got a sequence"},
    {"bad placement", BASE "  a: {extends: default, contention: {placement: [near, middle]}}\n",
     "12:56: bad placement 'middle' (expected near or far)"},
    {"duplicate placement", BASE "  a: {extends: default, contention: {placement: [far, far]}}\n",
     "12:55: duplicate placement 'far'"},
    {"empty placement", BASE "  a: {extends: default, contention: {placement: []}}\n",
     "12:49: 'placement' in 'contention' of profile 'a' must not be empty"},
    {"placement a scalar", BASE "  a: {extends: default, contention: {placement: near}}\n",
     "12:49: 'placement' in 'contention' of profile 'a' must be a sequence, got 'near'"},

    /* the macro check: optional, whole when given */
    {"macro unknown tool", BASE "  a: {extends: default, macro: {tools: [sysbench]}}\n",
     "12:41: 'tools' in 'macro' of profile 'a': unknown tool 'sysbench' (hackbench or "
     "perf-messaging)"},
    {"macro tool twice", BASE "  a: {extends: default, macro: {tools: [hackbench, hackbench]}}\n",
     "12:52: 'tools' in 'macro' of profile 'a' lists 'hackbench' twice"},
    {"macro runs zero", BASE "  a: {extends: default, macro: {runs: 0}}\n",
     "12:39: 'runs' in 'macro' of profile 'a' must be an integer in 1..100, got '0'"},
    {"macro incomplete",
     "name: m\nversion: 1\nprofiles:\n  default:\n    samples: 10\n    batch_min_ns: 1000\n"
     "    batch_min_ticks: 1000\n    warmup_ms: 0\n    ops: {cpus: all, list: [plain]}\n"
     "    readers: {cpus: first, list: [{reader: urcu_memb}]}\n"
     "    contention: {cpus: first, placement: [near], ops: [c11_relaxed], c: [10], d: [0]}\n"
     "    macro: {runs: 3, groups: 2, loops: 10}\n",
     "12:12: missing 'tools' in 'macro' of profile 'default'"},
};

static void test_errors(void **state)
{
	int failures = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(error_cases) / sizeof(error_cases[0]); i++) {
		const struct error_case *c = &error_cases[i];
		struct aw_matrix m;
		char *err = NULL, *want = aw_asprintf(LABEL ":%s", c->message);
		int rc;

		assert_non_null(want);
		rc = parse(c->text, &m, &err);
		if (rc != -EINVAL || !err || strcmp(err, want)) {
			print_error("case '%s': rc %d\n  got:  %s\n  want: %s\n", c->what, rc,
			            err ? err : "(none)", want);
			failures++;
		}
		/* nothing is left behind, and releasing again is harmless */
		assert_zeroed(&m);
		aw_matrix_release(&m);
		assert_zeroed(&m);
		free(err);
		free(want);
	}
	assert_int_equal(failures, 0);
}

/* Inputs built by code: lists and maps just past their limits. */
static void test_limits(void **state)
{
	struct aw_buf b;
	struct aw_matrix m;
	char *err = NULL;

	(void)state;
	aw_buf_init(&b, 1 << 20);
	assert_int_equal(aw_buf_puts(&b, BASE "  a: {extends: default, contention: {c: ["), 0);
	for (int i = 0; i < 65; i++)
		assert_int_equal(aw_buf_printf(&b, "%s%d", i ? ", " : "", i), 0);
	assert_int_equal(aw_buf_puts(&b, "]}}\n"), 0);
	assert_int_equal(parse(b.data, &m, &err), -EINVAL);
	/* the 65th value, "64": column 42 + 10 x "N, " + 54 x "NN, " */
	assert_string_equal(err, "t.yaml:12:288: 'c' in 'contention' of profile 'a' holds more "
	                         "than 64 values");
	assert_zeroed(&m);

	aw_buf_reset(&b);
	assert_int_equal(aw_buf_puts(&b, BASE), 0);
	for (int i = 0; i < 64; i++)
		assert_int_equal(aw_buf_printf(&b, "  p%d: {extends: default}\n", i), 0);
	assert_int_equal(parse(b.data, &m, &err), -EINVAL);
	assert_string_equal(err, "t.yaml:75:3: more than 64 profiles");
	assert_zeroed(&m);

	/* 64 profiles (default and 63 more) are fine */
	aw_buf_reset(&b);
	assert_int_equal(aw_buf_puts(&b, BASE), 0);
	for (int i = 0; i < 63; i++)
		assert_int_equal(
		    aw_buf_printf(&b, "  p%d: {extends: %s}\n", i, i ? "p0" : "default"), 0);
	assert_int_equal(parse(b.data, &m, &err), 0);
	assert_int_equal(m.n_profiles, 64);
	assert_int_equal(aw_matrix_profile(&m, "p62")->samples, 10);
	aw_matrix_release(&m);

	/* deep flow nesting is refused at once, not after libyaml's quadratic scan */
	aw_buf_reset(&b);
	assert_int_equal(aw_buf_puts(&b, "name: "), 0);
	for (int i = 0; i < 400000; i++)
		assert_int_equal(aw_buf_puts(&b, "["), 0);
	assert_int_equal(parse(b.data, &m, &err), -EINVAL);
	assert_string_equal(err, "t.yaml:1:38: nesting deeper than 32 levels");

	aw_buf_release(&b);
	free(err);
}

static char *temp_path(void)
{
	char *path =
	    aw_asprintf("%s/aw_matrix_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	int fd;

	assert_non_null(path);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	return path;
}

static void test_files(void **state)
{
	struct aw_matrix m;
	char *err = NULL, *path, *want, *big;
	size_t base_len = strlen(BASE), limit = 1024 * 1024;

	(void)state;
	assert_int_equal(aw_matrix_load("/nonexistent/matrix.yaml", &m, &err), -ENOENT);
	assert_string_equal(err,
	                    "cannot open '/nonexistent/matrix.yaml': No such file or directory");
	assert_zeroed(&m);
	aw_matrix_release(&m);

	/* a directory opens but cannot be read */
	assert_int_equal(aw_matrix_load("/", &m, &err), -EISDIR);
	assert_string_equal(err, "cannot read '/': Is a directory");
	assert_zeroed(&m);

	/* exactly 1 MiB (the file padded with a comment) loads; one byte more does not */
	big = malloc(limit + 2);
	assert_non_null(big);
	memcpy(big, BASE, base_len);
	big[base_len] = '#';
	memset(big + base_len + 1, 'x', limit - base_len - 2);
	big[limit - 1] = '\n';
	path = temp_path();
	assert_int_equal(aw_write_file_atomic(path, big, limit, NULL), 0);
	assert_int_equal(aw_matrix_load(path, &m, &err), 0);
	assert_string_equal(m.path, path);
	assert_string_equal(m.profiles[0].name, "default");
	aw_matrix_release(&m);

	big[limit] = '\n';
	assert_int_equal(aw_write_file_atomic(path, big, limit + 1, NULL), 0);
	assert_int_equal(aw_matrix_load(path, &m, &err), -E2BIG);
	want = aw_asprintf("'%s' is larger than 1048576 bytes", path);
	assert_string_equal(err, want);
	assert_zeroed(&m);
	free(want);

	/* the same limit from memory */
	assert_int_equal(aw_matrix_parse(big, limit + 1, "mem", &m, &err), -E2BIG);
	assert_string_equal(err, "'mem' is larger than 1048576 bytes");
	assert_zeroed(&m);
	aw_matrix_release(&m);

	assert_int_equal(unlink(path), 0);
	free(path);
	free(big);
	free(err);
}

/* ---- hash ---- */

static void hash_of(const char *text, const char *profile, char *out)
{
	struct aw_matrix m;
	char *err = NULL;

	if (parse(text, &m, &err)) {
		print_error("%s\n", err);
		fail();
	}
	assert_non_null(aw_matrix_profile(&m, profile));
	assert_int_equal(aw_matrix_hash(&m, aw_matrix_profile(&m, profile), out), 0);
	aw_matrix_release(&m);
}

/* The canonical text documented in matrix.c, pinned: changing it changes every stored hash. */
static void test_hash_canonical_form(void **state)
{
	static const char canonical[] = "atomwatch.matrix-hash/1\n"
	                                "name=m\n"
	                                "version=1\n"
	                                "profile=default\n"
	                                "samples=10\n"
	                                "batch_min_ns=1000\n"
	                                "batch_min_ticks=1000\n"
	                                "warmup_ns=0\n"
	                                "ops.cpus=all\n"
	                                "ops.list=plain\n"
	                                "readers.cpus=first\n"
	                                "readers.list=urcu_memb()\n"
	                                "contention.cpus=first\n"
	                                "contention.placement=near\n"
	                                "contention.ops=c11_relaxed\n"
	                                "contention.c=10\n"
	                                "contention.d=0\n";
	static const char canonical2[] = "atomwatch.matrix-hash/1\n"
	                                 "name=m2\n"
	                                 "version=7\n"
	                                 "profile=default\n"
	                                 "samples=3\n"
	                                 "batch_min_ns=0\n"
	                                 "batch_min_ticks=2000\n"
	                                 "warmup_ns=5000000\n"
	                                 "ops.cpus=0-2,5\n"
	                                 "ops.list=llsc,plain\n"
	                                 "readers.cpus=first-per-type\n"
	                                 "readers.list=srcu(plain,ldadd);urcu_memb()\n"
	                                 "contention.cpus=all\n"
	                                 "contention.placement=near,far\n"
	                                 "contention.ops=ldadd,llsc\n"
	                                 "contention.c=0,10\n"
	                                 "contention.d=100,0\n";
	char want[AW_SHA256_HEX_LEN + 1], got[AW_SHA256_HEX_LEN + 1];

	(void)state;
	assert_int_equal(aw_sha256_hex(canonical, strlen(canonical), want), 0);
	hash_of(BASE, "default", got);
	assert_string_equal(got, want);

	assert_int_equal(aw_sha256_hex(canonical2, strlen(canonical2), want), 0);
	hash_of(
	    "name: m2\nversion: 7\nprofiles:\n  default:\n    samples: 3\n    batch_min_ns: 0\n"
	    "    batch_min_ticks: 2000\n    warmup_ms: 5\n"
	    "    ops: {cpus: '0,1,2,5', list: [llsc, plain]}\n"
	    "    readers: {cpus: first-per-type, list: [{reader: srcu, ops: [plain, ldadd]},\n"
	    "              {reader: urcu_memb}]}\n"
	    "    contention: {cpus: all, placement: [far, near], ops: [ldadd, llsc], c: [0, 10],\n"
	    "                 d: [100, 0]}\n",
	    "default", got);
	assert_string_equal(got, want);

	/* a profile with a macro check hashes it after everything else */
	{
		static const char with_macro[] = "atomwatch.matrix-hash/1\n"
		                                 "name=m\n"
		                                 "version=1\n"
		                                 "profile=mc\n"
		                                 "samples=10\n"
		                                 "batch_min_ns=1000\n"
		                                 "batch_min_ticks=1000\n"
		                                 "warmup_ns=0\n"
		                                 "ops.cpus=all\n"
		                                 "ops.list=plain\n"
		                                 "readers.cpus=first\n"
		                                 "readers.list=urcu_memb()\n"
		                                 "contention.cpus=first\n"
		                                 "contention.placement=near\n"
		                                 "contention.ops=c11_relaxed\n"
		                                 "contention.c=10\n"
		                                 "contention.d=0\n"
		                                 "macro=runs:3,groups:2,loops:10\n"
		                                 "macro.tools=perf-messaging,hackbench\n";

		assert_int_equal(aw_sha256_hex(with_macro, strlen(with_macro), want), 0);
		hash_of(BASE
		        "  mc:\n    extends: default\n    macro: {runs: 3, groups: 2, loops: 10, "
		        "tools: [perf-messaging, hackbench]}\n",
		        "mc", got);
		assert_string_equal(got, want);
	}
}

static void test_hash_ignores_layout(void **state)
{
	/* BASE rewritten: block style, other key order, comments, quotes, another profile */
	static const char reformatted[] = "# the same matrix\n"
	                                  "profiles:\n"
	                                  "  extra: {extends: default, samples: 99}\n"
	                                  "  default:\n"
	                                  "    contention:\n"
	                                  "      d: [0]          # duty\n"
	                                  "      c:\n"
	                                  "        - 10\n"
	                                  "      ops: ['c11_relaxed']\n"
	                                  "      placement: [\"near\"]\n"
	                                  "      cpus: first\n"
	                                  "    readers:\n"
	                                  "      list:\n"
	                                  "        - {reader: urcu_memb}\n"
	                                  "      cpus: \"first\"\n"
	                                  "    ops:\n"
	                                  "      list:\n"
	                                  "      - plain\n"
	                                  "      cpus: all\n"
	                                  "    warmup_ms: 0\n"
	                                  "    batch_min_ticks: 1000\n"
	                                  "    batch_min_ns: 1000\n"
	                                  "    samples: 10\n"
	                                  "version: 1\n"
	                                  "'name': m\n";
	/* the default profile reached through extends, defined in pieces */
	static const char layered[] =
	    "name: m\nversion: 1\nprofiles:\n"
	    "  base:\n"
	    "    samples: 500\n    batch_min_ns: 1000\n    batch_min_ticks: 1000\n    warmup_ms: 0\n"
	    "    ops: {cpus: first, list: [plain]}\n"
	    "    readers: {cpus: first, list: [{reader: urcu_memb}]}\n"
	    "    contention: {cpus: first, placement: [near, far], ops: [c11_relaxed], c: [10], d: [0]}\n"
	    "  middle: {extends: base, samples: 10, contention: {placement: [near]}}\n"
	    "  default: {extends: middle, ops: {cpus: all}}\n";
	char a[AW_SHA256_HEX_LEN + 1], b[AW_SHA256_HEX_LEN + 1];

	(void)state;
	hash_of(BASE, "default", a);
	hash_of(reformatted, "default", b);
	assert_string_equal(a, b);
	hash_of(layered, "default", b);
	assert_string_equal(a, b);
}

/* Each variant differs from BASE in one value; every hash must differ from every other. */
static void test_hash_sees_every_value(void **state)
{
	static const struct {
		const char *from, *to;
	} edits[] = {
	    {"name: m", "name: n"},
	    {"version: 1", "version: 2"},
	    {"samples: 10", "samples: 11"},
	    {"batch_min_ns: 1000", "batch_min_ns: 1001"},
	    {"batch_min_ticks: 1000", "batch_min_ticks: 1001"},
	    {"warmup_ms: 0", "warmup_ms: 1"},
	    {"cpus: all", "cpus: first"},
	    {"cpus: all", "cpus: '0-1'"},
	    {"list: [plain]", "list: [plain, llsc]"},
	    {"list: [plain]", "list: [llsc]"},
	    {"readers: {cpus: first", "readers: {cpus: all"},
	    {"[{reader: urcu_memb}]", "[{reader: srcu, ops: [plain]}]"},
	    {"[{reader: urcu_memb}]", "[{reader: srcu, ops: [llsc]}]"},
	    {"[{reader: urcu_memb}]", "[{reader: urcu_memb}, {reader: srcu_fast, ops: [plain]}]"},
	    {"contention: {cpus: first", "contention: {cpus: all"},
	    {"placement: [near]", "placement: [far]"},
	    {"placement: [near]", "placement: [near, far]"},
	    {"ops: [c11_relaxed]", "ops: [c11_seqcst]"},
	    {"ops: [c11_relaxed]", "ops: [c11_relaxed, llsc]"},
	    {"c: [10]", "c: [0]"},
	    {"c: [10]", "c: [10, 100]"},
	    {"d: [0]", "d: [1]"},
	    {"d: [0]", "d: [0, 1]"},
	};
	enum {
		N = sizeof(edits) / sizeof(edits[0]) + 1
	};
	char hashes[N][AW_SHA256_HEX_LEN + 1];

	(void)state;
	hash_of(BASE, "default", hashes[0]);
	/* the same values under another profile name */
	hash_of(BASE "  other: {extends: default}\n", "other", hashes[N - 1]);
	for (size_t i = 0; i < N - 2; i++) {
		const char *at = strstr(BASE, edits[i].from);
		char *text;

		assert_non_null(at);
		text = aw_asprintf("%.*s%s%s", (int)(at - BASE), BASE, edits[i].to,
		                   at + strlen(edits[i].from));
		assert_non_null(text);
		hash_of(text, "default", hashes[i + 1]);
		free(text);
	}
	for (size_t i = 0; i < N; i++)
		for (size_t j = i + 1; j < N; j++)
			if (!strcmp(hashes[i], hashes[j])) {
				print_error("variants %zu and %zu hash alike\n", i, j);
				fail();
			}
}

static void test_release_is_safe(void **state)
{
	struct aw_matrix m;
	char *err = NULL;

	(void)state;
	memset(&m, 0, sizeof(m));
	aw_matrix_release(&m);
	aw_matrix_release(NULL);
	assert_int_equal(parse(BASE, &m, &err), 0);
	assert_null(err);
	aw_matrix_release(&m);
	assert_zeroed(&m);
	aw_matrix_release(&m);

	/* a failure deep inside a later profile frees what earlier profiles already hold */
	assert_int_equal(
	    parse(BASE "  a: {extends: default}\n  b: {extends: a, ops: {list: [x]}}\n", &m, &err),
	    -EINVAL);
	assert_zeroed(&m);
	/* a failed parse of a struct that held a matrix: the caller released it first */
	free(err);
	err = NULL;
	/* no *err wanted */
	assert_int_equal(parse("name: [\n", &m, NULL), -EINVAL);
	assert_zeroed(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_shipped_matrix),
	    cmocka_unit_test(test_quick_is_quick),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_limits),
	    cmocka_unit_test(test_files),
	    cmocka_unit_test(test_hash_canonical_form),
	    cmocka_unit_test(test_hash_ignores_layout),
	    cmocka_unit_test(test_hash_sees_every_value),
	    cmocka_unit_test(test_release_is_safe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
