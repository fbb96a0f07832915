/* Host fingerprint (runner/fingerprint.c) against the fixture trees: every field of `stable` and
 * `changing`, the platform hash (the same when only changing fields differ, different when the
 * hardware differs), labels, bad input, and this live machine. */
#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include <cmocka.h>

#include "aw/sha256.h"
#include "aw/util.h"
#include "host_tree.h"
#include "internal.h"

static json_t *fp_dir(const char *dir, const char *machine, int lse)
{
	struct aw_fp_source src = {
	    .root = dir,
	    .machine = machine,
	    .kernel = "6.12.0-test",
	    .kernel_version = "#1 SMP PREEMPT_DYNAMIC",
	    .lse = lse,
	    .timer_hz = 1e9,
	    .timer_name = "cntvct_el0",
	};
	char *err = NULL;
	json_t *host = aw_fingerprint(&src, "test-host", NULL, &err);

	if (!host)
		fail_msg("fingerprint of '%s': %s", dir, err ? err : "(no message)");
	assert_null(err);
	return host;
}

static json_t *fp_fixture(const char *name, const char *machine)
{
	char *dir = host_fixture(name);
	json_t *host = fp_dir(dir, machine, -1);

	free(dir);
	return host;
}

static const char *hash_of(const json_t *host)
{
	return json_string_value(json_object_get(host, "platform_hash"));
}

/* host.<path>, where path is "stable.cpus" or "name". */
static json_t *get(const json_t *host, const char *path)
{
	char buf[128], *dot;
	const json_t *o = host;

	snprintf(buf, sizeof(buf), "%s", path);
	dot = strchr(buf, '.');
	if (dot) {
		*dot = '\0';
		o = json_object_get(o, buf);
		path = dot + 1;
	}
	return json_object_get(o, path);
}

static void assert_str(const json_t *host, const char *path, const char *want)
{
	json_t *v = get(host, path);

	if (!json_is_string(v) || strcmp(json_string_value(v), want))
		fail_msg("%s: got %s, want '%s'", path,
		         json_is_string(v) ? json_string_value(v) : "a non-string", want);
}

static void assert_int(const json_t *host, const char *path, long long want)
{
	json_t *v = get(host, path);

	if (!json_is_integer(v) || json_integer_value(v) != want)
		fail_msg("%s: got %lld (%s), want %lld", path,
		         json_is_integer(v) ? (long long)json_integer_value(v) : -1LL,
		         v ? "present" : "absent", want);
}

static void assert_bool(const json_t *host, const char *path, bool want)
{
	json_t *v = get(host, path);

	assert_true(json_is_boolean(v));
	assert_int_equal(json_is_true(v), want);
}

static void assert_null_field(const json_t *host, const char *path)
{
	json_t *v = get(host, path);

	if (!json_is_null(v))
		fail_msg("%s: want null, got %s", path, v ? "a value" : "nothing");
}

static void assert_core_type(const json_t *host, size_t i, const char *model,
                             const char *implementer, const char *part, const char *cpus, int count)
{
	json_t *ty = json_array_get(get(host, "stable.core_types"), i);

	assert_non_null(ty);
	assert_string_equal(json_string_value(json_object_get(ty, "model")), model);
	if (implementer) {
		assert_string_equal(json_string_value(json_object_get(ty, "implementer")),
		                    implementer);
		assert_string_equal(json_string_value(json_object_get(ty, "part")), part);
	} else {
		assert_true(json_is_null(json_object_get(ty, "implementer")));
		assert_true(json_is_null(json_object_get(ty, "part")));
	}
	assert_string_equal(json_string_value(json_object_get(ty, "cpus")), cpus);
	assert_int_equal(json_integer_value(json_object_get(ty, "count")), count);
}

/* platform_hash is the first 16 hex digits of SHA-256 over the canonical `stable`. */
static void assert_hash_of_stable(const json_t *host)
{
	char *canon = json_dumps(get(host, "stable"), JSON_COMPACT | JSON_SORT_KEYS);
	char hex[AW_SHA256_HEX_LEN + 1];

	assert_non_null(canon);
	assert_int_equal(aw_sha256_hex(canon, strlen(canon), hex), 0);
	assert_int_equal(strlen(hash_of(host)), 16);
	assert_memory_equal(hash_of(host), hex, 16);
	free(canon);
}

