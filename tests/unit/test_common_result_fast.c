/* The fast reader of uploads (aw_result_parse_fast()) against the slow path (jansson and
 * aw_result_from_json()): realistic documents, written every way jansson writes them, are taken
 * by the fast path; and for those and for many mutations of them (byte edits, cuts, repeated
 * and unknown members, odd numbers, escapes, tight limits), whenever the fast path accepts a
 * document the slow path accepts it too and builds the same model, bit for bit. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "aw/result.h"
#include "result_same.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void) /* splitmix64: the same mutations every run */
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static size_t below(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}

/* The rounds of a randomised check: n, over AW_TEST_ROUNDS_DIV (1 to 16; the build sets it
 * where every round costs more, under qemu-aarch64 and under ASan: the same kinds of mutation,
 * fewer of them). */
static unsigned rounds_of(unsigned n)
{
	const char *env = getenv("AW_TEST_ROUNDS_DIV");
	char *end;
	unsigned long div = env ? strtoul(env, &end, 10) : 1;

	if (env && (*end || div < 1 || div > 16)) {
		fprintf(stderr, "bad AW_TEST_ROUNDS_DIV '%s': 1 to 16\n", env);
		fail();
	}
	return (unsigned)(n / div);
}

struct tally {
	unsigned fast, slow, both;
};

static struct aw_result *slow_parse(const char *text, size_t len,
                                    const struct aw_result_limits *lim)
{
	json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	struct aw_result *r;
	struct aw_verr e;

	if (!doc)
		return NULL;
	r = aw_result_from_json(doc, lim, &e);
	json_decref(doc);
	return r;
}

/* The differential check of one text; returns whether the fast path took it. */
static bool check(const char *text, size_t len, const struct aw_result_limits *lim, struct tally *t)
{
	struct aw_result *fast = aw_result_parse_fast(text, len, lim);
	struct aw_result *slow = slow_parse(text, len, lim);
	bool took = fast != NULL;

	if (fast && (!slow || !result_same(fast, slow))) {
		fprintf(stderr, "fast path %s: %.*s\n",
		        slow ? "differs" : "accepts what slow refuses",
		        (int)(len < 2000 ? len : 2000), text);
		fail();
	}
	t->fast += fast != NULL;
	t->slow += slow != NULL;
	t->both += fast && slow;
	aw_result_free(&fast);
	aw_result_free(&slow);
	return took;
}

/* ---- documents ---- */

static double jitter(double lo, double hi)
{
	return lo + (hi - lo) * (double)(rnd() >> 11) / 9007199254740992.0;
}

static void fill_stats(struct aw_cell *c, double base)
{
	c->n = 200;
	c->batch = 4096;
	c->p50 = base * jitter(0.97, 1.03);
	c->min = c->p50 * jitter(0.9, 0.99);
	c->p95 = c->p50 * jitter(1.01, 1.2);
	c->p99 = c->p95 * jitter(1.01, 1.5);
	c->max = c->p99 * jitter(1.0, 4.0);
	c->mean = (c->p50 + c->p95) / 2;
	c->stddev = c->p50 * 0.03;
	c->ci_lo = c->p50 * 0.995;
	c->ci_hi = c->p50 * 1.005;
	c->baseline_ns = 0.312;
}

/* A realistic document (as bench/collector/ingest_bench.c makes them, the agent's shapes):
 * plain, reader, contended, subject, kernel, skipped and failed cells; `refs`: the reference
 * kernels it carries (bits of enum aw_ref; with `old`, mulchain-v1 as a "reference" object). */
static struct aw_result *make_doc(int cells, unsigned refs, bool old)
{
	static const char *const ops[] = {"plain", "llsc", "stadd", "ldadd", "cas", "swp"};
	struct aw_result *r = aw_result_new();

