/* The verdict document read from its text (aw_host_verdict_parse_text) against the reference,
 * json_loads() then aw_host_verdict_parse(): the same answer and the same struct for documents
 * the writer gives, for every cut and many one-byte changes of them, and for text jansson
 * refuses or takes at its edges (escapes, numbers, depth, names given twice). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "verdict_doc.h"

static void same_str(const char *a, const char *b)
{
	if (!a || !b)
		assert_ptr_equal(a, b);
	else
		assert_string_equal(a, b);
}

static void same_num(double a, double b)
{
	assert_memory_equal(&a, &b, sizeof(a)); /* NAN too, bit for bit */
}

static void same_metric(const struct aw_metric_verdict *a, const struct aw_metric_verdict *b)
{
	assert_int_equal(a->verdict, b->verdict);
	same_num(a->baseline, b->baseline);
	same_num(a->head, b->head);
	same_num(a->change, b->change);
	same_num(a->change_lo, b->change_lo);
	same_num(a->change_hi, b->change_hi);
	same_num(a->change_ns, b->change_ns);
	assert_int_equal(a->absolute, b->absolute);
	same_num(a->noise, b->noise);
	same_num(a->pvalue, b->pvalue);
	same_num(a->qvalue, b->qvalue);
	same_num(a->threshold, b->threshold);
	assert_int_equal(a->window, b->window);
	assert_int_equal(a->head_n, b->head_n);
	assert_int_equal(a->agree_n, b->agree_n);
	assert_int_equal(a->bimodal, b->bimodal);
	same_str(a->reference, b->reference);
	same_num(a->ref_slope, b->ref_slope);
	same_num(a->ref_gain, b->ref_gain);
	assert_int_equal(a->n_ref_terms, b->n_ref_terms);
	for (size_t k = 0; k < a->n_ref_terms; k++)
		same_num(a->ref_terms[k], b->ref_terms[k]);
	same_str(a->level_by, b->level_by);
	assert_int_equal(a->n_levels, b->n_levels);
	for (size_t j = 0; j < a->n_levels; j++) {
		const struct aw_level *x = &a->levels[j], *y = &b->levels[j];

		same_num(x->share, y->share);
		same_num(x->base, y->base);
		same_num(x->head, y->head);
		same_num(x->change, y->change);
		same_num(x->change_lo, y->change_lo);
		same_num(x->change_hi, y->change_hi);
		same_num(x->noise, y->noise);
		same_num(x->pvalue, y->pvalue);
		assert_int_equal(x->n_base, y->n_base);
		assert_int_equal(x->n_head, y->n_head);
		assert_int_equal(x->verdict, y->verdict);
	}
	assert_int_equal(a->dominant, b->dominant);
	assert_int_equal(a->decided_by, b->decided_by);
	same_str(a->note, b->note);
}

static void same_verdict(const struct aw_host_verdict *a, const struct aw_host_verdict *b)
{
	same_str(a->host, b->host);
	assert_int_equal(a->status, b->status);
	same_str(a->reason, b->reason);
	assert_int_equal(a->n_head_runs, b->n_head_runs);
	for (size_t i = 0; i < a->n_head_runs; i++)
		same_str(a->head_runs[i], b->head_runs[i]);
	assert_int_equal(a->n_runs, b->n_runs);
	for (size_t i = 0; i < a->n_runs; i++) {
		assert_int_equal(a->runs[i].n, b->runs[i].n);
		assert_int_equal(a->runs[i].disturbed, b->runs[i].disturbed);
		for (size_t k = 0; k < a->runs[i].n; k++) {
			same_str(a->runs[i].kernel[k], b->runs[i].kernel[k]);
			same_num(a->runs[i].ratio[k], b->runs[i].ratio[k]);
		}
	}
	assert_int_equal(a->disturbed, b->disturbed);
	assert_int_equal(a->n_baseline_runs, b->n_baseline_runs);
	assert_int_equal(a->n_cells, b->n_cells);
	for (size_t i = 0; i < a->n_cells; i++) {
		const struct aw_cell_verdict *x = &a->cells[i], *y = &b->cells[i];

		same_str(x->key, y->key);
		same_str(x->op, y->op);
		same_str(x->reader, y->reader);
		same_str(x->subject, y->subject);
		assert_int_equal(x->cpu, y->cpu);
		assert_int_equal(x->verdict, y->verdict);
		assert_int_equal(x->n_head, y->n_head);
		assert_int_equal(x->gate, y->gate);
		same_metric(&x->p50, &y->p50);
		same_metric(&x->p99, &y->p99);
	}
	assert_memory_equal(a->counts, b->counts, sizeof(a->counts));
	assert_int_equal(a->warnings, b->warnings);
	assert_int_equal(a->confirm_budget, b->confirm_budget);
	same_str(a->host_changed, b->host_changed);
}