static void assert_common(const json_t *host)
{
	static const char *const top[] = {"name",   "arch",   "cpu_model", "platform_hash",
	                                  "labels", "stable", "changing"};
	static const char *const changing[] = {
	    "kernel",      "kernel_version", "microcode", "governor", "cpufreq_max_khz",
	    "online_cpus", "compiler",       "cflags",    "timer",    "timer_hz"};

	for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++)
		if (!json_object_get(host, top[i]))
			fail_msg("host lacks '%s'", top[i]);
	for (size_t i = 0; i < sizeof(changing) / sizeof(changing[0]); i++)
		if (!json_object_get(json_object_get(host, "changing"), changing[i]))
			fail_msg("changing lacks '%s'", changing[i]);
	assert_str(host, "name", "test-host");
	assert_true(json_is_object(get(host, "labels")));
	assert_int_equal(json_object_size(get(host, "labels")), 0);
	assert_str(host, "changing.kernel", "6.12.0-test");
	assert_str(host, "changing.kernel_version", "#1 SMP PREEMPT_DYNAMIC");
	assert_str(host, "changing.timer", "cntvct_el0");
	assert_true(json_real_value(get(host, "changing.timer_hz")) == 1e9);
	assert_true(json_string_length(get(host, "changing.compiler")) > 0);
	assert_true(json_is_string(get(host, "changing.cflags")));
	/* nothing that changes may leak into what identifies the platform */
	assert_null(json_object_get(get(host, "stable"), "kernel"));
	assert_null(json_object_get(get(host, "stable"), "microcode"));
	assert_null(json_object_get(get(host, "stable"), "governor"));
	assert_null(json_object_get(get(host, "stable"), "online_cpus"));
	assert_hash_of_stable(host);
}

/* The kernel's config is a changing field: another config of one release is another platform
 * state (the daemon runs on it), never another platform. */
static void test_kernel_config_hash(void **state)
{
	char *dir = host_copy_fixture("neoverse-n1"), hex[AW_SHA256_HEX_LEN + 1];
	static const char config[] = "CONFIG_ARM64_LSE_ATOMICS=y\n";
	json_t *without, *with, *other;

	(void)state;
	without = fp_dir(dir, "aarch64", -1);
	assert_null_field(without, "changing.kernel_config_hash");
	host_write(dir, "boot/config-6.12.0-test", config);
	with = fp_dir(dir, "aarch64", -1);
	assert_int_equal(aw_sha256_hex(config, strlen(config), hex), 0);
	hex[16] = '\0';
	assert_str(with, "changing.kernel_config_hash", hex);
	host_write(dir, "boot/config-6.12.0-test", "# CONFIG_ARM64_LSE_ATOMICS is not set\n");
	other = fp_dir(dir, "aarch64", -1);
	assert_string_not_equal(json_string_value(get(other, "changing.kernel_config_hash")), hex);
	assert_string_equal(hash_of(with), hash_of(other));
	assert_string_equal(hash_of(with), hash_of(without));
	json_decref(without);
	json_decref(with);
	json_decref(other);
	host_rmtree(dir);
	free(dir);
}

static void test_neoverse_n1(void **state)
{
	json_t *h = fp_fixture("neoverse-n1", "aarch64");

	(void)state;
	assert_common(h);
	assert_str(h, "arch", "aarch64");
	assert_str(h, "cpu_model", "Neoverse-N1");
	assert_str(h, "stable.arch", "aarch64");
	assert_str(h, "stable.cpu_model", "Neoverse-N1");
	assert_str(h, "stable.vendor", "Arm");
	assert_str(h, "stable.implementer", "0x41");
	assert_str(h, "stable.part", "0xd0c");
	assert_int(h, "stable.variant", 3);
	assert_int(h, "stable.revision", 1);
	assert_null(get(h, "stable.family"));
	assert_int(h, "stable.cpus", 4);
	assert_int(h, "stable.cores", 4);
	assert_int(h, "stable.packages", 1);
	assert_int(h, "stable.numa_nodes", 1);
	assert_int_equal(json_array_size(get(h, "stable.core_types")), 1);
	assert_core_type(h, 0, "Neoverse-N1", "0x41", "0xd0c", "0-3", 4);
	assert_bool(h, "stable.smt", false);
	assert_int(h, "stable.cache_line", 64);
	assert_bool(h, "stable.lse", true); /* "atomics" in Features */
	assert_str(h, "changing.microcode", "0x0000000000000000");
	assert_str(h, "changing.governor", "performance");
	assert_int(h, "changing.cpufreq_max_khz", 3000000);
	assert_str(h, "changing.online_cpus", "0-3");
	json_decref(h);
}