	assert_non_null(r);
	assert_int_equal(aw_set_str(&r->project, "linux"), 0);
	assert_int_equal(aw_set_str(&r->commit, "0123456789abcdef0123456789abcdef01234567"), 0);
	assert_int_equal(aw_set_str(&r->ref, "refs/heads/main"), 0);
	assert_int_equal(aw_set_str(&r->commit_time, "2026-11-29T09:58:00Z"), 0);
	assert_int_equal(aw_set_str(&r->matrix_name, "default"), 0);
	assert_int_equal(aw_set_str(&r->matrix_hash, "9a8b7c6d5e4f3a2b"), 0);
	assert_int_equal(aw_set_str(&r->matrix_profile, "full"), 0);
	r->matrix_version = 3;
	r->trigger = AW_TRIGGER_CI;
	r->confirm = 2;
	snprintf(r->started_at, sizeof(r->started_at), "2026-11-29T10:00:00.000000Z");
	snprintf(r->finished_at, sizeof(r->finished_at), "2026-11-29T10:03:12.500000Z");
	r->host = json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:{s:s, s:i, s:b, s:n}, s:{s:f}}",
	                    "name", "bench-host-1", "arch", "aarch64", "cpu_model",
	                    "Neoverse-V2 \xc2\xae", "platform_hash", "5f1c2e9a0b7d3c41", "labels",
	                    "cloud", "aws", "instance", "c8g.metal-48xl", "stable", "part", "0xd4f",
	                    "cpus", 64, "lse", 1, "none", "changing", "timer_hz", 1e9);
	r->meta = json_pack("{s:s, s:[i, f, s]}", "agent", "atomwatch-agent 0.1.0", "notes", 1, 2.5,
	                    "tab\there");
	assert_non_null(r->host);
	assert_non_null(r->meta);
	for (int i = 0; (int)r->n_cells < cells; i++) {
		struct aw_cell *c = aw_result_add_cell(r);

		assert_non_null(c);
		assert_int_equal(aw_set_str(&c->op, ops[i % 6]), 0);
		c->cpu = i / 6;
		fill_stats(c, i % 6 == 0 ? 0.9 : 5.1);
		switch (i % 11) {
		case 3:
			assert_int_equal(aw_set_str(&c->reader, "srcu_fast"), 0);
			break;
		case 4:
			c->contender_cpu = 1 + i % 3;
			c->c = 100;
			c->d = 10;
			assert_int_equal(aw_set_str(&c->placement, i % 2 ? "near" : "far"), 0);
			break;
		case 5:
			assert_int_equal(aw_set_str(&c->subject, "mylib"), 0);
			break;
		case 6:
			assert_int_equal(aw_set_str(&c->kernel, "srcu-fast"), 0);
			break;
		case 7:
			c->status = AW_CELL_SKIPPED;
			c->n = 0;
			c->p50 = NAN;
			c->min = c->p95 = c->p99 = c->max = c->mean = c->stddev = NAN;
			c->ci_lo = c->ci_hi = NAN;
			assert_int_equal(aw_set_str(&c->reason, "needs LSE"), 0);
			break;
		case 8:
			c->status = AW_CELL_FAILED;
			assert_int_equal(aw_set_str(&c->reason, "timed out"), 0);
			break;
		case 9:
			c->below_resolution = true;
			c->batch = 0;
			break;
		}
		assert_int_equal(aw_cell_make_key(c), 0);
		if (i % 11 == 10) { /* keys are the writer's: any unique string will do */
			char key[48];

			snprintf(key, sizeof(key), "odd key: {x} [1,2] 'q' %d", i);
			assert_int_equal(aw_set_str(&c->key, key), 0);
		}
	}
	if (refs || old) {
		assert_int_equal(aw_result_set_references(r, old ? 1u << AW_REF_MULCHAIN : refs),
		                 0);
		if (old)
			r->references = 0;
		for (size_t i = 0; i < r->n_cells; i++)
			for (int k = 0; k < AW_REF_COUNT; k++)
				if (i % 7 != 3)
					r->cells[i].ref_ns[k] = (double)(i + 1) * (k + 1) / 8.3;
	}
	return r;
}

static char *dump(const struct aw_result *r, size_t flags)
{
	json_t *doc = aw_result_to_json(r);
	char *text;

	assert_non_null(doc);
	text = json_dumps(doc, flags);
	assert_non_null(text);
	json_decref(doc);
	return text;
}

/* The ways documents reach the collector: the agent's compact 10-digit form, and jansson's
 * other forms (indented, sorted keys, 17 digits, ASCII escapes of the host's UTF-8). */
static const size_t forms[] = {
    JSON_COMPACT | JSON_REAL_PRECISION(10), JSON_INDENT(2) | JSON_REAL_PRECISION(10),
    JSON_COMPACT | JSON_SORT_KEYS, JSON_INDENT(1) | JSON_REAL_PRECISION(6),
    JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(12)};
#define N_FORMS (sizeof(forms) / sizeof(forms[0]))

