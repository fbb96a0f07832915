/* The importers' parsers on small texts: line cleaning, each percpu_bench shape with quoting,
 * decorations and noise, runs split where a CPU repeats, the refscale log with and without
 * timestamps and as /dev/kmsg records, and the documents built from them. */
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

#include "import.h"
#include "refscale.h"

static void test_clean_line(void **state)
{
	char a[] = ">> > \tLL/SC:   p50: 5.69 ns\r\n", b[] = "[  123.456789] srcu-ref-scale: x",
	     c[] = "[....]", d[] = "   ";

	(void)state;
	assert_string_equal(aw_import_clean_line(a), "LL/SC:   p50: 5.69 ns");
	assert_string_equal(aw_import_clean_line(b), "srcu-ref-scale: x");
	assert_string_equal(aw_import_clean_line(c), "[....]");
	assert_string_equal(aw_import_clean_line(d), "");
}

static const struct aw_import_cell *cell(const struct aw_import *imp, size_t run, size_t i)
{
	assert_true(run < imp->n_runs);
	assert_true(i < imp->runs[run].n_cells);
	return &imp->runs[run].cells[i];
}

static void test_percpu_shapes(void **state)
{
	static const char text[] =
	    "Hi all, numbers below.\n"
	    "> ARM64 Per-CPU Atomic Add Benchmark\n"
	    "> ===================================\n"
	    "> Running percentile measurements (100 iterations)...\n"
	    "> Detected 72 CPUs\n"
	    ">\n"
	    ">  CPU: 3 - Latency Percentiles:\n"
	    ">  ====================\n"
	    ">  LL/SC:   p50: 5.69 ns\t  p95: 5.71 ns\t  p99: 5.80 ns\n"
	    ">  LSE  :   p50: **45.53** ns     p95: ~54.06ns     p99: 55.18 ns (!)\n"
	    "perf: interrupt took too long (2501 > 2500), lowering kernel.perf_event_max_sample_rate\n"
	    "[....]\n"
	    " CPU: 4 - Latency Percentiles:\n"
	    ">  STADD           :   p50: 1065.99 ns     p95: 1068.98 ns     p99: 1070.13 ns\n"
	    "PRFM_KEEP+STADD : p50: 007.89 ns p95: 007.91 ns p99: 008.82 ns\n"
	    "PFRM_STRM+STADD (c                0, d              100):   p50: 063.71 ns   p95: "
	    "064.96 ns   p99: 065.68 ns\n"
	    "LDADD           (c               10, d                0):   p50: 012.46 ns   p95: "
	    "013.24 ns   p99: 014.33 ns\n"
	    "LSE (stadd)     (              100):   p50: 115.17 ns   p95: 117.13 ns   p99: 117.35 "
	    "ns\n"
	    "LDADD : p50: 9.00 ns p95: 8.00 ns p99: 10.00 ns\n" /* inconsistent: skipped */
	    "XADD  : p50: 1.00 ns p95: 2.00 ns p99: 3.00 ns\n"  /* unknown label: skipped */
	    "=== Benchmark Complete ===\n";
	struct aw_import imp;
	const struct aw_import_cell *c;

	(void)state;
	aw_import_init(&imp, "percpu_bench");
	assert_int_equal(aw_percpu_bench_parse(text, strlen(text), &imp), 0);
	assert_int_equal(imp.n_runs, 1);
	assert_int_equal(imp.runs[0].n_cells, 7);
	assert_int_equal(imp.runs[0].iterations, 100);
	assert_int_equal(imp.runs[0].detected_cpus, 72);
	assert_int_equal(imp.skipped, 5); /* prose, perf, [....], inconsistent, unknown */
	c = cell(&imp, 0, 0);
	assert_string_equal(c->op, "llsc");
	assert_int_equal(c->cpu, 3);
	assert_true(c->c == AW_NONE && c->d == 0);
	assert_true(c->p50 == 5.69 && c->p95 == 5.71 && c->p99 == 5.80);
	c = cell(&imp, 0, 1);
	assert_string_equal(c->op, "stadd");
	assert_true(c->p50 == 45.53 && c->p95 == 54.06 && c->p99 == 55.18);
	c = cell(&imp, 0, 2);
	assert_int_equal(c->cpu, 4);
	assert_true(c->p50 == 1065.99 && c->p99 == 1070.13);
	c = cell(&imp, 0, 3);
	assert_string_equal(c->op, "prfm_keep_stadd");
	assert_int_equal(c->cpu, 4);
	c = cell(&imp, 0, 4);
	assert_string_equal(c->op, "prfm_strm_stadd");
	assert_true(c->c == AW_NONE && c->d == 100);
	assert_true(c->p50 == 63.71);
	c = cell(&imp, 0, 5);
	assert_string_equal(c->op, "ldadd");
	assert_true(c->c == 10 && c->d == 0);
	c = cell(&imp, 0, 6);
	assert_string_equal(c->op, "stadd");
	assert_true(c->c == 100 && c->d == 0);
	assert_int_equal(imp.runs[0].formats,
	                 AW_PCB_2VARIANT | AW_PCB_5VARIANT | AW_PCB_CONTENTION | AW_PCB_CONT_OLD);
	aw_import_release(&imp);
}