static void test_neoverse_v2(void **state)
{
	json_t *h = fp_fixture("neoverse-v2", "aarch64");

	(void)state;
	assert_common(h);
	assert_str(h, "cpu_model", "Neoverse-V2");
	assert_str(h, "stable.implementer", "0x41");
	assert_str(h, "stable.part", "0xd4f");
	assert_int(h, "stable.variant", 0);
	assert_int(h, "stable.revision", 0);
	assert_int(h, "stable.cpus", 8);
	assert_int(h, "stable.cores", 8);
	assert_int(h, "stable.packages", 2);
	assert_int(h, "stable.numa_nodes", 2);
	assert_core_type(h, 0, "Neoverse-V2", "0x41", "0xd4f", "0-7", 8);
	assert_bool(h, "stable.smt", false);
	assert_bool(h, "stable.lse", true);
	/* no cpufreq and no regs/identification in this tree */
	assert_null_field(h, "changing.governor");
	assert_null_field(h, "changing.cpufreq_max_khz");
	assert_null_field(h, "changing.microcode");
	json_decref(h);
}

static void test_big_little(void **state)
{
	json_t *h = fp_fixture("cix-p1", "aarch64");

	(void)state;
	assert_common(h);
	assert_str(h, "cpu_model", "Cortex-A720 + Cortex-A520"); /* most CPUs first */
	assert_str(h, "stable.cpu_model", "Cortex-A720 + Cortex-A520");
	assert_str(h, "stable.part", "0xd80"); /* CPU 0's */
	assert_int(h, "stable.cpus", 12);
	assert_int_equal(json_array_size(get(h, "stable.core_types")), 2);
	assert_core_type(h, 0, "Cortex-A520", "0x41", "0xd80", "0-3", 4);
	assert_core_type(h, 1, "Cortex-A720", "0x41", "0xd81", "4-11", 8);
	assert_str(h, "changing.governor", "schedutil");
	assert_int(h, "changing.cpufreq_max_khz", 2600000); /* the big cores' */
	json_decref(h);
}

static void test_x86(void **state)
{
	json_t *h = fp_fixture("x86", "x86_64");

	(void)state;
	assert_common(h);
	assert_str(h, "arch", "x86_64");
	assert_str(h, "cpu_model", "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz");
	assert_str(h, "stable.vendor", "GenuineIntel");
	assert_int(h, "stable.family", 6);
	assert_int(h, "stable.model", 106);
	assert_int(h, "stable.stepping", 6);
	assert_str(h, "stable.brand", "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz");
	assert_null(get(h, "stable.implementer"));
	assert_int(h, "stable.cpus", 8);
	assert_int(h, "stable.cores", 4);
	assert_int(h, "stable.packages", 2);
	assert_int(h, "stable.numa_nodes", 2);
	assert_core_type(h, 0, "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", NULL, NULL, "0-7", 8);
	assert_bool(h, "stable.smt", true);
	assert_int(h, "stable.cache_line", 64); /* from cache_alignment */
	assert_bool(h, "stable.lse", false);
	assert_str(h, "changing.microcode", "0xd0003a5");
	assert_str(h, "changing.governor", "powersave");
	assert_int(h, "changing.cpufreq_max_khz", 3200000);
	assert_str(h, "changing.online_cpus", "0-7");
	json_decref(h);
}

/* x86 hybrid: the brand names the CPU; P/E only name the core types. */
static void test_x86_hybrid(void **state)
{
	char *dir = host_copy_fixture("x86");
	json_t *h;

	(void)state;
	host_write(dir, "sys/devices/cpu_core/cpus", "0-1,4-5\n");
	host_write(dir, "sys/devices/cpu_atom/cpus", "2-3,6-7\n");
	h = fp_dir(dir, "x86_64", -1);
	assert_str(h, "cpu_model", "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz");
	assert_core_type(h, 0, "x86 P-core", NULL, NULL, "0-1,4-5", 4);
	assert_core_type(h, 1, "x86 E-core", NULL, NULL, "2-3,6-7", 4);
	json_decref(h);
	host_rmtree(dir);
	free(dir);
}

static void test_lse_source(void **state)
{
	char *dir = host_fixture("neoverse-n1"), *copy;
	json_t *h;

	(void)state;
	h = fp_dir(dir, "aarch64", 0); /* the caller's word wins */
	assert_bool(h, "stable.lse", false);
	json_decref(h);
	h = fp_dir(dir, "aarch64", 1);
	assert_bool(h, "stable.lse", true);
	json_decref(h);
	h = fp_dir(dir, "x86_64", 1); /* no LSE outside aarch64 */
	assert_bool(h, "stable.lse", false);
	json_decref(h);
	free(dir);

	/* an Armv8.0 core without "atomics" */
	copy = host_copy_fixture("neoverse-n1");
	host_write(copy, "proc/cpuinfo",
	           "processor\t: 0\nFeatures\t: fp asimd evtstrm crc32 cpuid\n"
	           "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\n"
	           "CPU part\t: 0xd08\nCPU revision\t: 3\n");
	h = fp_dir(copy, "aarch64", -1);
	assert_bool(h, "stable.lse", false);
	json_decref(h);
	host_rmtree(copy);
	free(copy);
}

