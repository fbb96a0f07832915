/* The CPU topology as Linux shows it in sysfs and /proc/cpuinfo, read below any root so that tests
 * can use fixture trees: packages, dies, clusters, cores, NUMA nodes, core types (MIDR on
 * aarch64, P/E on hybrid x86) and the near/far contender choices of the contention matrix. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/buf.h"
#include "aw/util.h"
#include "internal.h"

#define SYSFS_LIMIT   (64 * 1024)        /* a CPU list of 4096 CPUs fits many times */
#define CPUINFO_LIMIT (64 * 1024 * 1024) /* ~2 KiB per x86 CPU, 4096 CPUs */

/* x86 reports an unknown L2 id as BAD_APICID (0xffff) in cluster_id. */
#define X86_BAD_CLUSTER 65535

struct midr {
	bool known;
	unsigned implementer, variant, part, revision;
};

/* What /proc/cpuinfo tells of each processor. */
struct cpuinfo {
	bool readable;
	struct aw_cpuset processors;
	struct midr *midr; /* AW_MAX_CPUS entries */
	char model_name[64];
};

struct loader {
	const char *root;
	int rc;    /* first fatal error (allocation); missing files are not errors */
	char *err; /* its message */
};

static const struct {
	unsigned implementer, part;
	const char *name;
} midr_names[] = {
    /* Arm Ltd: the part numbers of each core's Technical Reference Manual (MIDR_EL1). */
    {0x41, 0xd02, "Cortex-A34"},
    {0x41, 0xd03, "Cortex-A53"},
    {0x41, 0xd04, "Cortex-A35"},
    {0x41, 0xd05, "Cortex-A55"},
    {0x41, 0xd06, "Cortex-A65"},
    {0x41, 0xd07, "Cortex-A57"},
    {0x41, 0xd08, "Cortex-A72"},
    {0x41, 0xd09, "Cortex-A73"},
    {0x41, 0xd0a, "Cortex-A75"},
    {0x41, 0xd0b, "Cortex-A76"},
    {0x41, 0xd0c, "Neoverse-N1"},
    {0x41, 0xd0d, "Cortex-A77"},
    {0x41, 0xd0e, "Cortex-A76AE"},
    {0x41, 0xd40, "Neoverse-V1"},
    {0x41, 0xd41, "Cortex-A78"},
    {0x41, 0xd42, "Cortex-A78AE"},
    {0x41, 0xd43, "Cortex-A65AE"},
    {0x41, 0xd44, "Cortex-X1"},
    {0x41, 0xd46, "Cortex-A510"},
    {0x41, 0xd47, "Cortex-A710"},
    {0x41, 0xd48, "Cortex-X2"},
    {0x41, 0xd49, "Neoverse-N2"},
    {0x41, 0xd4a, "Neoverse-E1"},
    {0x41, 0xd4b, "Cortex-A78C"},
    {0x41, 0xd4c, "Cortex-X1C"},
    {0x41, 0xd4d, "Cortex-A715"},
    {0x41, 0xd4e, "Cortex-X3"},
    {0x41, 0xd4f, "Neoverse-V2"},
    {0x41, 0xd80, "Cortex-A520"},
    {0x41, 0xd81, "Cortex-A720"},
    {0x41, 0xd82, "Cortex-X4"},
    {0x41, 0xd84, "Neoverse-V3"},
    {0x41, 0xd85, "Cortex-X925"},
    {0x41, 0xd87, "Cortex-A725"},
    {0x41, 0xd89, "Cortex-A720AE"},
    {0x41, 0xd8e, "Neoverse-N3"},
    /* Cavium, Fujitsu, HiSilicon */
    {0x43, 0x0af, "ThunderX2"},
    {0x46, 0x001, "A64FX"},
    {0x48, 0xd01, "TSV110"},
    {0x48, 0xd02, "HIP09"},
    /* NVIDIA */
    {0x4e, 0x000, "Denver"},
    {0x4e, 0x003, "Denver 2"},
    {0x4e, 0x004, "Carmel"},
    {0x4e, 0x010, "Olympus"},
    /* Qualcomm */
    {0x51, 0x001, "Oryon"},
    /* Apple: efficiency and performance cores of each generation */
    {0x61, 0x022, "Apple M1 Icestorm"},
    {0x61, 0x023, "Apple M1 Firestorm"},
    {0x61, 0x024, "Apple M1 Pro Icestorm"},
    {0x61, 0x025, "Apple M1 Pro Firestorm"},
    {0x61, 0x028, "Apple M1 Max Icestorm"},
    {0x61, 0x029, "Apple M1 Max Firestorm"},
    {0x61, 0x032, "Apple M2 Blizzard"},
    {0x61, 0x033, "Apple M2 Avalanche"},
    /* Microsoft's Cobalt 100 is a Neoverse-N2 under Microsoft's implementer code */
    {0x6d, 0xd49, "Azure Cobalt 100"},
    /* Phytium (FeiTeng) */
    {0x70, 0x303, "FTC310"},
    {0x70, 0x660, "FTC660"},
    {0x70, 0x661, "FTC661"},
    {0x70, 0x662, "FTC662"},
    {0x70, 0x663, "FTC663"},
    {0x70, 0x664, "FTC664"},
    {0x70, 0x862, "FTC862"},
    /* Ampere: Altra and Altra Max are Neoverse-N1 (0x41/0xd0c); AmpereOne is Ampere's own */
    {0xc0, 0xac3, "AmpereOne"},
    {0xc0, 0xac4, "AmpereOne-A"},
    {0xc0, 0xac5, "AmpereOne (0xac5)"},
};