/* The combinations' slopes written (random_metric()) and read (check_text()): the same count
 * shows they travel, not only that both readers agree. */
static size_t terms_written, terms_read;

/* Both readers on `text`: the same return and, when 0, the same verdict. Returns it. */
static int check_text(const char *text)
{
	json_t *doc = json_loads(text, 0, NULL);
	struct aw_host_verdict want, got;
	int want_rc = aw_host_verdict_parse(doc, &want, NULL);
	int got_rc = aw_host_verdict_parse_text(text, &got);

	json_decref(doc);
	if (want_rc != got_rc)
		fail_msg("rc %d, want %d, for: %.400s", got_rc, want_rc, text);
	if (!want_rc) {
		same_verdict(&want, &got);
		for (size_t i = 0; i < got.n_cells; i++)
			terms_read += got.cells[i].p50.n_ref_terms + got.cells[i].p99.n_ref_terms;
		aw_host_verdict_release(&want);
		aw_host_verdict_release(&got);
	}
	return got_rc;
}

static unsigned seed = 1;

static double rnd(void)
{
	return (double)rand_r(&seed) / RAND_MAX;
}

/* A number as the analysis gives them: mostly finite, sometimes unknown (NAN, null). */
static double value(void)
{
	return rnd() < 0.1 ? NAN : (rnd() - 0.3) * pow(10, (int)(rnd() * 12) - 6);
}

static char *text_of(unsigned i)
{
	static const char *const odd[] = {"plain",
	                                  "with \"quotes\" and \\",
	                                  "caf\xc3\xa9 \xf0\x9f\x98\x80",
	                                  "tab\tnl\nctl\x01",
	                                  "/slash/",
	                                  ""};
	char buf[96];

	snprintf(buf, sizeof(buf), "%s %u", odd[i % 6], i);
	return strdup(buf);
}

static void random_metric(struct aw_metric_verdict *m, unsigned i)
{
	m->verdict = (enum aw_verdict)(AW_VERDICT_UNCHANGED + rand_r(&seed) % 9);
	m->baseline = value();
	m->head = value();
	m->change = value();
	m->change_lo = value();
	m->change_hi = value();
	m->change_ns = value();
	m->absolute = rnd() < 0.2;
	m->noise = value();
	m->pvalue = value();
	m->qvalue = value();
	m->threshold = value();
	m->window = (size_t)(rand_r(&seed) % 50);
	m->head_n = (size_t)(rand_r(&seed) % 4);
	m->agree_n = (size_t)(rand_r(&seed) % 4);
	m->bimodal = rnd() < 0.2;
	m->reference = rnd() < 0.3 ? text_of(i) : NULL;
	m->ref_slope = value();
	m->ref_gain = value();
	m->n_ref_terms = m->reference ? (size_t)(rand_r(&seed) % 4) : 0;
	for (size_t k = 0; k < m->n_ref_terms; k++)
		m->ref_terms[k] = value();
	terms_written += m->n_ref_terms;
	m->level_by = rnd() < 0.3 ? text_of(i + 1) : NULL;
	m->n_levels = (size_t)(rand_r(&seed) % (AW_VERDICT_LEVELS + 1));
	for (size_t j = 0; j < m->n_levels; j++) {
		struct aw_level *l = &m->levels[j];

		l->share = value();
		l->base = value();
		l->head = value();
		l->change = value();
		l->change_lo = value();
		l->change_hi = value();
		l->noise = value();
		l->pvalue = value();
		l->n_base = (size_t)(rand_r(&seed) % 40);
		l->n_head = (size_t)(rand_r(&seed) % 3);
		l->verdict = (enum aw_verdict)(rand_r(&seed) % 4 ? AW_VERDICT_UNCHANGED
		                                                 : AW_VERDICT_REGRESSED);
	}
	m->dominant = m->n_levels ? (size_t)rand_r(&seed) % m->n_levels : 0;
	m->decided_by = m->n_levels ? (int)(rand_r(&seed) % m->n_levels) : -1;
	m->note = rnd() < 0.4 ? text_of(i + 2) : NULL;
}