/* Kernel, governor, microcode, frequency and timer changes keep the platform; hardware
 * changes make a new one. */
static void test_hash_stability(void **state)
{
	char *dir = host_copy_fixture("x86");
	char *arm = host_copy_fixture("neoverse-n1");
	struct aw_fp_source src = {.root = dir, .machine = "x86_64", .lse = -1};
	json_t *base, *h, *labels;
	char hash[17], *err = NULL;
	char *cpuinfo, *p;
	size_t len;

	(void)state;
	base = fp_dir(dir, "x86_64", -1);
	snprintf(hash, sizeof(hash), "%s", hash_of(base));
	json_decref(base);

	/* another kernel, timer and labels */
	src.kernel = "6.18.1";
	src.kernel_version = "#2 SMP";
	src.timer_name = "tsc";
	src.timer_hz = 2.1e9;
	labels = json_pack("{s:s}", "rack", "b7");
	h = aw_fingerprint(&src, "other-name", labels, &err);
	json_decref(labels);
	assert_non_null(h);
	assert_string_equal(hash_of(h), hash);
	json_decref(h);

	/* another governor, frequency and microcode */
	for (int c = 0; c < 8; c++) {
		char rel[128];

		snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor",
		         c);
		host_write(dir, rel, "performance\n");
		snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/cpufreq/cpuinfo_max_freq",
		         c);
		host_write(dir, rel, "3500000\n");
	}
	cpuinfo = host_join(dir, "proc/cpuinfo");
	assert_int_equal(aw_read_file(cpuinfo, 1 << 20, &p, &len, NULL), 0);
	for (char *m = p; (m = strstr(m, "0xd0003a5")); m++)
		memcpy(m, "0xd0003b9", 9);
	host_write(dir, "proc/cpuinfo", p);
	free(p);
	h = fp_dir(dir, "x86_64", -1);
	assert_str(h, "changing.governor", "performance");
	assert_str(h, "changing.microcode", "0xd0003b9");
	assert_int(h, "changing.cpufreq_max_khz", 3500000);
	assert_string_equal(hash_of(h), hash);
	json_decref(h);

	/* another stepping is another platform */
	assert_int_equal(aw_read_file(cpuinfo, 1 << 20, &p, &len, NULL), 0);
	for (char *m = p; (m = strstr(m, "stepping\t: 6")); m++)
		m[strlen("stepping\t: ")] = '7';
	host_write(dir, "proc/cpuinfo", p);
	free(p);
	free(cpuinfo);
	h = fp_dir(dir, "x86_64", -1);
	assert_int(h, "stable.stepping", 7);
	assert_string_not_equal(hash_of(h), hash);
	json_decref(h);

	/* aarch64: revidr and governor keep it; another part number does not */
	base = fp_dir(arm, "aarch64", -1);
	snprintf(hash, sizeof(hash), "%s", hash_of(base));
	json_decref(base);
	for (int c = 0; c < 4; c++) {
		char rel[128];

		snprintf(rel, sizeof(rel),
		         "sys/devices/system/cpu/cpu%d/regs/identification/revidr_el1", c);
		host_write(arm, rel, "0x0000000000000180\n");
		snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor",
		         c);
		host_write(arm, rel, "ondemand\n");
	}
	h = fp_dir(arm, "aarch64", -1);
	assert_str(h, "changing.microcode", "0x0000000000000180");
	assert_string_equal(hash_of(h), hash);
	json_decref(h);
	for (int c = 0; c < 4; c++) {
		char rel[128];

		snprintf(rel, sizeof(rel),
		         "sys/devices/system/cpu/cpu%d/regs/identification/midr_el1", c);
		host_write(arm, rel, "0x00000000413fd0d1\n"); /* Cortex-A77 */
	}
	h = fp_dir(arm, "aarch64", -1);
	assert_str(h, "cpu_model", "Cortex-A77");
	assert_string_not_equal(hash_of(h), hash);
	json_decref(h);

	host_rmtree(dir);
	host_rmtree(arm);
	free(dir);
	free(arm);
}