/* Every realistic document, in every form, is taken by the fast path. */
static void test_realistic_documents_take_the_fast_path(void **state)
{
	static const struct {
		int cells;
		unsigned refs;
		bool old;
	} docs[] = {{300, 0, false}, {300, AW_REF_ALL, false}, {40, 1u << AW_REF_MEMCHASE, false},
	            {40, 0, true},   {1, AW_REF_ALL, false},   {0, 0, false}};
	struct tally t = {0};

	(void)state;
	for (size_t d = 0; d < sizeof(docs) / sizeof(docs[0]); d++) {
		struct aw_result *r = make_doc(docs[d].cells, docs[d].refs, docs[d].old);

		for (size_t f = 0; f < N_FORMS; f++) {
			char *text = dump(r, forms[f]);

			if (!check(text, strlen(text), NULL, &t)) {
				fprintf(stderr, "the fast path gave up on doc %zu form %zu\n", d,
				        f);
				fail();
			}
			free(text);
		}
		aw_result_free(&r);
	}
	assert_int_equal(t.fast, t.slow);
}

/* ---- mutations ---- */

static const char *const odd_numbers[] = {"1e400",
                                          "-1e400",
                                          "-0",
                                          "-0.0",
                                          "0",
                                          "0.0",
                                          "0e999999999",
                                          "1.0000000000000002",
                                          "5e-324",
                                          "4.9406564584124654e-324",
                                          "2.2250738585072014e-308",
                                          "1e-400",
                                          "9223372036854775807",
                                          "9223372036854775808",
                                          "-9223372036854775808",
                                          "123456789012345678",
                                          "1234567890123456789",
                                          "1e22",
                                          "1e23",
                                          "9007199254740993",
                                          "9007199254740993.0",
                                          "0.1",
                                          "1.5e3",
                                          "1E5",
                                          "1e+5",
                                          "1e-5",
                                          "00",
                                          "01",
                                          "1.",
                                          ".5",
                                          "1e",
                                          "-",
                                          "+1",
                                          "1.0e-22",
                                          "123456789012345.6",
                                          "1234567890123456.7",
                                          "4.35",
                                          "0.000000000000000000001234",
                                          "1000000000000000000000000000000",
                                          "0.30000000000000004",
                                          "1.7976931348623157e308",
                                          "1.7976931348623159e308",
                                          "3",
                                          "65535",
                                          "65536",
                                          "1099511627776",
                                          "1099511627777",
                                          "16",
                                          "17",
                                          "2147483647",
                                          "2147483648",
                                          "null",
                                          "true",
                                          "false",
                                          "\"1\"",
                                          "{}",
                                          "[]",
                                          "1x",
                                          "1.5.5",
                                          "0x10",
                                          "Infinity",
                                          "NaN",
                                          "1e-7",
                                          "2.5e-07",
                                          "0.0000001"};
#define N_ODD (sizeof(odd_numbers) / sizeof(odd_numbers[0]))

/* A random number's text, in one of the ways a writer may print it. */
static void random_number(char *buf, size_t size)
{
	double x = jitter(1, 10) * pow(10, (double)below(61) - 30);

	switch (below(6)) {
	case 0:
		snprintf(buf, size, "%.*g", (int)below(17) + 1, x);
		break;
	case 1:
		snprintf(buf, size, "%.*e", (int)below(20), x);
		break;
	case 2:
		snprintf(buf, size, "%.*f", (int)below(25), x);
		break;
	case 3:
		snprintf(buf, size, "%llu", (unsigned long long)(rnd() >> below(64)));
		break;
	case 4:
		snprintf(buf, size, "%.10g", jitter(0, 1000));
		break;
	default:
		snprintf(buf, size, "%.*g", (int)below(17) + 1,
		         below(2) ? jitter(0, 1e-300) : jitter(0, 1e300));
		break;
	}
}

/* Text `len` bytes at `at` replaced by `with`; a new string. */
static char *splice(const char *text, size_t len, size_t at, size_t cut, const char *with,
                    size_t wlen, size_t *out_len)
{
	char *s = malloc(len - cut + wlen + 1);

	assert_non_null(s);
	memcpy(s, text, at);
	memcpy(s + at, with, wlen);
	memcpy(s + at + wlen, text + at + cut, len - at - cut);
	*out_len = len - cut + wlen;
	s[*out_len] = '\0';
	return s;
}

