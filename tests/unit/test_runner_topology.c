/* Topology (runner/topology.c) against the fixture trees of tests/fixtures/hosts/: core types,
 * counts, SMT, near/far contenders and their reasons, first CPU per type, graceful degradation
 * when files are missing, the error when nothing is readable, and this live machine. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host_tree.h"
#include "internal.h"

static void load_dir(const char *dir, struct aw_topology *t)
{
	char *err = NULL;
	int rc = aw_topology_load(dir, t, &err);

	if (rc)
		fail_msg("loading '%s': %s", dir, err ? err : "(no message)");
	assert_null(err);
}

static void load_fixture(const char *name, struct aw_topology *t)
{
	char *dir = host_fixture(name);

	load_dir(dir, t);
	free(dir);
}

static void assert_list(const struct aw_cpuset *s, const char *want)
{
	char buf[256];

	aw_cpulist_format(s, buf, sizeof(buf));
	assert_string_equal(buf, want);
}

static void assert_near(const struct aw_topology *t, int cpu, int want, const char *why_part)
{
	const char *why = NULL;
	int got = aw_topology_near(t, cpu, &why);

	if (got != want)
		fail_msg("near(%d) = %d (%s), want %d", cpu, got, why ? why : "-", want);
	assert_non_null(why);
	if (!strstr(why, why_part))
		fail_msg("near(%d): reason '%s' lacks '%s'", cpu, why, why_part);
}

static void assert_far(const struct aw_topology *t, int cpu, int want, const char *why_part)
{
	const char *why = NULL;
	int got = aw_topology_far(t, cpu, &why);

	if (got != want)
		fail_msg("far(%d) = %d (%s), want %d", cpu, got, why ? why : "-", want);
	assert_non_null(why);
	if (!strstr(why, why_part))
		fail_msg("far(%d): reason '%s' lacks '%s'", cpu, why, why_part);
}

static void assert_first_per_type(const struct aw_topology *t, const char *want)
{
	struct aw_cpuset s;

	aw_topology_first_per_type(t, &s);
	assert_list(&s, want);
}

static void test_midr_names(void **state)
{
	static const struct {
		unsigned implementer, part;
		const char *name;
	} want[] = {
	    {0x41, 0xd03, "Cortex-A53"},  {0x41, 0xd05, "Cortex-A55"},
	    {0x41, 0xd07, "Cortex-A57"},  {0x41, 0xd08, "Cortex-A72"},
	    {0x41, 0xd09, "Cortex-A73"},  {0x41, 0xd0a, "Cortex-A75"},
	    {0x41, 0xd0b, "Cortex-A76"},  {0x41, 0xd0c, "Neoverse-N1"},
	    {0x41, 0xd0d, "Cortex-A77"},  {0x41, 0xd40, "Neoverse-V1"},
	    {0x41, 0xd41, "Cortex-A78"},  {0x41, 0xd44, "Cortex-X1"},
	    {0x41, 0xd46, "Cortex-A510"}, {0x41, 0xd47, "Cortex-A710"},
	    {0x41, 0xd48, "Cortex-X2"},   {0x41, 0xd49, "Neoverse-N2"},
	    {0x41, 0xd4d, "Cortex-A715"}, {0x41, 0xd4e, "Cortex-X3"},
	    {0x41, 0xd4f, "Neoverse-V2"}, {0x41, 0xd80, "Cortex-A520"},
	    {0x41, 0xd81, "Cortex-A720"}, {0x41, 0xd82, "Cortex-X4"},
	    {0x41, 0xd84, "Neoverse-V3"}, {0x41, 0xd85, "Cortex-X925"},
	    {0x41, 0xd87, "Cortex-A725"}, {0x41, 0xd8e, "Neoverse-N3"},
	    {0xc0, 0xac3, "AmpereOne"},   {0x4e, 0x004, "Carmel"},
	    {0x48, 0xd01, "TSV110"},      {0x61, 0x023, "Apple M1 Firestorm"},
	    {0x70, 0x663, "FTC663"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const char *got = aw_midr_name(want[i].implementer, want[i].part);

		if (!got || strcmp(got, want[i].name))
			fail_msg("0x%02x/0x%03x: got '%s', want '%s'", want[i].implementer,
			         want[i].part, got ? got : "NULL", want[i].name);
	}
	assert_non_null(aw_midr_name(0xc0, 0xac4));
	assert_non_null(aw_midr_name(0xc0, 0xac5));
	assert_null(aw_midr_name(0x41, 0xd99));
	assert_null(aw_midr_name(0x42, 0xd0c)); /* right part, wrong implementer */
	assert_null(aw_midr_name(0, 0));
}