const char *aw_midr_name(unsigned implementer, unsigned part)
{
	for (size_t i = 0; i < sizeof(midr_names) / sizeof(midr_names[0]); i++)
		if (midr_names[i].implementer == implementer && midr_names[i].part == part)
			return midr_names[i].name;
	return NULL;
}

int aw_read_below(const char *root, size_t limit, char **data, const char *fmt, va_list ap)
{
	struct aw_buf path;
	size_t len;
	int rc;

	*data = NULL;
	aw_buf_init(&path, PATH_MAX);
	rc = aw_buf_puts(&path, root);
	if (!rc && (!path.len || path.data[path.len - 1] != '/'))
		rc = aw_buf_puts(&path, "/");
	if (!rc)
		rc = aw_buf_vprintf(&path, fmt, ap);
	if (!rc)
		rc = aw_read_file(path.data, limit, data, &len, NULL);
	aw_buf_release(&path);
	return rc;
}

/* Reads root/<rel>. NULL when the file is missing or unreadable, which is normal in containers
 * and VMs; only running out of memory is recorded as fatal, in l->rc. The caller frees. */
__attribute__((format(printf, 3, 4))) static char *read_rel(struct loader *l, size_t limit,
                                                            const char *fmt, ...)
{
	va_list ap;
	char *data = NULL;
	int rc;

	if (l->rc)
		return NULL;
	va_start(ap, fmt);
	rc = aw_read_below(l->root, limit, &data, fmt, ap);
	va_end(ap);
	if (rc == -ENOMEM)
		l->rc = aw_errorf(&l->err, rc, "out of memory reading the topology below '%s'",
		                  l->root);
	return rc ? NULL : data;
}

/* A decimal attribute such as "3" or "-1"; -1 when missing or not a number. */
static int read_cpu_int(struct loader *l, int cpu, const char *attr)
{
	char *text = read_rel(l, SYSFS_LIMIT, "sys/devices/system/cpu/cpu%d/%s", cpu, attr);
	char *end;
	long v;

	if (!text)
		return -1;
	errno = 0;
	v = strtol(text, &end, 10);
	if (errno || end == text || v < 0 || v > INT_MAX)
		v = -1;
	while (*end && isspace((unsigned char)*end))
		end++;
	if (*end)
		v = -1;
	free(text);
	return (int)v;
}

/* A CPU-list file into *out; false when missing or malformed. */
static bool read_list(struct loader *l, struct aw_cpuset *out, const char *rel)
{
	char *text = read_rel(l, SYSFS_LIMIT, "%s", rel);
	bool ok = text && aw_cpulist_parse(text, out, NULL) == 0;

	free(text);
	if (!ok)
		aw_cpuset_clear(out);
	return ok;
}

static bool read_cpu_list(struct loader *l, int cpu, const char *attr, struct aw_cpuset *out)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/%s", cpu, attr);
	return read_list(l, out, rel);
}

static void set_union(struct aw_cpuset *dst, const struct aw_cpuset *src)
{
	for (size_t i = 0; i < sizeof(dst->bits) / sizeof(dst->bits[0]); i++)
		dst->bits[i] |= src->bits[i];
}

