/* The host fingerprint of a result document: what the machine is (`stable`, hashed into the
 * platform id so that the collector compares like with like) and what may change under it
 * without it becoming another platform (`changing`: kernel, microcode, governor, compiler). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/utsname.h>

#include "aw/buf.h"
#include "aw/sha256.h"
#include "aw/util.h"
#include "internal.h"

/* runner/CMakeLists.txt defines both for aw_runner; these only keep other builds compiling. */
#ifndef AW_COMPILER
#ifdef __VERSION__
#define AW_COMPILER "cc " __VERSION__
#else
#define AW_COMPILER "unknown"
#endif
#endif
#ifndef AW_CFLAGS
#define AW_CFLAGS ""
#endif

#if defined(__aarch64__) && !defined(HWCAP_ATOMICS)
#define HWCAP_ATOMICS (1UL << 8)
#endif

#define SYSFS_LIMIT       (64 * 1024)
#define CPUINFO_LIMIT     (64 * 1024 * 1024)
#define CONFIG_LIMIT      (16 * 1024 * 1024)
#define PLATFORM_HASH_LEN 16
#define LIST_LEN          (AW_MAX_CPUS * 6) /* "4095," per CPU at worst */

struct fp {
	const char *root;
	bool live; /* this host, not a fixture tree */
	char *cpuinfo;
	int first_cpu; /* first online CPU */
	char *list;    /* LIST_LEN bytes for CPU lists */
};

static const struct {
	unsigned id;
	const char *name;
} implementers[] = {
    {0x41, "Arm"},       {0x42, "Broadcom"}, {0x43, "Cavium"},    {0x46, "Fujitsu"},
    {0x48, "HiSilicon"}, {0x4e, "NVIDIA"},   {0x50, "APM"},       {0x51, "Qualcomm"},
    {0x53, "Samsung"},   {0x61, "Apple"},    {0x6d, "Microsoft"}, {0x70, "Phytium"},
    {0xc0, "Ampere"},
};

static const char *implementer_name(unsigned id)
{
	for (size_t i = 0; i < sizeof(implementers) / sizeof(implementers[0]); i++)
		if (implementers[i].id == id)
			return implementers[i].name;
	return NULL;
}

/* root/<rel>, or NULL when missing or unreadable (normal in containers and VMs). The caller
 * frees. */
__attribute__((format(printf, 3, 4))) static char *read_rel(const struct fp *f, size_t limit,
                                                            const char *fmt, ...)
{
	va_list ap;
	char *data = NULL;
	int rc;

	va_start(ap, fmt);
	rc = aw_read_below(f->root, limit, &data, fmt, ap);
	va_end(ap);
	return rc ? NULL : data;
}

/* Copies src[0..n) into dst as one printable ASCII line with single blanks, so that whatever a
 * kernel or firmware wrote becomes a valid, stable JSON string. */
static void tidy_copy(char *dst, size_t len, const char *src, size_t n)
{
	size_t o = 0;
	bool space = false;

	for (size_t i = 0; i < n && src[i] && o + 1 < len; i++) {
		unsigned char c = (unsigned char)src[i];

		if (isspace(c) || c < 0x20 || c > 0x7e) {
			space = o > 0;
			continue;
		}
		if (space && o + 2 < len)
			dst[o++] = ' ';
		space = false;
		dst[o++] = (char)c;
	}
	if (len)
		dst[o] = '\0';
}

/* The value of the first "key : value" line of cpuinfo, i.e. of the first processor's block;
 * NULL when absent. *n receives its length. */
static const char *cpuinfo_value(const char *text, const char *key, size_t *n)
{
	size_t klen = strlen(key);

	for (const char *line = text; line && *line;) {
		const char *eol = strchr(line, '\n'), *p = line + klen;

		if (!eol)
			eol = line + strlen(line);
		if (!strncmp(line, key, klen)) {
			while (p < eol && (*p == ' ' || *p == '\t'))
				p++;
			if (p < eol && *p == ':') {
				p++;
				while (p < eol && isspace((unsigned char)*p))
					p++;
				*n = (size_t)(eol - p);
				while (*n && isspace((unsigned char)p[*n - 1]))
					(*n)--;
				return p;
			}
		}
		line = *eol ? eol + 1 : NULL;
	}
	return NULL;
}