static void test_neoverse_n1(void **state)
{
	struct aw_topology t;

	(void)state;
	load_fixture("neoverse-n1", &t);
	assert_int_equal(t.n_cpus, 4);
	assert_list(&t.online, "0-3");
	assert_int_equal(t.n_types, 1);
	assert_string_equal(t.types[0].model, "Neoverse-N1");
	assert_int_equal(t.types[0].implementer, 0x41);
	assert_int_equal(t.types[0].part, 0xd0c);
	assert_int_equal(t.types[0].variant, 3);
	assert_int_equal(t.types[0].revision, 1);
	assert_list(&t.types[0].cpus, "0-3");
	assert_int_equal(t.n_packages, 1);
	assert_int_equal(t.n_nodes, 1);
	assert_int_equal(t.n_cores, 4);
	assert_false(t.smt);
	for (int c = 0; c < 4; c++) {
		assert_true(t.cpus[c].present && t.cpus[c].online);
		assert_int_equal(t.cpus[c].package, 0);
		assert_int_equal(t.cpus[c].die, -1); /* arm64 has no die_id */
		assert_int_equal(t.cpus[c].cluster, c / 2);
		assert_int_equal(t.cpus[c].core, c);
		assert_int_equal(t.cpus[c].node, 0);
		assert_int_equal(t.cpus[c].core_type, 0);
	}
	assert_near(&t, 0, 1, "same cluster");
	assert_near(&t, 1, 0, "same cluster");
	assert_near(&t, 2, 3, "same cluster");
	assert_near(&t, 3, 2, "same cluster");
	assert_far(&t, 0, -1, "one package and one NUMA node");
	assert_first_per_type(&t, "0");
	aw_topology_release(&t);
	assert_null(t.cpus);
}

/* Two packages, one node each, no cluster level, MIDR only in /proc/cpuinfo. */
static void test_neoverse_v2(void **state)
{
	struct aw_topology t;

	(void)state;
	load_fixture("neoverse-v2", &t);
	assert_int_equal(t.n_cpus, 8);
	assert_int_equal(t.n_types, 1);
	assert_string_equal(t.types[0].model, "Neoverse-V2");
	assert_int_equal(t.types[0].implementer, 0x41);
	assert_int_equal(t.types[0].part, 0xd4f);
	assert_int_equal(t.types[0].variant, 0);
	assert_int_equal(t.types[0].revision, 0);
	assert_list(&t.types[0].cpus, "0-7");
	assert_int_equal(t.n_packages, 2);
	assert_int_equal(t.n_nodes, 2);
	assert_int_equal(t.n_cores, 8);
	assert_false(t.smt);
	assert_int_equal(t.cpus[5].cluster, -1);
	assert_int_equal(t.cpus[5].package, 1);
	assert_int_equal(t.cpus[5].node, 1);
	assert_near(&t, 0, 1, "same package");
	assert_near(&t, 4, 5, "same package");
	assert_near(&t, 7, 4, "same package");
	assert_far(&t, 0, 4, "another package");
	assert_far(&t, 3, 4, "another package");
	assert_far(&t, 5, 0, "another package");
	assert_first_per_type(&t, "0");
	aw_topology_release(&t);
}

/* Two sockets x 2 cores x 2 threads, Intel numbering (siblings 0,4), two nodes. */
static void test_x86(void **state)
{
	struct aw_topology t;

	(void)state;
	load_fixture("x86", &t);
	assert_int_equal(t.n_cpus, 8);
	assert_int_equal(t.n_types, 1);
	assert_string_equal(t.types[0].model, "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz");
	assert_int_equal(t.types[0].implementer, 0);
	assert_int_equal(t.types[0].part, 0);
	assert_list(&t.types[0].cpus, "0-7");
	assert_int_equal(t.n_packages, 2);
	assert_int_equal(t.n_nodes, 2);
	assert_int_equal(t.n_cores, 4);
	assert_true(t.smt);
	assert_int_equal(t.cpus[6].package, 1);
	assert_int_equal(t.cpus[6].die, 0);
	assert_int_equal(t.cpus[6].core, 0);
	assert_int_equal(t.cpus[6].node, 1);
	/* each core is its own cluster (L2), so the same die is the nearest level with a
	 * different core; the SMT sibling is never preferred */
	assert_near(&t, 0, 1, "same die");
	assert_near(&t, 4, 1, "same die");
	assert_near(&t, 1, 0, "same die");
	assert_near(&t, 2, 3, "same die");
	assert_near(&t, 7, 2, "same die");
	assert_far(&t, 0, 2, "another package");
	assert_far(&t, 6, 0, "another package");
	assert_first_per_type(&t, "0");
	aw_topology_release(&t);
}

