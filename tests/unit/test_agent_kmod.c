/* The agent's side of the kernel module: reading its debugfs files into cells (statistics from
 * the samples, what it reported about the kernel, every way the files can be wrong), the
 * kernel's commit from its release or /proc/version, and the kernel keys of agent.yaml. */
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
#include "config.h"
#include "kernel.h"
#include "kmod.h"

static const char results[] = "format 1\n"
                              "module atomwatch 0.1.0\n"
                              "release 6.1.0-57-arm64\n"
                              "version #1 SMP Debian 6.1.192-3 (2026-11-26)\n"
                              "machine aarch64\n"
                              "lse yes\n"
                              "percpu_ops lse-stadd\n"
                              "timer ktime_get_raw_ns\n"
                              "timer_res_ns 16\n"
                              "samples 4\n"
                              "batch_min_ns 20000\n"
                              "cpus 0-1\n"
                              "wall_ns 123456\n"
                              "cells 3\n"
                              "a_newer_fact 42\n"
                              "cell this_cpu_inc cpu=1 status=ok n=4 batch=1000 ops=9000 "
                              "min_ps=1 p50_ps=2 insn=stadd calls=this_cpu_inc\n"
                              "cell srcu_read_lock_fast cpu=1 status=skipped insn=call calls=- "
                              "reason=this kernel has no SRCU fast readers (6.15)\n"
                              "cell this_cpu_add cpu=1 status=failed insn=stadd "
                              "calls=this_cpu_add reason=counter is 5 after the cell, "
                              "expected 6\n"
                              "end\n";

/* empty loop 1 ns per op; timed 5, 6, 7, 8 ns per op at batch 1000 */
static const char samples[] = "format 1\n"
                              "cell this_cpu_inc cpu=1 batch=1000 n=4\n"
                              "1000 5000\n"
                              "1000 6000\n"
                              "1000 7000\n"
                              "1000 8000\n"
                              "end\n";

static struct aw_result *new_result(void)
{
	struct aw_result *r = aw_result_new();

	assert_non_null(r);
	return r;
}

static void free_result(struct aw_result *r)
{
	aw_result_free(&r);
}

static int parse(const char *res_text, const char *smp_text, struct aw_result *r, json_t *info,
                 char **err)
{
	return aw_kmod_parse(res_text, strlen(res_text), smp_text, strlen(smp_text), r, info, err);
}

static void test_parse(void **state)
{
	struct aw_result *r = new_result();
	json_t *info = json_object();
	char *err = NULL;
	const struct aw_cell *c;

	(void)state;
	assert_int_equal(parse(results, samples, r, info, &err), 0);
	assert_null(err);
	assert_int_equal(r->n_cells, 3);
	c = &r->cells[0];
	assert_string_equal(c->key, "kernel=this_cpu_inc cpu=1");
	assert_string_equal(c->op, "kmod");
	assert_string_equal(c->kernel, "this_cpu_inc");
	assert_int_equal(c->cpu, 1);
	assert_int_equal(c->status, AW_CELL_OK);
	assert_int_equal(c->n, 4);
	assert_int_equal(c->batch, 1000);
	/* the runner's method: net = timed - the empty loop's median */
	assert_true(fabs(c->baseline_ns - 1.0) < 1e-9);
	assert_true(fabs(c->min - 4.0) < 1e-9);
	assert_true(fabs(c->p50 - 5.5) < 1e-9);
	assert_true(fabs(c->max - 7.0) < 1e-9);
	assert_false(c->below_resolution);
	c = &r->cells[1];
	assert_string_equal(c->key, "kernel=srcu_read_lock_fast cpu=1");
	assert_int_equal(c->status, AW_CELL_SKIPPED);
	assert_string_equal(c->reason, "this kernel has no SRCU fast readers (6.15)");
	c = &r->cells[2];
	assert_int_equal(c->status, AW_CELL_FAILED);
	assert_string_equal(c->reason, "counter is 5 after the cell, expected 6");
	assert_string_equal(json_string_value(json_object_get(info, "release")), "6.1.0-57-arm64");
	assert_string_equal(json_string_value(json_object_get(info, "percpu_ops")), "lse-stadd");
	assert_true(json_is_true(json_object_get(info, "lse")));
	assert_int_equal(json_integer_value(json_object_get(info, "samples")), 4);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(info, "insn"), "this_cpu_inc")),
	    "stadd");
	assert_null(json_object_get(json_object_get(info, "calls"), "srcu_read_lock_fast"));
	assert_null(json_object_get(info, "a_newer_fact"));
	json_decref(info);
	free_result(r);
}