/* Collapses runs of blanks and drops control and non-ASCII bytes, so that the name is one clean
 * line whatever the kernel or firmware put there. */
static void tidy_copy(char *dst, size_t len, const char *src, size_t n)
{
	size_t o = 0;
	bool space = false;

	for (size_t i = 0; i < n && o + 1 < len; i++) {
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

/* Splits "key<blanks>: value" in place; false for lines without a colon. */
static bool split_line(char *line, char **key, char **value)
{
	char *colon = strchr(line, ':'), *end;

	if (!colon)
		return false;
	end = colon;
	while (end > line && isspace((unsigned char)end[-1]))
		end--;
	*end = '\0';
	*key = line;
	colon++;
	while (*colon && isspace((unsigned char)*colon))
		colon++;
	end = colon + strlen(colon);
	while (end > colon && isspace((unsigned char)end[-1]))
		end--;
	*end = '\0';
	*value = colon;
	return true;
}

static bool parse_uint(const char *s, int base, unsigned max, unsigned *out)
{
	char *end;
	unsigned long v;

	if (!*s || *s == '-')
		return false;
	errno = 0;
	v = strtoul(s, &end, base);
	if (errno || *end || v > max)
		return false;
	*out = (unsigned)v;
	return true;
}

/* Parses the per-processor blocks of /proc/cpuinfo: which processors are listed (online), the
 * MIDR fields of each (aarch64) and the first "model name" (x86). */
static int cpuinfo_load(struct loader *l, struct cpuinfo *ci)
{
	char *text = read_rel(l, CPUINFO_LIMIT, "proc/cpuinfo");
	char *line, *next, *key, *value;
	struct midr *cur = NULL;
	bool have_implementer = false;

	memset(ci, 0, sizeof(*ci));
	if (!text)
		return l->rc;
	ci->midr = calloc(AW_MAX_CPUS, sizeof(*ci->midr));
	if (!ci->midr) {
		free(text);
		return l->rc = aw_errorf(&l->err, -ENOMEM,
		                         "out of memory reading '%s/proc/cpuinfo'", l->root);
	}
	ci->readable = true;
	for (line = text; line && *line; line = next) {
		unsigned v;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!split_line(line, &key, &value))
			continue;
		if (!strcmp(key, "processor")) {
			cur = NULL;
			have_implementer = false;
			if (parse_uint(value, 10, AW_MAX_CPUS - 1, &v)) {
				aw_cpuset_set(&ci->processors, (int)v);
				cur = &ci->midr[v];
			}
		} else if (!strcmp(key, "model name") && !ci->model_name[0]) {
			tidy_copy(ci->model_name, sizeof(ci->model_name), value, strlen(value));
		} else if (cur && !strcmp(key, "CPU implementer") &&
		           parse_uint(value, 0, 0xff, &v)) {
			cur->implementer = v;
			have_implementer = true;
		} else if (cur && !strcmp(key, "CPU variant") && parse_uint(value, 0, 0xf, &v)) {
			cur->variant = v;
		} else if (cur && !strcmp(key, "CPU part") && parse_uint(value, 0, 0xfff, &v)) {
			cur->part = v;
			/* implementer and part together identify a core type */
			cur->known = have_implementer;
		} else if (cur && !strcmp(key, "CPU revision") && parse_uint(value, 0, 0xf, &v)) {
			cur->revision = v;
		}
	}
	free(text);
	return 0;
}

static void cpuinfo_release(struct cpuinfo *ci)
{
	free(ci->midr);
	ci->midr = NULL;
}

/* MIDR_EL1 as sysfs shows it ("0x00000000413fd0c1"), else the cpuinfo block of that CPU. */
static struct midr cpu_midr(struct loader *l, const struct cpuinfo *ci, int cpu)
{
	struct midr m = {0};
	char *text = read_rel(l, SYSFS_LIMIT,
	                      "sys/devices/system/cpu/cpu%d/regs/identification/midr_el1", cpu);

	if (text) {
		char *end;
		unsigned long long v;
		bool converted;

		errno = 0;
		v = strtoull(text, &end, 16);
		converted = !errno && end != text;
		while (*end && isspace((unsigned char)*end))
			end++;
		if (converted && !*end) {
			m.known = true;
			m.implementer = (unsigned)(v >> 24) & 0xff;
			m.variant = (unsigned)(v >> 20) & 0xf;
			m.part = (unsigned)(v >> 4) & 0xfff;
			m.revision = (unsigned)v & 0xf;
		}
		free(text);
	}
	if (!m.known && ci->midr)
		m = ci->midr[cpu];
	return m;
}

/* The index of the type with this identity, added when new; -E2BIG when the table is full. */
static int type_index(struct aw_topology *t, const char *model, const struct midr *m)
{
	struct aw_core_type *ty;

	for (int i = 0; i < t->n_types; i++) {
		ty = &t->types[i];
		if (ty->implementer == m->implementer && ty->part == m->part &&
		    !strcmp(ty->model, model))
			return i;
	}
	if (t->n_types == AW_MAX_CORE_TYPES)
		return -E2BIG;
	ty = &t->types[t->n_types];
	snprintf(ty->model, sizeof(ty->model), "%s", model);
	ty->implementer = m->implementer;
	ty->part = m->part;
	ty->variant = m->variant;
	ty->revision = m->revision;
	aw_cpuset_clear(&ty->cpus);
	return t->n_types++;
}

/* Groups online CPUs by MIDR implementer/part when any CPU has one (aarch64), else by the
 * hybrid PMUs cpu_core/cpu_atom (x86 P- and E-cores), else into one type named after the
 * CPU model. */
static int load_types(struct loader *l, struct aw_topology *t, const struct cpuinfo *ci)
{
	struct midr *midrs = calloc((size_t)t->n_cpus, sizeof(*midrs));
	struct midr none = {0};
	struct aw_cpuset p_cores = {{0}}, e_cores = {{0}};
	bool any_midr = false, hybrid = false;
	const char *fallback = ci->model_name[0] ? ci->model_name : "unknown";
	int cpu, rc = 0;

	if (!midrs)
		return aw_errorf(&l->err, -ENOMEM, "out of memory reading the core types");
	for (cpu = aw_cpuset_next(&t->online, -1); cpu >= 0;
	     cpu = aw_cpuset_next(&t->online, cpu)) {
		midrs[cpu] = cpu_midr(l, ci, cpu);
		any_midr |= midrs[cpu].known;
	}
	if (!any_midr) {
		bool p = read_list(l, &p_cores, "sys/devices/cpu_core/cpus");
		bool e = read_list(l, &e_cores, "sys/devices/cpu_atom/cpus");

		hybrid = p || e;
	}
	if (l->rc) {
		rc = l->rc;
		goto out;
	}
	for (cpu = aw_cpuset_next(&t->online, -1); cpu >= 0;
	     cpu = aw_cpuset_next(&t->online, cpu)) {
		char model[64];
		const struct midr *m = &none;
		int idx;

		if (any_midr && midrs[cpu].known) {
			const char *name = aw_midr_name(midrs[cpu].implementer, midrs[cpu].part);

			m = &midrs[cpu];
			if (name)
				snprintf(model, sizeof(model), "%s", name);
			else
				snprintf(model, sizeof(model), "aarch64 0x%02x/0x%03x",
				         m->implementer, m->part);
		} else if (any_midr) {
			snprintf(model, sizeof(model), "unknown");
		} else if (hybrid && aw_cpuset_has(&p_cores, cpu)) {
			snprintf(model, sizeof(model), "x86 P-core");
		} else if (hybrid && aw_cpuset_has(&e_cores, cpu)) {
			snprintf(model, sizeof(model), "x86 E-core");
		} else {
			snprintf(model, sizeof(model), "%s", fallback);
		}
		idx = type_index(t, model, m);
		if (idx < 0) {
			rc = aw_errorf(&l->err, idx, "more than %d core types below '%s'",
			               AW_MAX_CORE_TYPES, l->root);
			goto out;
		}
		aw_cpuset_set(&t->types[idx].cpus, cpu);
		t->cpus[cpu].core_type = idx;
	}
out:
	free(midrs);
	return rc;
}

/* The NUMA node of each CPU from node/nodeN/cpulist; absent on kernels without NUMA and in
 * some containers, where nodes stay unknown. */
static int load_nodes(struct loader *l, struct aw_topology *t)
{
	char *dir = aw_asprintf("%s/sys/devices/system/node", l->root);
	DIR *d;
	struct dirent *e;

	if (!dir)
		return l->rc = aw_errorf(&l->err, -ENOMEM, "out of memory reading NUMA nodes");
	d = opendir(dir);
	free(dir);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		struct aw_cpuset cpus;
		unsigned node;
		char rel[300];

		if (strncmp(e->d_name, "node", 4) || !isdigit((unsigned char)e->d_name[4]) ||
		    !parse_uint(e->d_name + 4, 10, INT_MAX, &node))
			continue;
		snprintf(rel, sizeof(rel), "sys/devices/system/node/%s/cpulist", e->d_name);
		if (!read_list(l, &cpus, rel))
			continue;
		for (int cpu = aw_cpuset_next(&cpus, -1); cpu >= 0 && cpu < t->n_cpus;
		     cpu = aw_cpuset_next(&cpus, cpu))
			t->cpus[cpu].node = (int)node;
	}
	closedir(d);
	return l->rc;
}