/* Cortex-A520 x4 (cluster 0) + Cortex-A720 x8 (clusters 1 and 2). */
static void test_big_little(void **state)
{
	struct aw_topology t;

	(void)state;
	load_fixture("cix-p1", &t);
	assert_int_equal(t.n_cpus, 12);
	assert_int_equal(t.n_types, 2);
	assert_string_equal(t.types[0].model, "Cortex-A520");
	assert_int_equal(t.types[0].part, 0xd80);
	assert_list(&t.types[0].cpus, "0-3");
	assert_string_equal(t.types[1].model, "Cortex-A720");
	assert_int_equal(t.types[1].part, 0xd81);
	assert_int_equal(t.types[1].revision, 1);
	assert_list(&t.types[1].cpus, "4-11");
	assert_int_equal(t.cpus[3].core_type, 0);
	assert_int_equal(t.cpus[4].core_type, 1);
	assert_int_equal(t.n_packages, 1);
	assert_int_equal(t.n_nodes, 1);
	assert_int_equal(t.n_cores, 12);
	assert_false(t.smt);
	assert_first_per_type(&t, "0,4");
	assert_near(&t, 0, 1, "same cluster");
	assert_near(&t, 4, 5, "same cluster");
	assert_near(&t, 7, 4, "same cluster");
	assert_near(&t, 8, 9, "same cluster");
	assert_near(&t, 11, 8, "same cluster");
	assert_far(&t, 4, -1, "one package and one NUMA node");
	aw_topology_release(&t);
}

/* Offline CPUs drop out of types, counts and contender choices. */
static void test_offline_cpus(void **state)
{
	char *dir = host_copy_fixture("cix-p1");
	struct aw_topology t;

	(void)state;
	host_write(dir, "sys/devices/system/cpu/online", "0-3,5,8-11\n");
	load_dir(dir, &t);
	assert_int_equal(t.n_cpus, 12);
	assert_true(t.cpus[4].present);
	assert_false(t.cpus[4].online);
	assert_int_equal(t.cpus[4].core_type, -1);
	assert_list(&t.types[1].cpus, "5,8-11");
	assert_first_per_type(&t, "0,5");
	/* CPU 5 is alone in cluster 1 now: the package is the next level */
	assert_near(&t, 5, 0, "same package");
	assert_near(&t, 4, -1, "not online");
	assert_near(&t, 99, -1, "not online");
	assert_far(&t, -1, -1, "not online");
	assert_int_equal(t.n_cores, 9);
	aw_topology_release(&t);
	host_rmtree(dir);
	free(dir);
}

/* With only SMT siblings left in reach, near takes the sibling. */
static void test_smt_sibling_last(void **state)
{
	char *dir = host_copy_fixture("x86");
	struct aw_topology t;

	(void)state;
	host_write(dir, "sys/devices/system/cpu/online", "0,4\n");
	load_dir(dir, &t);
	assert_true(t.smt);
	assert_int_equal(t.n_cores, 1);
	assert_int_equal(t.n_packages, 1);
	assert_near(&t, 0, 4, "SMT sibling");
	assert_near(&t, 4, 0, "SMT sibling");
	assert_far(&t, 0, -1, "one package and one NUMA node");
	aw_topology_release(&t);
	host_rmtree(dir);
	free(dir);
}

/* One package split into two NUMA nodes (e.g. Altra in hemisphere mode): far by node. */
static void test_far_by_node(void **state)
{
	char *dir = host_copy_fixture("neoverse-n1");
	struct aw_topology t;

	(void)state;
	host_write(dir, "sys/devices/system/node/node0/cpulist", "0-1\n");
	host_write(dir, "sys/devices/system/node/node1/cpulist", "2-3\n");
	load_dir(dir, &t);
	assert_int_equal(t.n_packages, 1);
	assert_int_equal(t.n_nodes, 2);
	assert_far(&t, 0, 2, "another NUMA node");
	assert_far(&t, 3, 0, "another NUMA node");
	assert_near(&t, 0, 1, "same cluster");
	aw_topology_release(&t);
	host_rmtree(dir);
	free(dir);
}