static void test_hash_differs_between_fixtures(void **state)
{
	static const char *const names[][2] = {
	    {"neoverse-n1", "aarch64"},
	    {"neoverse-v2", "aarch64"},
	    {"cix-p1", "aarch64"},
	    {"x86", "x86_64"},
	};
	char hashes[4][17];

	(void)state;
	for (size_t i = 0; i < 4; i++) {
		json_t *h = fp_fixture(names[i][0], names[i][1]);

		snprintf(hashes[i], sizeof(hashes[i]), "%s", hash_of(h));
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(hashes[i], hashes[j]);
		json_decref(h);
	}
}

static void test_labels(void **state)
{
	char *dir = host_fixture("neoverse-n1"), *err = NULL;
	struct aw_fp_source src = {.root = dir, .machine = "aarch64", .lse = -1};
	json_t *labels = json_pack("{s:s, s:s}", "rack", "a1", "pool", "ci");
	json_t *h, *bad;

	(void)state;
	h = aw_fingerprint(&src, "graviton2-1", labels, &err);
	assert_non_null(h);
	assert_true(json_equal(get(h, "labels"), labels));
	assert_ptr_not_equal(get(h, "labels"), labels); /* a copy */
	assert_int_equal(labels->refcount, 1);
	json_decref(h);

	bad = json_array();
	assert_null(aw_fingerprint(&src, "graviton2-1", bad, &err));
	assert_non_null(strstr(err, "labels"));
	free(err);
	err = NULL;
	json_decref(bad);
	json_decref(labels);

	assert_null(aw_fingerprint(&src, "bad name!", NULL, &err));
	assert_non_null(strstr(err, "bad name!"));
	free(err);
	err = NULL;
	assert_null(aw_fingerprint(&src, "", NULL, &err));
	free(err);
	free(dir);
}

static void test_nothing_readable(void **state)
{
	char *dir = host_tmpdir(), *err = NULL;
	struct aw_fp_source src = {.root = dir, .machine = "aarch64", .lse = -1};

	(void)state;
	assert_null(aw_fingerprint(&src, "h", NULL, &err));
	assert_non_null(err);
	assert_non_null(strstr(err, dir));
	free(err);
	host_rmtree(dir);
	free(dir);
}

/* Only CPU lists: every unknown field is null, never invented. */
static void test_sparse_tree(void **state)
{
	char *dir = host_tmpdir();
	json_t *h;

	(void)state;
	host_write(dir, "sys/devices/system/cpu/online", "0-1\n");
	h = fp_dir(dir, "aarch64", -1);
	assert_str(h, "cpu_model", "unknown");
	assert_null_field(h, "stable.vendor");
	assert_null_field(h, "stable.implementer");
	assert_null_field(h, "stable.packages");
	assert_null_field(h, "stable.numa_nodes");
	assert_null_field(h, "stable.cache_line");
	assert_null_field(h, "changing.governor");
	assert_null_field(h, "changing.microcode");
	assert_bool(h, "stable.lse", false);
	assert_int(h, "stable.cpus", 2);
	json_decref(h);
	host_rmtree(dir);
	free(dir);
}

/* This machine, asked nothing: every field from the live system. */
static void test_live(void **state)
{
	struct utsname uts;
	char *err = NULL;
	json_t *h, *again;
	const char *name;

	(void)state;
	assert_int_equal(uname(&uts), 0);
	h = aw_fingerprint(NULL, NULL, NULL, &err);
	if (!h)
		fail_msg("live fingerprint: %s", err);
	name = json_string_value(get(h, "name"));
	assert_true(aw_valid_name(name));
	assert_str(h, "arch", uts.machine);
	assert_str(h, "changing.kernel", uts.release);
	assert_true(json_string_length(get(h, "cpu_model")) > 0);
	assert_true(json_array_size(get(h, "stable.core_types")) >= 1);
	assert_hash_of_stable(h);
	again = aw_fingerprint(NULL, "live", NULL, &err);
	assert_non_null(again);
	assert_string_equal(hash_of(h), hash_of(again)); /* deterministic */
	json_decref(again);
	json_decref(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kernel_config_hash),
	    cmocka_unit_test(test_neoverse_n1),
	    cmocka_unit_test(test_neoverse_v2),
	    cmocka_unit_test(test_big_little),
	    cmocka_unit_test(test_x86),
	    cmocka_unit_test(test_x86_hybrid),
	    cmocka_unit_test(test_lse_source),
	    cmocka_unit_test(test_hash_stability),
	    cmocka_unit_test(test_hash_differs_between_fixtures),
	    cmocka_unit_test(test_labels),
	    cmocka_unit_test(test_nothing_readable),
	    cmocka_unit_test(test_sparse_tree),
	    cmocka_unit_test(test_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