/* A verdict of `cells` cells with every field set now and then, as JSON text. */
static char *random_doc(size_t cells, size_t flags)
{
	struct aw_host_verdict v = {0};
	json_t *j;
	char *text;

	v.host = text_of(7);
	v.status = rnd() < 0.5 ? AW_VERDICT_PASS : AW_VERDICT_UNCONFIRMED;
	v.reason = rnd() < 0.3 ? text_of(8) : NULL;
	v.host_changed = rnd() < 0.3 ? text_of(9) : NULL;
	v.n_baseline_runs = (size_t)(rand_r(&seed) % 100);
	v.warnings = (size_t)(rand_r(&seed) % 3);
	v.confirm_budget = (unsigned)(rand_r(&seed) % 10);
	v.n_head_runs = v.n_runs = (size_t)(rand_r(&seed) % 3);
	v.head_runs = calloc(v.n_head_runs + 1, sizeof(char *));
	v.runs = calloc(v.n_runs + 1, sizeof(*v.runs));
	for (size_t i = 0; i < v.n_runs; i++) {
		v.head_runs[i] = text_of((unsigned)i);
		v.runs[i].disturbed = rnd() < 0.5;
		v.runs[i].n = (size_t)(rand_r(&seed) % (AW_VERDICT_REFS + 1));
		for (size_t k = 0; k < v.runs[i].n; k++) {
			v.runs[i].kernel[k] = text_of((unsigned)(10 * i + k));
			v.runs[i].ratio[k] = value();
		}
		v.disturbed = v.disturbed || v.runs[i].disturbed;
	}
	v.n_cells = cells;
	v.cells = calloc(cells + 1, sizeof(*v.cells));
	for (size_t i = 0; i < cells; i++) {
		struct aw_cell_verdict *c = &v.cells[i];

		c->key = text_of((unsigned)i);
		c->op = strdup("stadd");
		c->reader = rnd() < 0.3 ? text_of(3) : NULL;
		c->subject = rnd() < 0.2 ? text_of(4) : NULL;
		c->cpu = rnd() < 0.2 ? -1 : (int)i;
		c->verdict = (enum aw_verdict)(AW_VERDICT_UNCHANGED + rand_r(&seed) % 9);
		c->n_head = (size_t)(rand_r(&seed) % 3);
		c->gate = (enum aw_gate)(rand_r(&seed) % AW_GATE_COUNT);
		random_metric(&c->p50, (unsigned)i);
		random_metric(&c->p99, (unsigned)i + 100);
		v.counts[c->verdict]++;
	}
	j = aw_host_verdict_json(&v, true);
	assert_non_null(j);
	text = json_dumps(j, flags);
	assert_non_null(text);
	json_decref(j);
	aw_host_verdict_release(&v);
	return text;
}

static void test_written_documents(void **state)
{
	(void)state;
	for (int k = 0; k < 300; k++) {
		char *text;

		terms_written = terms_read = 0;
		text = random_doc((size_t)(k % 40), k % 3 ? JSON_COMPACT : JSON_INDENT(2));
		assert_int_equal(check_text(text), 0);
		assert_int_equal(terms_read, terms_written);
		free(text);
	}
}

/* Every cut of a document, and each byte of it changed into each of a few others. */
static void test_cut_and_changed(void **state)
{
	static const char with[] = "\"{}[],: 0-9e.E+\\utfn\x01\x80\xc3\xed/aAx";
	char *text = random_doc(1, JSON_COMPACT);
	size_t len = strlen(text);

	(void)state;
	for (size_t n = 0; n < len; n++) {
		char *cut = strndup(text, n);

		assert_int_not_equal(check_text(cut), 0);
		free(cut);
	}
	for (size_t i = 0; i < len; i++) {
		for (size_t k = 0; k < sizeof(with) - 1; k++) {
			char keep = text[i];

			text[i] = with[k];
			check_text(text);
			text[i] = keep;
		}
	}
	free(text);
}