/* CPU directories cpuN, for trees that lack every CPU-list file. */
static void scan_cpu_dirs(struct loader *l, struct aw_cpuset *out)
{
	char *dir = aw_asprintf("%s/sys/devices/system/cpu", l->root);
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *e;

	aw_cpuset_clear(out);
	free(dir);
	if (!d)
		return;
	while ((e = readdir(d))) {
		unsigned cpu;

		if (!strncmp(e->d_name, "cpu", 3) && isdigit((unsigned char)e->d_name[3]) &&
		    parse_uint(e->d_name + 3, 10, AW_MAX_CPUS - 1, &cpu))
			aw_cpuset_set(out, (int)cpu);
	}
	closedir(d);
}

static bool same_core(const struct aw_cpu_topo *a, const struct aw_cpu_topo *b)
{
	return a->core >= 0 && a->core == b->core && a->package == b->package && a->die == b->die &&
	       a->cluster == b->cluster;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Distinct known values of one field among online CPUs; -1 when no CPU knows it. */
static int count_distinct(const struct aw_topology *t, size_t offset, int *scratch)
{
	int n = 0, distinct = 0;

	for (int cpu = aw_cpuset_next(&t->online, -1); cpu >= 0;
	     cpu = aw_cpuset_next(&t->online, cpu)) {
		int v = *(const int *)((const char *)&t->cpus[cpu] + offset);

		if (v >= 0)
			scratch[n++] = v;
	}
	if (!n)
		return -1;
	qsort(scratch, (size_t)n, sizeof(*scratch), cmp_int);
	for (int i = 0; i < n; i++)
		distinct += !i || scratch[i] != scratch[i - 1];
	return distinct;
}

/* Per-CPU fields, SMT and the core count. A core is identified by its sibling list where sysfs
 * has one (core_cpus_list, older kernels thread_siblings_list), else by package, die, cluster
 * and core_id together, since core_id alone is only unique within its parent. */
static int load_cpus(struct loader *l, struct aw_topology *t)
{
	int *first_sibling = malloc((size_t)t->n_cpus * sizeof(int));
	int cpu;

	if (!first_sibling)
		return l->rc = aw_errorf(&l->err, -ENOMEM, "out of memory reading the topology");
	for (cpu = 0; cpu < t->n_cpus; cpu++) {
		struct aw_cpu_topo *c = &t->cpus[cpu];
		struct aw_cpuset siblings, online_siblings;
		bool have_siblings;

		first_sibling[cpu] = -1;
		if (!c->present)
			continue;
		c->package = read_cpu_int(l, cpu, "topology/physical_package_id");
		c->die = read_cpu_int(l, cpu, "topology/die_id");
		c->cluster = read_cpu_int(l, cpu, "topology/cluster_id");
		if (c->cluster == X86_BAD_CLUSTER)
			c->cluster = -1;
		c->core = read_cpu_int(l, cpu, "topology/core_id");
		have_siblings = read_cpu_list(l, cpu, "topology/core_cpus_list", &siblings) ||
		                read_cpu_list(l, cpu, "topology/thread_siblings_list", &siblings);
		if (!have_siblings || !c->online)
			continue;
		aw_cpuset_set(&siblings, cpu);
		if (c->core < 0)
			c->core = aw_cpuset_next(&siblings, -1); /* the best identity left */
		for (size_t i = 0; i < sizeof(siblings.bits) / sizeof(siblings.bits[0]); i++)
			online_siblings.bits[i] = siblings.bits[i] & t->online.bits[i];
		first_sibling[cpu] = aw_cpuset_next(&online_siblings, -1);
		if (aw_cpuset_count(&online_siblings) > 1)
			t->smt = true;
	}
	for (cpu = aw_cpuset_next(&t->online, -1); cpu >= 0;
	     cpu = aw_cpuset_next(&t->online, cpu)) {
		bool leader = true;

		if (first_sibling[cpu] >= 0) {
			leader = first_sibling[cpu] == cpu;
		} else {
			for (int o = aw_cpuset_next(&t->online, -1); o >= 0 && o < cpu;
			     o = aw_cpuset_next(&t->online, o)) {
				if (same_core(&t->cpus[o], &t->cpus[cpu])) {
					leader = false;
					t->smt = true;
					break;
				}
			}
		}
		t->n_cores += leader;
	}
	free(first_sibling);
	return l->rc;
}

void aw_topology_release(struct aw_topology *t)
{
	free(t->cpus);
	memset(t, 0, sizeof(*t));
}

int aw_topology_load(const char *root, struct aw_topology *t, char **err)
{
	struct loader l = {.root = root && *root ? root : "/"};
	struct cpuinfo ci = {0};
	struct aw_cpuset possible, present, online, dirs;
	bool have_possible, have_present, have_online;
	int *scratch = NULL;
	int rc, cpu, last;

	memset(t, 0, sizeof(*t));
	have_possible = read_list(&l, &possible, "sys/devices/system/cpu/possible");
	have_present = read_list(&l, &present, "sys/devices/system/cpu/present");
	have_online = read_list(&l, &online, "sys/devices/system/cpu/online");
	rc = cpuinfo_load(&l, &ci);
	if (rc)
		goto out;
	aw_cpuset_clear(&dirs);
	if (!have_possible && !have_present && !have_online)
		scan_cpu_dirs(&l, &dirs);

	/* Each list falls back on the next best source; a tree may hold any subset of them. */
	if (!have_online) {
		if (aw_cpuset_count(&ci.processors))
			online = ci.processors;
		else if (have_present)
			online = present;
		else if (have_possible)
			online = possible;
		else
			online = dirs;
	}
	if (!have_present)
		present = have_possible ? possible : dirs;
	set_union(&present, &online);
	set_union(&possible, &present);
	if (!aw_cpuset_count(&online)) {
		const char *sep = l.root[strlen(l.root) - 1] == '/' ? "" : "/";

		rc = aw_errorf(&l.err, -ENOENT, "no online CPU listed in '%s%s%s' or '%s%s%s'",
		               l.root, sep, "sys/devices/system/cpu/online", l.root, sep,
		               "proc/cpuinfo");
		goto out;
	}
	for (cpu = aw_cpuset_next(&possible, -1), last = cpu; cpu >= 0;
	     cpu = aw_cpuset_next(&possible, cpu))
		last = cpu;
	t->n_cpus = last + 1;
	t->cpus = calloc((size_t)t->n_cpus, sizeof(*t->cpus));
	scratch = malloc((size_t)t->n_cpus * sizeof(*scratch));
	if (!t->cpus || !scratch) {
		rc = aw_errorf(&l.err, -ENOMEM, "out of memory reading the topology");
		goto out;
	}
	t->online = online;
	for (cpu = 0; cpu < t->n_cpus; cpu++) {
		struct aw_cpu_topo *c = &t->cpus[cpu];

		c->present = aw_cpuset_has(&present, cpu);
		c->online = aw_cpuset_has(&online, cpu);
		c->package = c->die = c->cluster = c->core = c->node = c->core_type = -1;
	}
	rc = load_cpus(&l, t);
	if (!rc)
		rc = load_nodes(&l, t);
	if (!rc)
		rc = load_types(&l, t, &ci);
	if (rc)
		goto out;
	t->n_packages = count_distinct(t, offsetof(struct aw_cpu_topo, package), scratch);
	t->n_nodes = count_distinct(t, offsetof(struct aw_cpu_topo, node), scratch);
out:
	free(scratch);
	cpuinfo_release(&ci);
	if (rc) {
		aw_topology_release(t);
		if (err)
			*err = l.err;
		else
			free(l.err);
		l.err = NULL;
	}
	return rc;
}

static bool usable(const struct aw_topology *t, int cpu, const char **why)
{
	if (cpu < 0 || cpu >= t->n_cpus || !t->cpus[cpu].online) {
		*why = "CPU is not online";
		return false;
	}
	if (aw_cpuset_count(&t->online) < 2) {
		*why = "only one online CPU";
		return false;
	}
	return true;
}

enum level {
	SAME_CLUSTER,
	SAME_DIE,
	SAME_PACKAGE
};

/* Whether b shares the level with a; an unknown id (-1) shares nothing, but the parents of a
 * known level only need to agree (arm64 has no die_id, x86 often no usable cluster_id). */
static bool shares(const struct aw_cpu_topo *a, const struct aw_cpu_topo *b, enum level lv)
{
	switch (lv) {
	case SAME_CLUSTER:
		return a->cluster >= 0 && a->cluster == b->cluster && a->package == b->package &&
		       a->die == b->die;
	case SAME_DIE:
		return a->die >= 0 && a->die == b->die && a->package == b->package;
	case SAME_PACKAGE:
		return a->package >= 0 && a->package == b->package;
	}
	return false;
}

int aw_topology_near(const struct aw_topology *t, int cpu, const char **why)
{
	static const char *const reasons[] = {
	    [SAME_CLUSTER] = "another core in the same cluster",
	    [SAME_DIE] = "another core on the same die",
	    [SAME_PACKAGE] = "another core in the same package",
	};
	const char *dummy;
	const struct aw_cpu_topo *me;
	int c;

	if (!why)
		why = &dummy;
	if (!usable(t, cpu, why))
		return -1;
	me = &t->cpus[cpu];
	/* A different core first: an SMT sibling shares the L1, so the line would never move. */
	for (int lv = SAME_CLUSTER; lv <= SAME_PACKAGE; lv++) {
		for (c = aw_cpuset_next(&t->online, -1); c >= 0;
		     c = aw_cpuset_next(&t->online, c)) {
			if (c != cpu && shares(me, &t->cpus[c], (enum level)lv) &&
			    !same_core(me, &t->cpus[c])) {
				*why = reasons[lv];
				return c;
			}
		}
	}
	for (c = aw_cpuset_next(&t->online, -1); c >= 0; c = aw_cpuset_next(&t->online, c)) {
		if (c != cpu && same_core(me, &t->cpus[c])) {
			*why = "an SMT sibling on the same core (no other core nearby)";
			return c;
		}
	}
	c = aw_cpuset_next(&t->online, -1);
	if (c == cpu)
		c = aw_cpuset_next(&t->online, c);
	*why = "another online CPU (topology unknown)";
	return c;
}

int aw_topology_far(const struct aw_topology *t, int cpu, const char **why)
{
	const char *dummy;
	const struct aw_cpu_topo *me;
	int c;

	if (!why)
		why = &dummy;
	if (!usable(t, cpu, why))
		return -1;
	me = &t->cpus[cpu];
	if (me->package >= 0) {
		for (c = aw_cpuset_next(&t->online, -1); c >= 0;
		     c = aw_cpuset_next(&t->online, c)) {
			if (t->cpus[c].package >= 0 && t->cpus[c].package != me->package) {
				*why = "a CPU in another package";
				return c;
			}
		}
	}
	if (me->node >= 0) {
		for (c = aw_cpuset_next(&t->online, -1); c >= 0;
		     c = aw_cpuset_next(&t->online, c)) {
			if (t->cpus[c].node >= 0 && t->cpus[c].node != me->node) {
				*why = "a CPU in another NUMA node";
				return c;
			}
		}
	}
	if (t->n_packages == 1 && t->n_nodes == 1)
		*why = "one package and one NUMA node";
	else if (t->n_packages == 1 && t->n_nodes < 0)
		*why = "one package and NUMA nodes unknown";
	else if (t->n_packages < 0 && t->n_nodes == 1)
		*why = "one NUMA node and packages unknown";
	else if (t->n_packages < 0 && t->n_nodes < 0)
		*why = "packages and NUMA nodes unknown";
	else
		*why = "package and NUMA node of this CPU unknown";
	return -1;
}

void aw_topology_first_per_type(const struct aw_topology *t, struct aw_cpuset *out)
{
	aw_cpuset_clear(out);
	for (int i = 0; i < t->n_types; i++) {
		for (int c = aw_cpuset_next(&t->types[i].cpus, -1); c >= 0;
		     c = aw_cpuset_next(&t->types[i].cpus, c)) {
			if (aw_cpuset_has(&t->online, c)) {
				aw_cpuset_set(out, c);
				break;
			}
		}
	}
}