static void test_hybrid_x86(void **state)
{
	char *dir = host_copy_fixture("x86");
	struct aw_topology t;

	(void)state;
	host_write(dir, "sys/devices/cpu_core/cpus", "0-1,4-5\n");
	host_write(dir, "sys/devices/cpu_atom/cpus", "2-3,6-7\n");
	load_dir(dir, &t);
	assert_int_equal(t.n_types, 2);
	assert_string_equal(t.types[0].model, "x86 P-core");
	assert_list(&t.types[0].cpus, "0-1,4-5");
	assert_string_equal(t.types[1].model, "x86 E-core");
	assert_list(&t.types[1].cpus, "2-3,6-7");
	assert_first_per_type(&t, "0,2");
	aw_topology_release(&t);
	host_rmtree(dir);
	free(dir);
}

static void test_unknown_midr(void **state)
{
	char *dir = host_copy_fixture("neoverse-n1");
	struct aw_topology t;

	(void)state;
	for (int c = 0; c < 4; c++) {
		char rel[128];

		snprintf(rel, sizeof(rel),
		         "sys/devices/system/cpu/cpu%d/regs/identification/midr_el1", c);
		host_write(dir, rel, "0x00000000410fd990\n");
	}
	load_dir(dir, &t);
	assert_int_equal(t.n_types, 1);
	assert_string_equal(t.types[0].model, "aarch64 0x41/0xd99");
	assert_int_equal(t.types[0].part, 0xd99);
	aw_topology_release(&t);
	host_rmtree(dir);
	free(dir);
}

/* A container-like tree: no per-CPU topology, no NUMA nodes; everything still loads. */
static void test_missing_topology(void **state)
{
	char *dir = host_copy_fixture("x86");
	struct aw_topology t;

	(void)state;
	for (int c = 0; c < 8; c++) {
		char rel[128];

		snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/topology", c);
		host_remove(dir, rel);
	}
	host_remove(dir, "sys/devices/system/node");
	load_dir(dir, &t);
	assert_int_equal(t.n_cpus, 8);
	assert_int_equal(t.cpus[3].package, -1);
	assert_int_equal(t.cpus[3].die, -1);
	assert_int_equal(t.cpus[3].cluster, -1);
	assert_int_equal(t.cpus[3].core, -1);
	assert_int_equal(t.cpus[3].node, -1);
	assert_int_equal(t.n_packages, -1);
	assert_int_equal(t.n_nodes, -1);
	assert_int_equal(t.n_cores, 8); /* unknown cores count one per CPU */
	assert_false(t.smt);
	assert_string_equal(t.types[0].model, "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz");
	assert_near(&t, 0, 1, "another online CPU");
	assert_near(&t, 5, 0, "another online CPU");
	assert_far(&t, 0, -1, "packages and NUMA nodes unknown");
	aw_topology_release(&t);
	host_rmtree(dir);
	free(dir);
}

/* sysfs without core_id but with sibling lists still yields cores and SMT. */
static void test_siblings_without_core_id(void **state)
{
	char *dir = host_copy_fixture("x86");
	struct aw_topology t;

	(void)state;
	for (int c = 0; c < 8; c++) {
		char rel[128];

		snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/topology/core_id", c);
		host_remove(dir, rel);
	}
	load_dir(dir, &t);
	assert_int_equal(t.n_cores, 4);
	assert_true(t.smt);
	assert_near(&t, 0, 1, "same die");
	assert_near(&t, 4, 1, "same die");
	aw_topology_release(&t);
	host_rmtree(dir);
	free(dir);
}

/* Only /proc/cpuinfo: online CPUs and core types come from it. */
static void test_cpuinfo_only(void **state)
{
	char *dir = host_copy_fixture("neoverse-n1");
	struct aw_topology t;

	(void)state;
	host_remove(dir, "sys");
	load_dir(dir, &t);
	assert_int_equal(t.n_cpus, 4);
	assert_list(&t.online, "0-3");
	assert_int_equal(t.n_types, 1);
	assert_string_equal(t.types[0].model, "Neoverse-N1");
	assert_int_equal(t.types[0].variant, 3);
	assert_int_equal(t.n_packages, -1);
	assert_near(&t, 0, 1, "another online CPU");
	aw_topology_release(&t);
	host_rmtree(dir);
	free(dir);
}