static bool cpuinfo_get(const struct fp *f, const char *key, char *out, size_t len)
{
	size_t n;
	const char *v = f->cpuinfo ? cpuinfo_value(f->cpuinfo, key, &n) : NULL;

	if (!v || !n)
		return false;
	tidy_copy(out, len, v, n);
	return out[0] != '\0';
}

/* A decimal cpuinfo field such as "cpu family"; -1 when absent. */
static long cpuinfo_long(const struct fp *f, const char *key)
{
	char buf[32], *end;
	long v;

	if (!cpuinfo_get(f, key, buf, sizeof(buf)))
		return -1;
	errno = 0;
	v = strtol(buf, &end, 10);
	return errno || *end || v < 0 ? -1 : v;
}

/* Whether the first processor's `key` line ("Features", "flags") holds the word. */
static bool cpuinfo_has_word(const struct fp *f, const char *key, const char *word)
{
	size_t n, wlen = strlen(word);
	const char *v = f->cpuinfo ? cpuinfo_value(f->cpuinfo, key, &n) : NULL;

	for (size_t i = 0; v && i + wlen <= n; i++) {
		if ((i == 0 || isspace((unsigned char)v[i - 1])) && !strncmp(v + i, word, wlen) &&
		    (i + wlen == n || isspace((unsigned char)v[i + wlen])))
			return true;
	}
	return false;
}

/* A sysfs attribute of one CPU as a trimmed string into out; false when missing. */
static bool read_cpu_attr(const struct fp *f, int cpu, const char *attr, char *out, size_t len)
{
	char *text = read_rel(f, SYSFS_LIMIT, "sys/devices/system/cpu/cpu%d/%s", cpu, attr);

	if (!text)
		return false;
	tidy_copy(out, len, text, strlen(text));
	free(text);
	return out[0] != '\0';
}

static long read_cpu_long(const struct fp *f, int cpu, const char *attr)
{
	char buf[32], *end;
	long v;

	if (!read_cpu_attr(f, cpu, attr, buf, sizeof(buf)))
		return -1;
	errno = 0;
	v = strtol(buf, &end, 10);
	return errno || *end || v < 0 ? -1 : v;
}

static json_t *int_or_null(long long v)
{
	return v < 0 ? json_null() : json_integer(v);
}

static json_t *str_or_null(const char *s)
{
	return s && *s ? json_string(s) : json_null();
}

static json_t *hex_or_null(bool known, unsigned v, int digits)
{
	char buf[16];

	if (!known)
		return json_null();
	snprintf(buf, sizeof(buf), "0x%0*x", digits, v);
	return json_string(buf);
}

/* Sets o[k] = v, stealing v; a NULL v (failed allocation) or a failed set clears *ok. */
static void put(json_t *o, const char *k, json_t *v, bool *ok)
{
	if (json_object_set_new(o, k, v))
		*ok = false;
}

static bool is_aarch64(const char *arch)
{
	return !strcmp(arch, "aarch64") || !strcmp(arch, "arm64");
}

static bool is_x86(const char *arch)
{
	return !strcmp(arch, "x86_64") || !strcmp(arch, "amd64") ||
	       (arch[0] == 'i' && !strcmp(arch + 2, "86"));
}

/* "Neoverse-V2"; for big.LITTLE the distinct type names, most CPUs first:
 * "Cortex-A720 + Cortex-A520". */
static void types_model(const struct aw_topology *t, char *out, size_t len)
{
	bool used[AW_MAX_CORE_TYPES] = {false};
	int order[AW_MAX_CORE_TYPES], n = 0;
	size_t o = 0;

	out[0] = '\0';
	while (n < t->n_types) {
		int best = -1, best_count = -1;
		bool dup = false;

		for (int i = 0; i < t->n_types; i++) {
			int count = aw_cpuset_count(&t->types[i].cpus);

			if (!used[i] && count > best_count) {
				best = i;
				best_count = count;
			}
		}
		used[best] = true;
		for (int k = 0; k < n; k++)
			dup |= !strcmp(t->types[order[k]].model, t->types[best].model);
		order[n++] = best;
		if (!dup && o < len)
			o += (size_t)snprintf(out + o, len - o, "%s%s", o ? " + " : "",
			                      t->types[best].model);
	}
	if (!out[0])
		snprintf(out, len, "unknown");
}

