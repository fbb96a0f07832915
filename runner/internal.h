/* Runner internals shared between its modules: op names, topology, fingerprint, matrix file,
 * the measurement engine and output. Other components use include/atomwatch/runner.h. */
#ifndef AW_RUNNER_INTERNAL_H
#define AW_RUNNER_INTERNAL_H

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aw/result.h"
#include "atomwatch/runner.h"
#include "kernels.h"
#include "timer.h"

/* ---- op and reader names (opnames.c) ---- */

/* Every op name of DESIGN.md's matrix, on every architecture, so that a matrix file is
 * validated the same way wherever it is read. */
struct aw_op_info {
	const char *name;
	const char *arch; /* "x86_64", "aarch64", or NULL for every architecture */
	bool atomic;      /* correct under contention and as srcu_nmisafe's inc */
	bool lse;         /* needs LSE (aarch64) */
};

const struct aw_op_info *aw_op_infos(unsigned *n);
const struct aw_op_info *aw_op_lookup(const char *name); /* NULL if unknown */
bool aw_op_on_arch(const struct aw_op_info *op, const char *arch);
bool aw_reader_known(const char *name); /* srcu, srcu_fast, srcu_nmisafe, urcu_memb */

/* ---- CPU sets (cpuset.c) ---- */

#define AW_MAX_CPUS 4096

struct aw_cpuset {
	uint64_t bits[AW_MAX_CPUS / 64];
};

void aw_cpuset_clear(struct aw_cpuset *s);
void aw_cpuset_set(struct aw_cpuset *s, int cpu);
bool aw_cpuset_has(const struct aw_cpuset *s, int cpu);
int aw_cpuset_count(const struct aw_cpuset *s);
/* The next member > `after` (pass -1 for the first), or -1. */
int aw_cpuset_next(const struct aw_cpuset *s, int after);

/* Parses a Linux CPU list ("0-3,8,10-11", whitespace/newline tolerated at the end). Returns 0
 * or -EINVAL with *err saying what is wrong. */
int aw_cpulist_parse(const char *s, struct aw_cpuset *out, char **err);

/* Formats a set as a compact CPU list into buf (always terminated). */
void aw_cpulist_format(const struct aw_cpuset *s, char *buf, size_t len);

/* ---- topology (topology.c) ---- */

/* Reads the file root/<fmt...> (fixture trees and "/" alike) into *data (NUL-terminated; the
 * caller frees). Returns 0 or the error of aw_read_file(): -ENOENT and the like are normal in
 * containers and VMs, -ENOMEM is not. */