/* What jansson refuses or takes at its edges, each in a place that matters to a verdict. */
static void test_edges(void **state)
{
	static const char *const docs[] = {
	    "",
	    " ",
	    "[]",
	    "{}",
	    "null",
	    "\"x\"",
	    "{\"host\":\"h\",\"status\":\"pass\"}",
	    " {\"host\":\"h\",\"status\":\"pass\"} \n\t\r",
	    "{\"host\":\"h\",\"status\":\"pass\"} x",
	    "{\"host\":\"h\",\"status\":\"pass\",}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"cells\":[,]}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"cells\":[]}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"cells\":null}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"cells\":[1]}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"cells\":[{}]}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"cells\":[{\"key\":\"k\",\"gate\":\"nope\"}]}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"cells\":[{\"key\":\"k\",\"gate\":\"warn\"}]}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"cells\":[{\"key\":\"k\",\"op\":1}]}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"head_runs\":null}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"head_runs\":[1]}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"runs\":7}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"runs\":[1,{\"disturbed\":true,\"references\":"
	    "{\"a\":1,\"b\":2,\"a\":3,\"c\":null,\"d\":4,\"e\":5,\"f\":6}}]}",
	    "{\"host\":5,\"host\":\"h\",\"status\":\"pass\"}",
	    "{\"host\":\"h\",\"host\":5,\"status\":\"pass\"}",
	    "{\"\\u0068ost\":\"h\",\"status\":\"p\\u0061ss\"}",
	    "{\"host\":\"\\ud83d\\ude00\\u00e9\\/\\b\\f\\n\\r\\t\\\"\\\\\",\"status\":\"pass\"}",
	    "{\"host\":\"\\ud83d\",\"status\":\"pass\"}",
	    "{\"host\":\"\\ude00\",\"status\":\"pass\"}",
	    "{\"host\":\"\\ud83d\\u0041\",\"status\":\"pass\"}",
	    "{\"host\":\"\\u0000\",\"status\":\"pass\"}",
	    "{\"host\":\"\\x\",\"status\":\"pass\"}",
	    "{\"host\":\"\\u12\",\"status\":\"pass\"}",
	    "{\"host\":\"a\x7f\",\"status\":\"pass\"}",
	    "{\"host\":\"a\x1f\",\"status\":\"pass\"}",
	    "{\"host\":\"\xc0\xaf\",\"status\":\"pass\"}",
	    "{\"host\":\"\xed\xa0\x80\",\"status\":\"pass\"}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"baseline_runs\":40.0}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"baseline_runs\":-3}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"baseline_runs\":9223372036854775807}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"baseline_runs\":9223372036854775808}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"baseline_runs\":-9223372036854775809}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"baseline_runs\":012}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"baseline_runs\":-}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"baseline_runs\":1.}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"baseline_runs\":1e}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"baseline_runs\":1e400}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"baseline_runs\":-1e400}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"baseline_runs\":1e-400}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"baseline_runs\":1E+2}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"baseline_runs\":tru}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"disturbed\":truex}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"cells\":[{\"key\":\"k\",\"cpu\":3,\"p50\":"
	    "{\"verdict\":\"regressed\",\"baseline\":1e2,\"head\":-0,\"decided_by\":1,\"levels\":"
	    "[{\"share\":0.5},7,{\"share\":2}],\"reference\":{\"kernel\":\"k\",\"slope\":1}}}]}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"cells\":[{\"key\":\"k\",\"p50\":{\"note\":5}}]}",
	    "{\"host\":\"h\",\"status\":\"pass\",\"cells\":[{\"key\":\"k\",\"p50\":{\"reference\":"
	    "{\"kernel\":[]}}}]}",
	    "\xef\xbb\xbf{\"host\":\"h\",\"status\":\"pass\"}",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
		check_text(docs[i]);
}

/* jansson's depth limit: counted over every value, the innermost too. */
static void test_depth(void **state)
{
	(void)state;
	for (size_t depth = 2045; depth <= 2050; depth++) {
		for (int scalar = 0; scalar < 2; scalar++) {
			size_t n = 0;
			char *text = malloc(2 * depth + 64);

			n += (size_t)snprintf(text, 64,
			                      "{\"host\":\"h\",\"status\":\"pass\",\"x\":");
			for (size_t i = 0; i < depth; i++)
				text[n++] = '[';
			if (scalar)
				text[n++] = '1';
			for (size_t i = 0; i < depth; i++)
				text[n++] = ']';
			text[n++] = '}';
			text[n] = '\0';
			check_text(text);
			free(text);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_written_documents),
	    cmocka_unit_test(test_cut_and_changed),
	    cmocka_unit_test(test_edges),
	    cmocka_unit_test(test_depth),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