static json_t *core_types_json(const struct fp *f, const struct aw_topology *t, bool arm)
{
	json_t *arr = json_array();
	bool ok = arr != NULL;

	for (int i = 0; ok && i < t->n_types; i++) {
		const struct aw_core_type *ty = &t->types[i];
		json_t *o = json_object();
		bool midr = arm && ty->implementer;

		if (!o || json_array_append_new(arr, o)) {
			ok = false;
			break;
		}
		aw_cpulist_format(&ty->cpus, f->list, LIST_LEN);
		put(o, "model", json_string(ty->model), &ok);
		put(o, "implementer", hex_or_null(midr, ty->implementer, 2), &ok);
		put(o, "part", hex_or_null(midr, ty->part, 3), &ok);
		put(o, "cpus", json_string(f->list), &ok);
		put(o, "count", json_integer(aw_cpuset_count(&ty->cpus)), &ok);
	}
	if (!ok)
		json_decref(arr);
	return ok ? arr : NULL;
}

static bool host_lse(const struct fp *f, const struct aw_fp_source *src, bool arm)
{
	if (!arm)
		return false; /* LSE is an aarch64 extension */
	if (src->lse >= 0)
		return src->lse != 0;
#if defined(__aarch64__)
	if (f->live)
		return (getauxval(AT_HWCAP) & HWCAP_ATOMICS) != 0;
#endif
	/* a tree of another machine: its cpuinfo speaks for its CPUs, our HWCAP does not */
	return cpuinfo_has_word(f, "Features", "atomics");
}

/* The hardware: nothing here may change with the kernel, firmware, governor or frequency. */
static json_t *stable_json(const struct fp *f, const struct aw_fp_source *src,
                           const struct aw_topology *t, const char *arch, const char *cpu_model)
{
	json_t *o = json_object();
	bool ok = o != NULL, arm = is_aarch64(arch);
	const struct aw_core_type *first = &t->types[t->cpus[f->first_cpu].core_type];
	char buf[128];
	long cache_line;

	if (!ok)
		return NULL;
	put(o, "arch", json_string(arch), &ok);
	if (arm) {
		bool midr = first->implementer != 0;

		put(o, "vendor", str_or_null(midr ? implementer_name(first->implementer) : NULL),
		    &ok);
		put(o, "implementer", hex_or_null(midr, first->implementer, 2), &ok);
		put(o, "part", hex_or_null(midr, first->part, 3), &ok);
		put(o, "variant", midr ? json_integer(first->variant) : json_null(), &ok);
		put(o, "revision", midr ? json_integer(first->revision) : json_null(), &ok);
	} else {
		put(o, "vendor",
		    str_or_null(cpuinfo_get(f, "vendor_id", buf, sizeof(buf)) ? buf : NULL), &ok);
	}
	if (is_x86(arch)) {
		put(o, "family", int_or_null(cpuinfo_long(f, "cpu family")), &ok);
		put(o, "model", int_or_null(cpuinfo_long(f, "model")), &ok);
		put(o, "stepping", int_or_null(cpuinfo_long(f, "stepping")), &ok);
		put(o, "brand",
		    str_or_null(cpuinfo_get(f, "model name", buf, sizeof(buf)) ? buf : NULL), &ok);
	}
	put(o, "cpu_model", json_string(cpu_model), &ok);
	put(o, "cpus", json_integer(t->n_cpus), &ok);
	put(o, "cores", int_or_null(t->n_cores), &ok);
	put(o, "packages", int_or_null(t->n_packages), &ok);
	put(o, "numa_nodes", int_or_null(t->n_nodes), &ok);
	put(o, "core_types", core_types_json(f, t, arm), &ok);
	put(o, "smt", json_boolean(t->smt), &ok);
	cache_line = read_cpu_long(f, f->first_cpu, "cache/index0/coherency_line_size");
	if (cache_line <= 0)
		cache_line = cpuinfo_long(f, "cache_alignment");
	put(o, "cache_line", int_or_null(cache_line > 0 ? cache_line : -1), &ok);
	put(o, "lse", json_boolean(host_lse(f, src, arm)), &ok);
	if (!ok)
		json_decref(o);
	return ok ? o : NULL;
}