static void test_percpu_runs(void **state)
{
	static const char text[] = "CPU: 0 - Latency Percentiles:\n"
	                           "LL/SC: p50: 5.0 ns p95: 6.0 ns p99: 7.0 ns\n"
	                           "CPU: 1 - Latency Percentiles:\n"
	                           "LL/SC: p50: 5.1 ns p95: 6.1 ns p99: 7.1 ns\n"
	                           "and on the other machine:\n"
	                           "CPU: 0 - Latency Percentiles:\n" /* CPU 0 again */
	                           "LL/SC: p50: 9.0 ns p95: 9.5 ns p99: 9.9 ns\n"
	                           "ARM64 Per-CPU Atomic Add Benchmark\n" /* a third run */
	                           "CPU: 5 - Latency Percentiles:\n"
	                           "LSE  : p50: 4.0 ns p95: 4.5 ns p99: 4.9 ns\n";
	struct aw_import imp;

	(void)state;
	aw_import_init(&imp, "percpu_bench");
	assert_int_equal(aw_percpu_bench_parse(text, strlen(text), &imp), 0);
	assert_int_equal(imp.n_runs, 3);
	assert_int_equal(imp.runs[0].n_cells, 2);
	assert_int_equal(imp.runs[1].n_cells, 1);
	assert_true(cell(&imp, 1, 0)->p50 == 9.0);
	assert_int_equal(imp.runs[2].n_cells, 1);
	assert_int_equal(cell(&imp, 2, 0)->cpu, 5);
	assert_int_equal(imp.skipped, 1);
	aw_import_release(&imp);
}

static const char refscale_log[] =
    "[  100.000001] srcu-fast-ref-scale: --- Start of test:  verbose=1 verbose_batched=0 "
    "shutdown=0 holdoff=10 lookup_instances=0 loops=10000 nreaders=4 nruns=3 readdelay=0\n"
    "[  100.100000] srcu-fast-ref-scale: Experiment #0 (Format: <THREAD-NUM>:<Total "
    "loop time in ns>)\n"
    "[  101.000000] BUG: soft lockup - elided\n"
    "[  105.000000] srcu-fast-ref-scale: END OF TEST. Calculating average duration per loop "
    "(nanoseconds)...\n"
    "[  105.000001] Runs\tTime(ns)\n"
    "1\t9.852\n"
    "2\t9.861\n"
    "3\t10.004\n"
    "rcu-ref-scale: --- Start of test: loops=2000 nreaders=1 nruns=2\n"
    "rcu-ref-scale: END OF TEST. Calculating average duration per loop (nanoseconds)...\n"
    "Runs\tTime(ns)\n"
    "1\t1.250\n"
    "2\t1.500\n";

static void test_refscale(void **state)
{
	struct aw_import imp;
	const struct aw_import_cell *c;
	struct aw_cell out;

	(void)state;
	aw_import_init(&imp, "refscale");
	assert_int_equal(aw_refscale_parse(refscale_log, strlen(refscale_log), &imp), 0);
	assert_int_equal(imp.n_runs, 1);
	assert_int_equal(imp.runs[0].n_cells, 2);
	assert_int_equal(imp.skipped, 1); /* the soft lockup line */
	c = cell(&imp, 0, 0);
	assert_string_equal(c->kernel, "srcu-fast");
	assert_int_equal(c->loops, 10000);
	assert_int_equal(c->nruns, 3);
	assert_int_equal(c->n_samples, 3);
	assert_true(c->samples[2] == 10.004);
	c = cell(&imp, 0, 1);
	assert_string_equal(c->kernel, "rcu");
	assert_int_equal(c->n_samples, 2);

	memset(&out, 0, sizeof(out));
	assert_int_equal(aw_import_fill_cell(cell(&imp, 0, 0), &out), 0);
	assert_string_equal(out.key, "kernel=srcu-fast");
	assert_string_equal(out.op, "refscale");
	assert_int_equal(out.n, 3);
	assert_int_equal(out.batch, 10000);
	assert_true(out.min == 9.852 && out.p50 == 9.861 && out.max == 10.004);
	assert_true(fabs(out.mean - (9.852 + 9.861 + 10.004) / 3) < 1e-9);
	assert_int_equal(out.cpu, AW_NONE);
	aw_cell_release(&out);
	aw_import_release(&imp);
}