int aw_read_below(const char *root, size_t limit, char **data, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

/* What sysfs says of one CPU; -1 where a field is unknown. */
struct aw_cpu_topo {
	bool present, online;
	int package, die, cluster, core, node;
	int core_type; /* index into aw_topology.types */
};

/* A kind of core: aarch64 MIDR implementer/part, or an x86 hybrid type (P/E). */
struct aw_core_type {
	char model[64]; /* human name, e.g. "Neoverse-V2", "Cortex-A520", "x86 P-core" */
	unsigned implementer, part, variant, revision; /* aarch64 MIDR fields; 0 elsewhere */
	struct aw_cpuset cpus;
};

#define AW_MAX_CORE_TYPES 8

struct aw_topology {
	int n_cpus;               /* highest possible CPU number + 1 */
	struct aw_cpu_topo *cpus; /* n_cpus entries */
	struct aw_cpuset online;
	struct aw_core_type types[AW_MAX_CORE_TYPES];
	int n_types;
	int n_packages, n_nodes, n_cores; /* distinct values among online CPUs */
	bool smt;                         /* some core has more than one online thread */
};

/* Reads the topology below `root` ("/" on a live system; a fixture tree in tests):
 * root/sys/devices/system/cpu/{online,present,cpuN/topology/...,cpuN/regs/identification/
 * midr_el1}, root/sys/devices/system/node/nodeN/cpulist, root/sys/devices/cpu_{core,atom}/cpus
 * and, for core types when sysfs lacks MIDR, root/proc/cpuinfo. Returns 0 or a negative errno
 * with *err. Release with aw_topology_release(). */
int aw_topology_load(const char *root, struct aw_topology *t, char **err);
void aw_topology_release(struct aw_topology *t);

/* A contender CPU for `cpu`: "near" is another core in the same cluster (else the same
 * package, else any other online CPU), preferring a different core to an SMT sibling; "far" is
 * a CPU in another package or NUMA node. Returns the CPU or -1 when the topology offers none
 * (*why then says so, statically allocated). */
int aw_topology_near(const struct aw_topology *t, int cpu, const char **why);
int aw_topology_far(const struct aw_topology *t, int cpu, const char **why);

/* The first online CPU of each core type, in CPU order. */
void aw_topology_first_per_type(const struct aw_topology *t, struct aw_cpuset *out);

/* Human name of an aarch64 implementer/part pair ("Neoverse-V2"), or NULL if unknown. */
const char *aw_midr_name(unsigned implementer, unsigned part);

/* ---- host fingerprint (fingerprint.c) ---- */

/* Inputs of a fingerprint; tests point them at fixtures. NULL/-1 fields mean "ask this host". */
struct aw_fp_source {
	const char *root;           /* filesystem root for /proc and /sys; NULL = "/" */
	const char *machine;        /* uname -m */
	const char *kernel;         /* uname -r */
	const char *kernel_version; /* uname -v */
	int lse;                    /* -1: getauxval(AT_HWCAP) & HWCAP_ATOMICS */
	double timer_hz;            /* <= 0: not recorded */
	const char *timer_name;
};

/* Builds the host object of the result document:
 *   {name, arch, cpu_model, platform_hash, labels{}, stable{...}, changing{...}}
 * stable: arch, vendor, cpu_model, implementer/part/variant/revision (aarch64) or
 *   family/model/stepping/brand (x86), cpus (possible), cores, packages, numa_nodes, core_types
 *   [{model, implementer, part, cpus, count}], smt, cache_line, lse;
 * changing: kernel, kernel_version, kernel_config_hash, microcode, governor, cpufreq_max_khz,
 *   online_cpus, compiler, cflags, timer, timer_hz.
 * platform_hash is the SHA-256 (first 16 hex digits) of the canonical JSON of `stable` only.
 * `labels` may be NULL. Returns a new object or NULL with *err. */
json_t *aw_fingerprint(const struct aw_fp_source *src, const char *host_name, const json_t *labels,
                       char **err);

/* ---- matrix file (matrix.c) ---- */

struct aw_reader_spec {
	char *reader;
	char **ops;
	size_t n_ops;
};

/* CPU selections: "all" (every online CPU), "first" (the first online CPU), "first-per-type"
 * (the first online CPU of each core type) or an explicit list such as "0,2-3". */
struct aw_profile {
	char *name;
	uint32_t samples;         /* batches per cell (>= 1) */
	uint64_t batch_min_ns;    /* a batch lasts at least this long ... */
	uint32_t batch_min_ticks; /* ... and at least this many timer ticks (>= 1000) */
	uint64_t warmup_ns;       /* warm-up before each cell's calibration */
	char *op_cpus;            /* per-CPU ops section */
	char **ops;
	size_t n_ops;
	char *reader_cpus; /* readers section */
	struct aw_reader_spec *readers;
	size_t n_readers;
	char *contention_cpus; /* contention x duty section */
	char **contention_ops;
	size_t n_contention_ops;
	int64_t *c_values; /* contender gaps; 0 = no contender */
	size_t n_c;
	int64_t *d_values; /* duty */
	size_t n_d;
	bool near, far; /* contender placements */
};

struct aw_matrix {
	char *path; /* where it was read from (for messages) */
	char *name;
	int64_t version;
	struct aw_profile *profiles;
	size_t n_profiles;
};

/* Reads and validates a matrix file. On error returns a negative errno and sets *err to
 * "path:line:col: what is wrong" (unknown key, unknown op or reader, bad number, missing
 * field, wrong YAML type, a profile extending an unknown one). */
int aw_matrix_load(const char *path, struct aw_matrix *m, char **err);

/* Same from memory; `label` stands for the path in messages. */
int aw_matrix_parse(const char *text, size_t len, const char *label, struct aw_matrix *m,
                    char **err);

void aw_matrix_release(struct aw_matrix *m);

/* The profile called `name`, or NULL. */
const struct aw_profile *aw_matrix_profile(const struct aw_matrix *m, const char *name);

/* SHA-256 (64 hex digits) of the canonical form of the matrix name, version and this resolved
 * profile: what decides whether two runs measured the same way. Returns 0 or -EIO. */
int aw_matrix_hash(const struct aw_matrix *m, const struct aw_profile *p, char *out);

/* ---- measurement engine (measure.c) ---- */

/* Batches of each reference kernel beside each cell (see aw_measure()): with the four kernels
 * of the family taking turns, 32 batches of about batch_min_ns per cell in all, the cost one
 * kernel had alone; each kernel's median of 8 is precise to a fraction of a percent on a
 * steady host (docs/benchmarks.md). A run that measures fewer batches per cell
 * (aw_runner_set_samples()) measures fewer of these too, never under the minimum. */
#define AW_REFERENCE_SAMPLES     8
#define AW_REFERENCE_MIN_SAMPLES 4

struct aw_measure_params {
	uint32_t samples;
	uint64_t batch_min_ns;
	uint32_t batch_min_ticks;
	uint64_t warmup_ns;
	const struct aw_timer *timer;
	uint32_t reference_samples; /* batches of each reference kernel per cell; 0: none */
	unsigned reference_kernels; /* which kernels: bits of enum aw_ref (aw/result.h) */
};

/* What the counter must hold after a cell. */
enum aw_count_check {
	AW_CHECK_VALUE,  /* value == ops */
	AW_CHECK_PAIR,   /* value == pair_hi == ops */
	AW_CHECK_READER, /* value (locks) == unlocks == pairs */
	AW_CHECK_NONE,   /* the op keeps its own state (liburcu) */
};

/* One cell's machinery. */
struct aw_job {
	aw_loop_fn timed, empty;
	const struct aw_call_ops *call; /* for the call-through loops */
	aw_contend_fn contend;          /* NULL: uncontended */
	int cpu, contender_cpu;
	uint32_t duty, gap;
	enum aw_count_check check;
	/* run on the measuring thread before and after the cell (liburcu registration) */
	void (*thread_init)(const void *thread_ctx);
	void (*thread_fini)(const void *thread_ctx);
	const void *thread_ctx;
};

/* Measures one cell in a thread pinned to job->cpu (a contender, when set, pinned to
 * job->contender_cpu and running before timing starts): warm-up, batch calibration, then
 * p->samples pairs of (empty loop, timed loop); fills cell's n, batch, statistics (net ns per op
 * after subtracting the empty loop's median), baseline_ns, below_resolution and status. With
 * p->reference_samples, each reference kernel of p->reference_kernels (kernels.h) is started
 * and calibrated the same way after the cell's calibration, then the kernels take turns for
 * that many batches each, spread evenly between the cell's samples, in the same thread, with
 * the contender running; cell->ref_ns[k] gets kernel k's median ns per step (NAN when the cell
 * was not timed; reference_ns is mulchain-v1's). Returns
 * 0, with cell->status failed and a reason when the cell could not be measured right (pinning
 * refused, contender not starting, wrong count), or a negative errno when memory or threads
 * are exhausted. */
int aw_measure(const struct aw_job *job, const struct aw_measure_params *p, struct aw_cell *cell);

/* What aw_measure() saw beyond the cell's figures (benchmarks compare it with other harnesses). */
struct aw_measure_detail {
	double gross_p50;    /* the op loop's median ns per op, before subtracting the empty loop */
	double gross_mean;   /* and its mean */
	double baseline_p50; /* the empty loop's median ns per op */
	uint64_t wall_ns;    /* the cell's wall time, thread start to join */
};

/* aw_measure() that also fills `detail` (when the cell was measured). */
int aw_measure_ex(const struct aw_job *job, const struct aw_measure_params *p, struct aw_cell *cell,
                  struct aw_measure_detail *detail);

/* ---- liburcu, an external reader peer (urcu.c) ---- */

struct aw_urcu {
	void *handle;
	void (*read_lock)(void);
	void (*read_unlock)(void);
	void (*register_thread)(void);
	void (*unregister_thread)(void);
	struct aw_call_ops call;
};

/* dlopens liburcu-memb. Returns 0, or -ENOENT with *why (static text) when it is not
 * installed. */
int aw_urcu_load(struct aw_urcu *u, const char **why);
void aw_urcu_release(struct aw_urcu *u);

/* ---- planning (plan.c) ---- */

struct aw_planned {
	struct aw_cell cell; /* identity (key, op, reader, cpu, contender, c, d); when skipped also
	                        status and reason */
	const char *section; /* "ops", "readers", "contention" */
	struct aw_job job;   /* unused when skipped */
};

struct aw_plan {
	struct aw_planned *cells;
	size_t n, cap;
};

struct aw_plan_env {
	const struct aw_topology *topo;
	const char *arch;           /* aw_build_arch() */
	bool lse;                   /* aw_cpu_has_lse() */
	const char *cpus_override;  /* --cpus, or NULL */
	const char *ops_filter;     /* --ops, or NULL */
	const struct aw_urcu *urcu; /* NULL when liburcu is not installed */
	const char *urcu_missing;   /* why, when urcu is NULL */
};

/* Expands a profile into cells for this host. Returns 0 or a negative errno with *err (unknown
 * op in --ops, an op of another architecture, a CPU that is not online, a bad CPU list). */
int aw_plan_build(const struct aw_profile *p, const struct aw_plan_env *env, struct aw_plan *out,
                  char **err);
void aw_plan_release(struct aw_plan *plan);

/* Resolves a CPU selection ("all", "first", "first-per-type" or a CPU list) against the online
 * CPUs of `t`. Returns 0, or -EINVAL with *err (a bad list, a CPU that is not online). */
int aw_cpus_resolve(const struct aw_topology *t, const char *sel, struct aw_cpuset *out,
                    char **err);

/* The built-in configs/matrix.yaml (generated at build time). */
extern const unsigned char aw_matrix_default[];
extern const unsigned long aw_matrix_default_len;

/* ---- output (output.c) ---- */

/* Appends the result as a table (per CPU, like percpu_bench: min/p50/p95/p99/max, the CI of
 * the median and the baseline) or as CSV. Returns 0 or a negative errno. */
struct aw_buf;
int aw_output_table(const struct aw_result *r, struct aw_buf *out);
int aw_output_csv(const struct aw_result *r, struct aw_buf *out);

#endif