/* The first 16 hex digits of the SHA-256 of the running kernel's config, from
 * boot/config-<release> (the distributions' place) or else proc/config.gz (CONFIG_IKCONFIG_PROC,
 * hashed as it is); "" when neither is readable. Two builds of one release with other options
 * differ here. */
static void kernel_config_hash(const struct fp *f, const char *kernel, char out[17])
{
	char hex[AW_SHA256_HEX_LEN + 1];
	const char *sep = f->root[strlen(f->root) - 1] == '/' ? "" : "/";

	out[0] = '\0';
	for (int i = 0; kernel && i < 2 && !out[0]; i++) {
		char *path = i ? aw_asprintf("%s%sproc/config.gz", f->root, sep)
		               : aw_asprintf("%s%sboot/config-%s", f->root, sep, kernel);
		char *data = NULL;
		size_t len = 0;

		if (path && !aw_read_file(path, CONFIG_LIMIT, &data, &len, NULL) &&
		    !aw_sha256_hex(data, len, hex))
			snprintf(out, 17, "%.16s", hex);
		free(data);
		free(path);
	}
}

static json_t *changing_json(const struct fp *f, const struct aw_fp_source *src,
                             const struct aw_topology *t, const char *arch, const char *kernel,
                             const char *kernel_version)
{
	json_t *o = json_object();
	bool ok = o != NULL;
	char microcode[64] = "", governor[64] = "", cflags[1024], config_hash[17];
	long max_khz = -1;

	if (!ok)
		return NULL;
	/* x86 shows the loaded microcode; arm64 has no such thing, REVIDR_EL1 is the nearest */
	if (!cpuinfo_get(f, "microcode", microcode, sizeof(microcode)) && is_aarch64(arch))
		read_cpu_attr(f, f->first_cpu, "regs/identification/revidr_el1", microcode,
		              sizeof(microcode));
	read_cpu_attr(f, f->first_cpu, "cpufreq/scaling_governor", governor, sizeof(governor));
	/* the fastest core's ceiling: on big.LITTLE each cluster has its own */
	for (int c = aw_cpuset_next(&t->online, -1); c >= 0; c = aw_cpuset_next(&t->online, c)) {
		long khz = read_cpu_long(f, c, "cpufreq/cpuinfo_max_freq");

		if (khz > max_khz)
			max_khz = khz;
	}
	aw_cpulist_format(&t->online, f->list, LIST_LEN);
	tidy_copy(cflags, sizeof(cflags), AW_CFLAGS, sizeof(AW_CFLAGS));
	put(o, "kernel", str_or_null(kernel), &ok);
	put(o, "kernel_version", str_or_null(kernel_version), &ok);
	kernel_config_hash(f, kernel, config_hash);
	put(o, "kernel_config_hash", str_or_null(config_hash), &ok);
	put(o, "microcode", str_or_null(microcode), &ok);
	put(o, "governor", str_or_null(governor), &ok);
	put(o, "cpufreq_max_khz", int_or_null(max_khz), &ok);
	put(o, "online_cpus", json_string(f->list), &ok);
	put(o, "compiler", json_string(AW_COMPILER), &ok);
	put(o, "cflags", json_string(cflags), &ok);
	put(o, "timer", str_or_null(src->timer_name), &ok);
	put(o, "timer_hz", src->timer_hz > 0 ? json_real(src->timer_hz) : json_null(), &ok);
	if (!ok)
		json_decref(o);
	return ok ? o : NULL;
}

/* First 16 hex digits of SHA-256 over the compact, key-sorted JSON of `stable`. */
static int platform_hash(const json_t *stable, char *out)
{
	char hex[AW_SHA256_HEX_LEN + 1];
	char *canon = json_dumps(stable, JSON_COMPACT | JSON_SORT_KEYS);
	int rc;

	if (!canon)
		return -ENOMEM;
	rc = aw_sha256_hex(canon, strlen(canon), hex);
	free(canon);
	if (!rc) {
		memcpy(out, hex, PLATFORM_HASH_LEN);
		out[PLATFORM_HASH_LEN] = '\0';
	}
	return rc;
}