/* Only sysfs CPU lists, no cpuinfo and no MIDR: one type of unknown model. */
static void test_sysfs_only(void **state)
{
	char *dir = host_tmpdir();
	struct aw_topology t;

	(void)state;
	host_write(dir, "sys/devices/system/cpu/possible", "0-3\n");
	host_write(dir, "sys/devices/system/cpu/online", "0\n");
	load_dir(dir, &t);
	assert_int_equal(t.n_cpus, 4);
	assert_true(t.cpus[2].present); /* present falls back on possible */
	assert_false(t.cpus[2].online);
	assert_int_equal(t.n_types, 1);
	assert_string_equal(t.types[0].model, "unknown");
	assert_list(&t.types[0].cpus, "0");
	assert_near(&t, 0, -1, "only one online CPU");
	assert_far(&t, 0, -1, "only one online CPU");
	assert_first_per_type(&t, "0");
	aw_topology_release(&t);
	host_rmtree(dir);
	free(dir);
}

/* Malformed files count as missing. */
static void test_garbage_files(void **state)
{
	char *dir = host_copy_fixture("neoverse-n1");
	struct aw_topology t;

	(void)state;
	host_write(dir, "sys/devices/system/cpu/possible", "zero to three\n");
	host_write(dir, "sys/devices/system/cpu/cpu1/topology/physical_package_id", "x\n");
	host_write(dir, "sys/devices/system/cpu/cpu1/topology/core_id", "1 2\n");
	host_write(dir, "sys/devices/system/cpu/cpu1/regs/identification/midr_el1", "\n");
	load_dir(dir, &t);
	assert_int_equal(t.n_cpus, 4);
	assert_int_equal(t.cpus[1].package, -1);
	assert_int_equal(t.cpus[1].core, 1); /* from core_cpus_list */
	/* cpuinfo still names CPU 1's type */
	assert_int_equal(t.n_types, 1);
	assert_list(&t.types[0].cpus, "0-3");
	aw_topology_release(&t);
	host_rmtree(dir);
	free(dir);
}

static void test_nothing_readable(void **state)
{
	char *dir = host_tmpdir(), *err = NULL, *missing;
	struct aw_topology t;

	(void)state;
	assert_int_equal(aw_topology_load(dir, &t, &err), -ENOENT);
	assert_non_null(err);
	assert_non_null(strstr(err, dir));
	assert_non_null(strstr(err, "sys/devices/system/cpu/online"));
	assert_null(t.cpus);
	free(err);
	err = NULL;
	missing = host_join(dir, "does/not/exist");
	assert_true(aw_topology_load(missing, &t, &err) < 0);
	assert_non_null(strstr(err, missing));
	free(err);
	/* no message wanted */
	assert_true(aw_topology_load(missing, &t, NULL) < 0);
	free(missing);
	host_rmtree(dir);
	free(dir);
}

/* This machine: whatever it is, the result must be coherent; on the 2-CPU development VM CPU 1
 * is CPU 0's near contender and there is no far one. */
static void test_live(void **state)
{
	struct aw_topology t;
	const char *why = NULL;
	int first, online, near;

	(void)state;
	load_dir("/", &t);
	online = aw_cpuset_count(&t.online);
	first = aw_cpuset_next(&t.online, -1);
	assert_true(online >= 1);
	assert_true(t.n_cpus >= online);
	assert_true(t.n_types >= 1);
	assert_true(t.types[0].model[0] != '\0');
	assert_int_equal(t.cpus[first].core_type >= 0, 1);
	near = aw_topology_near(&t, first, &why);
	assert_non_null(why);
	if (online == 1) {
		assert_int_equal(near, -1);
	} else {
		assert_true(near >= 0 && near != first && aw_cpuset_has(&t.online, near));
	}
	if (online == 2 && t.n_packages <= 1 && t.n_nodes <= 1) {
		assert_int_equal(near, 1);
		assert_int_equal(aw_topology_far(&t, 0, &why), -1);
		assert_non_null(why);
	}
	aw_topology_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_midr_names),
	    cmocka_unit_test(test_neoverse_n1),
	    cmocka_unit_test(test_neoverse_v2),
	    cmocka_unit_test(test_x86),
	    cmocka_unit_test(test_big_little),
	    cmocka_unit_test(test_offline_cpus),
	    cmocka_unit_test(test_smt_sibling_last),
	    cmocka_unit_test(test_far_by_node),
	    cmocka_unit_test(test_hybrid_x86),
	    cmocka_unit_test(test_unknown_midr),
	    cmocka_unit_test(test_missing_topology),
	    cmocka_unit_test(test_siblings_without_core_id),
	    cmocka_unit_test(test_cpuinfo_only),
	    cmocka_unit_test(test_sysfs_only),
	    cmocka_unit_test(test_garbage_files),
	    cmocka_unit_test(test_nothing_readable),
	    cmocka_unit_test(test_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