/* Where a number token starts at or after `from` (wrapping), and its length; false if none. */
static bool find_number(const char *text, size_t len, size_t from, size_t *at, size_t *n)
{
	for (size_t k = 0; k < len; k++) {
		size_t i = (from + k) % len;

		if ((text[i] == '-' || (text[i] >= '0' && text[i] <= '9')) && i &&
		    (text[i - 1] == ':' || text[i - 1] == '[' || text[i - 1] == ',' ||
		     text[i - 1] == ' ')) {
			*at = i;
			for (*n = 0; i + *n < len && strchr("0123456789+-.eE", text[i + *n]);
			     (*n)++)
				;
			return true;
		}
	}
	return false;
}

static const char *const members[] = {"\"key\":\"op=x\"",
                                      "\"op\":\"stadd\"",
                                      "\"unit\":\"ns\"",
                                      "\"status\":\"ok\"",
                                      "\"p50\":1",
                                      "\"n\":1",
                                      "\"cpu\":0",
                                      "\"reason\":\"r\"",
                                      "\"schema\":\"atomwatch.result/1\"",
                                      "\"cells\":[]",
                                      "\"meta\":null",
                                      "\"reference\":null",
                                      "\"references\":null",
                                      "\"confirm\":1",
                                      "\"name\":\"h\"",
                                      "\"labels\":{}",
                                      "\"version\":1",
                                      "\"kernel\":\"mulchain-v1\"",
                                      "\"values\":[]",
                                      "\"unknown\":{\"deep\":[1,{\"x\":null}]}",
                                      "\"commit\":null",
                                      "\"below_resolution\":null",
                                      "\"batch\":null",
                                      "\"ci_lo\":0",
                                      "\"\":0",
                                      "\"k\\u0065y\":\"a\""};
#define N_MEMBERS (sizeof(members) / sizeof(members[0]))

static const char *const escapes[] = {"\\u0041",      "\\/",
                                      "\\\"",         "\\\\",
                                      "\\n",          "\\u0000",
                                      "\\u00e9",      "\\ud83d\\ude00",
                                      "\\ud800",      "\\udc00x",
                                      "\\u007f",      "\\t",
                                      "\xc3\xa9",     "\xff",
                                      "\xed\xa0\x80", "\x7f",
                                      "\xc0\xaf",     "\xf4\x90\x80\x80"};
#define N_ESCAPES (sizeof(escapes) / sizeof(escapes[0]))

/* One random mutation of text; a new string. */
static char *mutate(const char *text, size_t len, size_t *out_len)
{
	static const char bytes[] = "\"\\{}[],:01-.eE nulltrue \t\n\x7f\xc3\x80";
	char buf[96];
	size_t at = below(len), n;

	switch (below(9)) {
	case 0: /* a byte */
		buf[0] = below(4) ? bytes[below(sizeof(bytes) - 1)] : (char)rnd();
		return splice(text, len, at, at < len, buf, 1, out_len);
	case 1: /* a cut */
		n = below(24) + 1;
		return splice(text, len, at, at + n <= len ? n : len - at, "", 0, out_len);
	case 2: /* a range again */
		n = below(40) + 1;
		n = at + n <= len ? n : len - at;
		return splice(text, len, at, 0, text + at, n, out_len);
	case 3: /* the text cut short */
		return splice(text, len, at, len - at, "", 0, out_len);
	case 4: /* an odd number */
	case 5:
		if (!find_number(text, len, at, &at, &n))
			return splice(text, len, 0, 0, "", 0, out_len);
		if (below(2))
			snprintf(buf, sizeof(buf), "%s", odd_numbers[below(N_ODD)]);
		else
			random_number(buf, sizeof(buf));
		return splice(text, len, at, n, buf, strlen(buf), out_len);
	case 6: { /* a member, known (often repeated) or not, at the start of an object */
		const char *brace = memchr(text + at, '{', len - at);

		if (!brace)
			brace = memchr(text, '{', len);
		snprintf(buf, sizeof(buf), "%s,", members[below(N_MEMBERS)]);
		at = (size_t)(brace - text) + 1;
		return splice(text, len, at, 0, buf, strlen(buf), out_len);
	}
	case 7: { /* an escape or a byte outside ASCII in a string, after a letter */
		for (size_t k = 0; k < len; k++, at = (at + 1) % len)
			if (text[at] >= 'a' && text[at] <= 'z' && at && text[at - 1] >= 'a' &&
			    text[at - 1] <= 'z')
				break;
		snprintf(buf, sizeof(buf), "%s", escapes[below(N_ESCAPES)]);
		return splice(text, len, at, 0, buf, strlen(buf), out_len);
	}
	default: { /* a member dropped: from a '"' after ',' or '{' to the next ',' */
		const char *q = text + at, *comma;

		while (q < text + len && !(q > text && *q == '"' && (q[-1] == ',' || q[-1] == '{')))
			q++;
		comma = q < text + len ? memchr(q, ',', (size_t)(text + len - q)) : NULL;
		if (!comma)
			return splice(text, len, 0, 0, "", 0, out_len);
		return splice(text, len, (size_t)(q - text), (size_t)(comma - q) + 1, "", 0,
		              out_len);
	}
	}
}