/* The node name made into a valid host name: [A-Za-z0-9._-], at most AW_NAME_MAX. */
static void sanitize_name(const char *in, char *out, size_t len)
{
	size_t o = 0;

	for (; *in && o + 1 < len && o < AW_NAME_MAX; in++) {
		unsigned char c = (unsigned char)*in;

		out[o++] = isalnum(c) || c == '.' || c == '_' || c == '-' ? (char)c : '-';
	}
	out[o] = '\0';
	if (!o)
		snprintf(out, len, "localhost");
}

json_t *aw_fingerprint(const struct aw_fp_source *src, const char *host_name, const json_t *labels,
                       char **err)
{
	static const struct aw_fp_source defaults = {.lse = -1};
	struct fp f = {0};
	struct aw_topology t;
	struct utsname uts;
	const char *arch, *kernel, *kernel_version;
	char name[AW_NAME_MAX + 1], cpu_model[256], hash[PLATFORM_HASH_LEN + 1];
	json_t *host = NULL, *labels_copy = NULL, *stable = NULL, *changing = NULL;
	bool ok = true;
	int rc;

	memset(&t, 0, sizeof(t));
	if (!src)
		src = &defaults;
	f.root = src->root && *src->root ? src->root : "/";
	f.live = !strcmp(f.root, "/");
	if (labels && !json_is_object(labels)) {
		aw_errorf(err, -EINVAL, "host labels must be an object, not %s",
		          json_is_array(labels) ? "an array" : "a scalar");
		goto fail;
	}
	if (uname(&uts) < 0) {
		aw_errorf(err, -errno, "uname: %s", strerror(errno));
		goto fail;
	}
	arch = src->machine ? src->machine : uts.machine;
	kernel = src->kernel ? src->kernel : uts.release;
	kernel_version = src->kernel_version ? src->kernel_version : uts.version;
	if (host_name)
		snprintf(name, sizeof(name), "%s", host_name);
	else
		sanitize_name(uts.nodename, name, sizeof(name));
	if (!aw_valid_name(host_name ? host_name : name)) {
		aw_errorf(err, -EINVAL,
		          "bad host name '%s' (1 to %d characters from [A-Za-z0-9._-])", name,
		          AW_NAME_MAX);
		goto fail;
	}
	rc = aw_topology_load(f.root, &t, err);
	if (rc)
		goto fail;
	f.first_cpu = aw_cpuset_next(&t.online, -1);
	f.cpuinfo = read_rel(&f, CPUINFO_LIMIT, "proc/cpuinfo");
	f.list = malloc(LIST_LEN);
	if (!f.list)
		goto nomem;

	/* the brand string on x86 (its hybrid types are only "P-core"/"E-core") */
	if (!is_x86(arch) || !cpuinfo_get(&f, "model name", cpu_model, sizeof(cpu_model)))
		types_model(&t, cpu_model, sizeof(cpu_model));
	stable = stable_json(&f, src, &t, arch, cpu_model);
	changing = changing_json(&f, src, &t, arch, kernel, kernel_version);
	labels_copy = labels ? json_deep_copy(labels) : json_object();
	host = json_object();
	if (!stable || !changing || !labels_copy || !host)
		goto nomem;
	rc = platform_hash(stable, hash);
	if (rc == -ENOMEM)
		goto nomem;
	if (rc) {
		aw_errorf(err, rc, "cannot hash the host fingerprint");
		goto fail;
	}
	put(host, "name", json_string(name), &ok);
	put(host, "arch", json_string(arch), &ok);
	put(host, "cpu_model", json_string(cpu_model), &ok);
	put(host, "platform_hash", json_string(hash), &ok);
	put(host, "labels", labels_copy, &ok);
	labels_copy = NULL;
	put(host, "stable", stable, &ok);
	stable = NULL;
	put(host, "changing", changing, &ok);
	changing = NULL;
	if (!ok)
		goto nomem;
	goto out;
nomem:
	aw_errorf(err, -ENOMEM, "out of memory building the host fingerprint");
fail:
	json_decref(host);
	host = NULL;
out:
	json_decref(labels_copy);
	json_decref(stable);
	json_decref(changing);
	free(f.list);
	free(f.cpuinfo);
	aw_topology_release(&t);
	return host;
}