/* x86 has no LSE to decide ("n/a": null); an op that the empty loop hides is below
 * resolution, reported as 0 as the runner does. */
static void test_parse_below_resolution(void **state)
{
	static const char res_text[] = "format 1\nlse n/a\n"
	                               "cell this_cpu_inc cpu=0 status=ok insn=incq-gs "
	                               "calls=this_cpu_inc\nend\n";
	static const char smp_text[] = "format 1\ncell this_cpu_inc cpu=0 batch=10 n=3\n"
	                               "100 100\n100 100\n100 101\nend\n";
	struct aw_result *r = new_result();
	json_t *info = json_object();
	char *err = NULL;

	(void)state;
	assert_int_equal(parse(res_text, smp_text, r, info, &err), 0);
	assert_true(json_is_null(json_object_get(info, "lse")));
	assert_true(r->cells[0].below_resolution);
	assert_true(r->cells[0].p50 == 0);
	json_decref(info);
	free_result(r);
}

static void test_parse_errors(void **state)
{
	static const struct {
		const char *results, *samples, *message;
		int rc;
	} bad[] = {
	    {"format 2\nend\n", "format 1\n", "the module's results are not in format 1", -EPROTO},
	    {"", "format 1\n", "the module's results are not in format 1", -EPROTO},
	    {"format 1\nend\n", "format 9\n", "the module's samples are not in format 1", -EPROTO},
	    {"format 1\ncell x cpu=0 status=ok\n", "format 1\n",
	     "the module's results end before their 'end' line", -EPROTO},
	    {"format 1\ncell x status=ok\nend\n", "format 1\n",
	     "the module's results file, line 2: expected 'cell NAME cpu=N status=S ...'", -EPROTO},
	    {"format 1\ncell x cpu=-1 status=ok\nend\n", "format 1\n",
	     "the module's results file, line 2: bad cpu=", -EPROTO},
	    {"format 1\ncell x cpu=0 status=great\nend\n", "format 1\n",
	     "the module's results file, line 2: unknown status", -EPROTO},
	    {"format 1\ncell x cpu=0 status=ok\nend\n", "format 1\ncell x cpu=0 batch=1 n=2\n5 6\n",
	     "the module's samples file, line 3: the file ends within a cell", -EPROTO},
	    {"format 1\ncell x cpu=0 status=ok\nend\n", "format 1\ncell x cpu=0 batch=1 n=1\n5\n",
	     "the module's samples file, line 3: expected 'EMPTY_NS TIMED_NS'", -EPROTO},
	    {"format 1\ncell x cpu=0 status=ok\nend\n", "format 1\ncell x cpu=0 n=1\n5 5\n",
	     "the module's samples file, line 2: expected 'cell NAME cpu=N batch=B n=N'", -EPROTO},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct aw_result *r = new_result();
		json_t *info = json_object();
		char *err = NULL;
		int rc = parse(bad[i].results, bad[i].samples, r, info, &err);

		if (rc != bad[i].rc || !err || strncmp(err, bad[i].message, strlen(bad[i].message)))
			fail_msg("case %zu: rc %d, got '%s', want '%s...'", i, rc,
			         err ? err : "(none)", bad[i].message);
		free(err);
		json_decref(info);
		free_result(r);
	}
}

/* A cell the module measured but whose samples are missing is failed, not invented. */
static void test_parse_missing_samples(void **state)
{
	struct aw_result *r = new_result();
	json_t *info = json_object();
	char *err = NULL;

	(void)state;
	assert_int_equal(
	    parse("format 1\ncell x cpu=3 status=ok\nend\n", "format 1\nend\n", r, info, &err), 0);
	assert_int_equal(r->cells[0].status, AW_CELL_FAILED);
	assert_string_equal(r->cells[0].reason, "the module reported no samples for this cell");
	json_decref(info);
	free_result(r);
}