static void test_refscale_repeat(void **state)
{
	static const char text[] = "srcu-ref-scale: END OF TEST.\nRuns\tTime(ns)\n1\t5.0\n"
	                           "srcu-ref-scale: END OF TEST.\nRuns\tTime(ns)\n1\t6.0\n";
	struct aw_import imp;

	(void)state;
	aw_import_init(&imp, "refscale");
	assert_int_equal(aw_refscale_parse(text, strlen(text), &imp), 0);
	assert_int_equal(imp.n_runs, 2); /* srcu twice: two documents */
	assert_true(cell(&imp, 1, 0)->samples[0] == 6.0);
	aw_import_release(&imp);
}

static void test_kmsg_records(void **state)
{
	char r1[] = "5,1201,100000001,-;srcu-ref-scale: --- Start of test: loops=10 nruns=2";
	char r2[] = "5,1202,105000000,-;srcu-ref-scale: END OF TEST. Calculating...";
	char r3[] = "1,1203,105000001,-;Runs\\x09Time(ns)\\x0a1\\x094.125\\x0a2\\x094.250\\x0a";
	char dict[] = " SUBSYSTEM=cpu";
	struct aw_refscale_parser p;
	struct aw_import imp;
	const struct aw_import_cell *c;

	(void)state;
	aw_import_init(&imp, "refscale");
	aw_refscale_parser_init(&p, &imp);
	assert_int_equal(aw_kmsg_feed(&p, r1), 0);
	assert_int_equal(aw_kmsg_feed(&p, dict), 0);
	assert_int_equal(aw_kmsg_feed(&p, r2), 0);
	assert_int_equal(aw_kmsg_feed(&p, r3), 0);
	c = cell(&imp, 0, 0);
	assert_true(c->ended);
	assert_int_equal(c->n_samples, 2);
	assert_true(c->samples[0] == 4.125 && c->samples[1] == 4.25);
	assert_int_equal(imp.skipped, 0);
	aw_import_release(&imp);
}

static void test_documents(void **state)
{
	static const char text[] = "CPU: 0 - Latency Percentiles:\n"
	                           "LL/SC: p50: 5.0 ns p95: 6.0 ns p99: 7.0 ns\n"
	                           "LDADD (c 10, d 100): p50: 15.0 ns p95: 16.0 ns p99: 17.0 ns\n"
	                           "CPU: 0 - Latency Percentiles:\n"
	                           "LL/SC: p50: 5.5 ns p95: 6.5 ns p99: 7.5 ns\n";
	struct aw_import_opts o = {"h1",      "linux",   "0123abcd", "main",
	                           "aarch64", "unknown", NULL,       "paste.txt"};
	struct aw_import imp;
	struct aw_result **docs = NULL;
	char *err = NULL;
	size_t n;

	(void)state;
	aw_import_init(&imp, "percpu_bench");
	assert_int_equal(aw_percpu_bench_parse(text, strlen(text), &imp), 0);
	assert_int_equal(aw_import_documents(&imp, &o, &docs, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(docs[0]->trigger, AW_TRIGGER_IMPORT);
	assert_string_equal(docs[0]->matrix_name, "percpu_bench");
	assert_int_equal(strlen(docs[0]->matrix_hash), 64);
	assert_int_equal(docs[0]->n_cells, 2);
	assert_string_equal(docs[0]->cells[1].key, "op=ldadd cpu=0 c=10 d=100");
	assert_int_equal(docs[0]->cells[1].contender_cpu, AW_NONE);
	assert_int_equal(docs[0]->cells[1].n, 100);
	assert_true(isnan(docs[0]->cells[1].min));
	assert_int_equal(json_integer_value(json_object_get(docs[1]->meta, "part")), 2);
	assert_string_equal(json_string_value(json_object_get(docs[0]->host, "arch")), "aarch64");
	assert_string_not_equal(docs[0]->run_id, docs[1]->run_id);
	for (size_t i = 0; i < n; i++)
		aw_result_free(&docs[i]);
	free(docs);
	aw_import_release(&imp);

	aw_import_init(&imp, "percpu_bench");
	assert_int_equal(aw_percpu_bench_parse("nothing here\n", 13, &imp), 0);
	assert_int_equal(aw_import_documents(&imp, &o, &docs, &n, &err), -ENOENT);
	assert_non_null(strstr(err, "no percpu_bench results"));
	free(err);
	aw_import_release(&imp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_clean_line),      cmocka_unit_test(test_percpu_shapes),
	    cmocka_unit_test(test_percpu_runs),     cmocka_unit_test(test_refscale),
	    cmocka_unit_test(test_refscale_repeat), cmocka_unit_test(test_kmsg_records),
	    cmocka_unit_test(test_documents),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