static void mutate_and_check(const struct aw_result *r, unsigned rounds,
                             const struct aw_result_limits *lim, struct tally *t)
{
	for (unsigned i = 0; i < rounds; i++) {
		char *text = dump(r, forms[below(N_FORMS)]), *m;
		size_t len = strlen(text), mlen;

		/* one to three mutations on top of each other */
		for (size_t k = below(3) + 1; k > 0; k--) {
			m = mutate(text, len, &mlen);
			free(text);
			text = m;
			len = mlen;
		}
		check(text, len, lim, t);
		free(text);
	}
}

static void test_mutations(void **state)
{
	/* at the documents' own sizes: 12 cells, a 40-digit commit, 2 labels */
	const struct aw_result_limits tight = {.max_cells = 12, .max_string = 40, .max_labels = 2};
	struct tally t = {0}, tt = {0};
	struct aw_result *docs[] = {
	    make_doc(12, AW_REF_ALL, false), make_doc(12, 0, true), make_doc(12, 0, false),
	    make_doc(6, 1u << AW_REF_MULINDEP, false), make_doc(120, AW_REF_ALL, false)};

	(void)state;
	for (size_t d = 0; d < sizeof(docs) / sizeof(docs[0]); d++) {
		unsigned rounds = rounds_of(docs[d]->n_cells > 100 ? 300 : 4000);

		mutate_and_check(docs[d], rounds, NULL, &t);
		mutate_and_check(docs[d], rounds / 8, &tight, &tt);
		aw_result_free(&docs[d]);
	}
	fprintf(stderr,
	        "mutations: fast took %u, slow took %u, both %u; tight limits: %u, %u, %u\n",
	        t.fast, t.slow, t.both, tt.fast, tt.slow, tt.both);
	/* the test means something only if many mutated documents stay valid and go fast (1,467
	 * of the 16,300 took the fast path here) */
	assert_true(t.fast > rounds_of(1000));
	assert_true(t.slow > t.fast);
}

/* Numbers of every shape in the fields that take any non-negative value: the fast path's
 * doubles are strtod's, bit for bit. */
static void test_numbers(void **state)
{
	struct aw_result *r = make_doc(3, 1u << AW_REF_MULCHAIN, false);
	char *text = dump(r, JSON_COMPACT | JSON_REAL_PRECISION(10));
	struct tally t = {0};
	size_t len = strlen(text);
	unsigned rounds = rounds_of(20000);

	(void)state;
	for (unsigned i = 0; i < rounds; i++) {
		char num[96], *m = NULL;
		const char *keys[] = {"\"stddev\":", "\"baseline_ns\":", "\"values\":["};
		const char *at = strstr(text, keys[below(3)]);
		size_t n, mlen, pos;

		assert_non_null(at);
		pos = (size_t)(at - text) + strcspn(at, "0123456789");
		assert_true(find_number(text, len, pos, &pos, &n));
		random_number(num, sizeof(num));
		m = splice(text, len, pos, n, num, strlen(num), &mlen);
		/* it may give up only on what strtod or jansson could not read alike: long
		 * integers (jansson refuses some), long tokens, overflow and underflow */
		if (!check(m, mlen, NULL, &t) && strlen(num) < 60 &&
		    (strpbrk(num, ".e") || strlen(num) <= 18) && strtod(num, NULL) < 1e300 &&
		    strtod(num, NULL) > 1e-300) {
			fprintf(stderr, "the fast path gave up on %s\n", num);
			fail();
		}
		free(m);
	}
	free(text);
	aw_result_free(&r);
	fprintf(stderr, "numbers: fast took %u of %u, slow %u\n", t.fast, rounds, t.slow);
	assert_true(t.fast > rounds / 4 * 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_realistic_documents_take_the_fast_path),
	    cmocka_unit_test(test_mutations),
	    cmocka_unit_test(test_numbers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