static void test_kernel_commit(void **state)
{
	static const struct {
		const char *release, *version, *commit, *from;
		bool dirty;
	} ok[] = {
	    {"6.18.0-rc6-00012-g535fdfc5a228", NULL, "535fdfc5a228", "uname -r", false},
	    {"6.18.0-rc6-00012-g535fdfc5a228-dirty", NULL, "535fdfc5a228", "uname -r", true},
	    {"6.12.0-00001-gABCDEF0123456+", NULL, "abcdef0123456", "uname -r", true},
	    {"6.1.0-57-amd64",
	     "Linux version 6.1.0-57-amd64-00003-g0123456789ab (builder@ci) (gcc 12) #1 SMP\n",
	     "0123456789ab", "/proc/version", false},
	    {"6.9.0-g1111111-00002-g2222222222", NULL, "2222222222", "uname -r", false},
	};
	static const struct {
		const char *release, *version;
	} none[] = {
	    {"6.1.0-57-amd64", "Linux version 6.1.0-57-amd64 (debian-kernel@lists.debian.org) "
	                       "(gcc-12 (Debian 12.2.0-14) 12.2.0) #1 SMP Debian 6.1.192-3\n"},
	    {"6.1.0-g12345", NULL},             /* too short for a sha */
	    {"6.1.0-gnome0123456789", NULL},    /* not hex */
	    {"6.1.0-g0123456789abcdefx", NULL}, /* runs into a non-hex letter */
	    {"6.18.44-fc-v669",
	     "Linux version 6.18.44-fc-v669 (root@host) #1\nsecond -g0123456789ab\n"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct aw_kernel_id id;
		char *err = NULL;

		if (aw_kernel_commit_of(ok[i].release, ok[i].version, &id, &err))
			fail_msg("case %zu: %s", i, err);
		assert_string_equal(id.commit, ok[i].commit);
		assert_string_equal(id.from, ok[i].from);
		assert_int_equal(id.dirty, ok[i].dirty);
	}
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		struct aw_kernel_id id;
		char *err = NULL;

		assert_int_equal(aw_kernel_commit_of(none[i].release, none[i].version, &id, &err),
		                 -ENOENT);
		assert_non_null(strstr(err, "names no commit"));
		assert_non_null(strstr(err, none[i].release));
		assert_non_null(strstr(err, "CONFIG_LOCALVERSION_AUTO"));
		free(err);
	}
}

static void test_config(void **state)
{
	static const char text[] = "collector: {url: http://x, token_file: /t}\n"
	                           "spool: {dir: /s}\n"
	                           "schedule: {commit: kernel}\n"
	                           "kernel:\n"
	                           "  module: true\n"
	                           "  build: tree\n"
	                           "  module_file: /m/atomwatch.ko\n"
	                           "  make_vars: {ARCH: arm64, CROSS_COMPILE: aarch64-linux-gnu-}\n"
	                           "  cpus: 0-1\n"
	                           "  samples: 50\n"
	                           "  timeout: 90s\n"
	                           "  refscale:\n"
	                           "    types: [srcu]\n"
	                           "    source: /usr/src/linux\n"
	                           "    modules: prebuilt\n";
	static const char zero[] = "collector: {url: http://x, token_file: /t}\n"
	                           "spool: {dir: /s}\nkernel: {samples: 0}\n";
	struct aw_agent_config cfg;
	char *err = NULL;

	(void)state;
	assert_int_equal(aw_agent_config_parse(text, strlen(text), "k.yaml", "/etc/aw", &cfg, &err),
	                 0);
	assert_true(cfg.kmod);
	assert_string_equal(cfg.schedule_commit, "kernel");
	assert_string_equal(cfg.kmod_tree, "/etc/aw/tree");
	assert_string_equal(cfg.kmod_file, "/m/atomwatch.ko");
	assert_int_equal(cfg.n_kmod_make_vars, 2);
	assert_string_equal(cfg.kmod_make_vars[0], "ARCH=arm64");
	assert_string_equal(cfg.kmod_cpus, "0-1");
	assert_int_equal(cfg.kmod_samples, 50);
	assert_int_equal(cfg.kmod_timeout_ms, 90000);
	assert_string_equal(cfg.kmod_make, "make");
	assert_string_equal(cfg.debugfs, "/sys/kernel/debug");
	assert_string_equal(cfg.refscale_source, "/usr/src/linux");
	assert_string_equal(cfg.refscale_modules, "/etc/aw/prebuilt");
	aw_agent_config_release(&cfg);

	assert_int_not_equal(aw_agent_config_parse(zero, strlen(zero), "k.yaml", "/", &cfg, &err),
	                     0);
	assert_non_null(strstr(err, "'samples' must be a whole number from 1 to 100000"));
	free(err);
	aw_agent_config_release(&cfg);
}

static void test_prims(void **state)
{
	(void)state;
	assert_int_equal(aw_kmod_n_prims, 12);
	for (size_t i = 0; i < aw_kmod_n_prims; i++)
		assert_true(aw_valid_name(aw_kmod_prims[i]));
	assert_string_equal(aw_kmod_prims[3], "this_cpu_inc_dec");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),         cmocka_unit_test(test_parse_below_resolution),
	    cmocka_unit_test(test_parse_errors),  cmocka_unit_test(test_parse_missing_samples),
	    cmocka_unit_test(test_kernel_commit), cmocka_unit_test(test_config),
	    cmocka_unit_test(test_prims),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
