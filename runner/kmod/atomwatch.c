// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * atomwatch.ko: measures the running kernel's own per-CPU ops, atomics and SRCU readers in
 * kernel context, with the method of atomwatch's user-space runner (a pinned thread per CPU,
 * calibrated batches with preemption disabled, the empty loop measured beside each op and
 * subtracted, a counter check), and shows the results in debugfs. The format of the files is
 * documented in runner/kmod/README.md; the agent (agents/kmod.c) reads them.
 *
 * The measuring happens while the module loads: insmod returns once every cell is measured
 * (or fails without leaving anything loaded), rmmod removes the files and frees everything.
 */
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/irqflags.h>
#include <linux/kernel.h>
#include <linux/kthread.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/srcu.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/utsname.h>
#include <linux/version.h>
#include <linux/vmalloc.h>

#ifdef CONFIG_ARM64
#include <asm/cpufeature.h>
#include <asm/lse.h>
#endif

#define AW_KMOD_VERSION "0.1.0"
#define AW_FORMAT	1
#define AW_UNROLL	8
#define AW_START_ITERS	(AW_UNROLL * 16)
#define AW_MAX_BATCH_NS (5 * NSEC_PER_MSEC) /* preemption stays off at most this long */
#define AW_MAX_ITERS	(1ULL << 32)
#define AW_SAMPLES_MAX	100000
#define AW_MEM_MAX	(256UL << 20) /* all samples of all cells together */
#define AW_GP_WAIT_MS	10000
#define AW_REASON_LEN	160
#define AW_INSN_LEN	64

static char *cpus = "all";
module_param(cpus, charp, 0444);
MODULE_PARM_DESC(cpus, "CPUs to measure on: \"all\" (every online CPU) or a list such as 0,2-3");

static unsigned int samples = 200;
module_param(samples, uint, 0444);
MODULE_PARM_DESC(samples, "batches per cell, 1..100000 (default 200)");

static unsigned long batch_min_ns = 20000;
module_param(batch_min_ns, ulong, 0444);
MODULE_PARM_DESC(batch_min_ns, "a batch lasts at least this long (default 20000 ns)");

static unsigned int batch_min_ticks = 1000;
module_param(batch_min_ticks, uint, 0444);
MODULE_PARM_DESC(batch_min_ticks, "... and at least this many timer ticks (default 1000)");

static unsigned int warmup_us = 2000;
module_param(warmup_us, uint, 0444);
MODULE_PARM_DESC(warmup_us, "warm-up before each cell's calibration (default 2000 us)");

static char *prims = "all";
module_param(prims, charp, 0444);
MODULE_PARM_DESC(prims, "primitives to measure: \"all\" or a comma-separated list of names");

/* Every counter on its own 128-byte line, as the runner keeps them. */
struct aw_pcpu {
	unsigned long value __aligned(128);
	atomic_long_t atomic __aligned(128);
#if defined(this_cpu_cmpxchg128) && defined(CONFIG_64BIT)
	u128 dword __aligned(128);
#else
	unsigned long dword[2] __aligned(128);
#endif
	unsigned long sink __aligned(128);
};

static DEFINE_PER_CPU_ALIGNED(struct aw_pcpu, aw_pcpu);
static unsigned long aw_delta = 3; /* this_cpu_add's operand, read once per batch */

static struct srcu_struct aw_srcu;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define AW_HAVE_SRCU_NMISAFE 1
static struct srcu_struct aw_srcu_nmi;
#endif
#ifdef SRCU_READ_FLAVOR_FAST
#define AW_HAVE_SRCU_FAST 1
static struct srcu_struct aw_srcu_fast;
#endif

enum aw_check {
	AW_CHECK_VALUE,	 /* value == ops */
	AW_CHECK_VALUE3, /* value == 3 * ops (this_cpu_add of aw_delta) */
	AW_CHECK_ZERO,	 /* value == 0 (inc + dec) */
	AW_CHECK_DWORD,	 /* both halves == ops */
	AW_CHECK_ATOMIC, /* atomic == ops */
	AW_CHECK_SRCU,	 /* a grace period of the srcu_struct ends: no reader was left locked */
};

/* State of one cell while it is measured, in the measuring thread. */
struct aw_loop {
	unsigned long k; /* cmpxchg: the value the counter holds */
	unsigned long sink;
};

struct aw_prim {
	const char *name;
	const char *calls; /* what the timed loop calls, per op */
	u64 (*timed)(struct aw_loop *l, u64 iters);
	enum aw_check check;
	struct srcu_struct *ssp;
	const char *missing; /* why this kernel cannot measure it, or NULL */
	char insn[AW_INSN_LEN];
};

enum aw_status { AW_OK, AW_SKIPPED, AW_FAILED };

struct aw_cell {
	const struct aw_prim *prim;
	int cpu;
	enum aw_status status;
	char reason[AW_REASON_LEN];
	u64 iters, ops, n;
	u64 *timed_ns, *empty_ns; /* n each; into aw_samples */
	/* statistics in picoseconds per op (net of the empty loop) */
	u64 min, p50, p95, p99, max, mean, stddev, ci_lo, ci_hi, baseline;
	bool below_resolution;
};

struct aw_state {
	struct aw_cell *cells;
	size_t n_cells;
	u64 *samples_mem;
	u64 res_ns; /* the timer's resolution */
	cpumask_var_t mask;
	char cpulist[256];
	struct dentry *dir;
	int stop; /* READ_ONCE/WRITE_ONCE: raised when insmod is killed */
	u64 started_ns, finished_ns;
};

static struct aw_state aw;

/* ---- the timed loops ---- */

#define AW_REP8(x) \
	do {       \
		x; \
		x; \
		x; \
		x; \
		x; \
		x; \
		x; \
		x; \
	} while (0)

/*
 * One batch: `iters` ops (a multiple of AW_UNROLL), unrolled, between two timer reads.
 * noinline so that each loop is one function whose machine code can be looked at (see
 * scan_insns()).
 */
#define AW_LOOP(fname, setup, body, finish)                                   \
	static noinline u64 loop_##fname(struct aw_loop *l, u64 iters)        \
	{                                                                     \
		u64 t0, t1, i;                                                \
		setup;                                                        \
		t0 = ktime_get_raw_ns();                                      \
		for (i = 0; i < iters; i += AW_UNROLL)                        \
			AW_REP8(body);                                        \
		t1 = ktime_get_raw_ns();                                      \
		finish;                                                       \
		return t1 - t0;                                               \
	}

AW_LOOP(empty, (void)l, barrier(), (void)0)
AW_LOOP(this_cpu_inc, (void)l, this_cpu_inc(aw_pcpu.value), (void)0)
AW_LOOP(this_cpu_add, unsigned long d = READ_ONCE(aw_delta), this_cpu_add(aw_pcpu.value, d),
	(void)0)
AW_LOOP(this_cpu_add_return, unsigned long s = 0, s += this_cpu_add_return(aw_pcpu.value, 1),
	l->sink += s)
AW_LOOP(this_cpu_inc_dec, (void)l,
	{
		this_cpu_inc(aw_pcpu.value);
		this_cpu_dec(aw_pcpu.value);
	},
	(void)0)
AW_LOOP(this_cpu_cmpxchg, unsigned long k = l->k,
	{
		this_cpu_cmpxchg(aw_pcpu.value, k, k + 1);
		k++;
	},
	l->k = k)
/*
 * The double word through a per-CPU pointer held in a register, as SLUB's per-CPU slab is:
 * x86 builds this op as an alternative, and before 6.4 the alternatives did not relocate a
 * %rip-relative operand (what a static per-CPU variable would get) in the replacement.
 */
#define AW_DWORD_SETUP                                 \
	unsigned long k = l->k;                        \
	struct aw_pcpu __percpu *pp = &aw_pcpu;        \
	OPTIMIZER_HIDE_VAR(pp)
#if defined(this_cpu_cmpxchg128) && defined(CONFIG_64BIT)
#define AW_DWORD_CALLS "this_cpu_cmpxchg128"
AW_LOOP(this_cpu_cmpxchg128, AW_DWORD_SETUP,
	{
		u128 o = ((u128)k << 64) | k;
		u128 n = ((u128)(k + 1) << 64) | (k + 1);

		this_cpu_cmpxchg128(pp->dword, o, n);
		k++;
	},
	l->k = k)
#elif defined(this_cpu_cmpxchg_double)
#define AW_DWORD_CALLS "this_cpu_cmpxchg_double"
AW_LOOP(this_cpu_cmpxchg128, AW_DWORD_SETUP,
	{
		this_cpu_cmpxchg_double(pp->dword[0], pp->dword[1], k, k, k + 1, k + 1);
		k++;
	},
	l->k = k)
#endif
#if defined(CONFIG_X86_64) && defined(AW_DWORD_CALLS)
/*
 * x86's per-CPU double-word cmpxchg is an alternative between "call this_cpu_cmpxchg16b_emu"
 * and cmpxchg16b, and the kernel does not export the emulation to modules. The call is patched
 * into cmpxchg16b at load on every CPU with CX16, and the cell is skipped on CPUs without
 * (dword_missing()), so this stand-in is never reached; it traps if it ever is.
 */
asm(".pushsection .text\n"
    ".globl this_cpu_cmpxchg16b_emu\n"
    ".type this_cpu_cmpxchg16b_emu, @function\n"
    "this_cpu_cmpxchg16b_emu:\n"
    "\tud2\n"
    ".size this_cpu_cmpxchg16b_emu, . - this_cpu_cmpxchg16b_emu\n"
    ".popsection\n");
#endif
AW_LOOP(atomic_long_inc, atomic_long_t *a = this_cpu_ptr(&aw_pcpu.atomic), atomic_long_inc(a),
	(void)0)
AW_LOOP(srcu_read_lock, (void)l,
	{
		int idx = srcu_read_lock(&aw_srcu);

		srcu_read_unlock(&aw_srcu, idx);
	},
	(void)0)
#ifdef AW_HAVE_SRCU_NMISAFE
AW_LOOP(srcu_read_lock_nmisafe, (void)l,
	{
		int idx = srcu_read_lock_nmisafe(&aw_srcu_nmi);

		srcu_read_unlock_nmisafe(&aw_srcu_nmi, idx);
	},
	(void)0)
#endif
#ifdef AW_HAVE_SRCU_FAST
AW_LOOP(srcu_read_lock_fast, (void)l,
	{
		struct srcu_ctr __percpu *scp = srcu_read_lock_fast(&aw_srcu_fast);

		srcu_read_unlock_fast(&aw_srcu_fast, scp);
	},
	(void)0)
#endif
AW_LOOP(local_irq_save_inc, (void)l,
	{
		unsigned long flags;

		local_irq_save(flags);
		__this_cpu_inc(aw_pcpu.value);
		local_irq_restore(flags);
	},
	(void)0)
AW_LOOP(preempt_disable_inc, (void)l,
	{
		preempt_disable();
		__this_cpu_inc(aw_pcpu.value);
		preempt_enable();
	},
	(void)0)

/*
 * Cell names are the same on every architecture and kernel version (the cross-host heat map
 * lines them up); what a kernel lacks is skipped with the reason.
 */
static struct aw_prim aw_prims[] = {
	{ "this_cpu_inc", "this_cpu_inc", loop_this_cpu_inc, AW_CHECK_VALUE },
	{ "this_cpu_add", "this_cpu_add", loop_this_cpu_add, AW_CHECK_VALUE3 },
	{ "this_cpu_add_return", "this_cpu_add_return", loop_this_cpu_add_return,
	  AW_CHECK_VALUE },
	{ "this_cpu_inc_dec", "this_cpu_inc+this_cpu_dec", loop_this_cpu_inc_dec,
	  AW_CHECK_ZERO },
	{ "this_cpu_cmpxchg", "this_cpu_cmpxchg", loop_this_cpu_cmpxchg, AW_CHECK_VALUE },
#ifdef AW_DWORD_CALLS
	{ "this_cpu_cmpxchg128", AW_DWORD_CALLS, loop_this_cpu_cmpxchg128, AW_CHECK_DWORD },
#else
	{ "this_cpu_cmpxchg128", "-", NULL, AW_CHECK_DWORD, NULL,
	  "this kernel has neither this_cpu_cmpxchg128 nor this_cpu_cmpxchg_double" },
#endif
	{ "atomic_long_inc", "atomic_long_inc", loop_atomic_long_inc, AW_CHECK_ATOMIC },
	{ "srcu_read_lock", "srcu_read_lock+srcu_read_unlock", loop_srcu_read_lock,
	  AW_CHECK_SRCU, &aw_srcu },
#ifdef AW_HAVE_SRCU_FAST
	{ "srcu_read_lock_fast", "srcu_read_lock_fast+srcu_read_unlock_fast",
	  loop_srcu_read_lock_fast, AW_CHECK_SRCU, &aw_srcu_fast },
#else
	{ "srcu_read_lock_fast", "-", NULL, AW_CHECK_SRCU, NULL,
	  "this kernel has no SRCU fast readers (srcu_read_lock_fast came with 6.15)" },
#endif
#ifdef AW_HAVE_SRCU_NMISAFE
	{ "srcu_read_lock_nmisafe", "srcu_read_lock_nmisafe+srcu_read_unlock_nmisafe",
	  loop_srcu_read_lock_nmisafe, AW_CHECK_SRCU, &aw_srcu_nmi },
#else
	{ "srcu_read_lock_nmisafe", "-", NULL, AW_CHECK_SRCU, NULL,
	  "this kernel has no srcu_read_lock_nmisafe (it came with 6.2)" },
#endif
	{ "local_irq_save_inc", "local_irq_save+__this_cpu_inc+local_irq_restore",
	  loop_local_irq_save_inc, AW_CHECK_VALUE },
	{ "preempt_disable_inc", "preempt_disable+__this_cpu_inc+preempt_enable",
	  loop_preempt_disable_inc, AW_CHECK_VALUE },
};

#define AW_N_PRIMS ARRAY_SIZE(aw_prims)

/* ---- what the kernel decided ---- */

static const char *aw_arch(void)
{
#if defined(CONFIG_ARM64)
	return "aarch64";
#elif defined(CONFIG_X86_64)
	return "x86_64";
#else
	return init_utsname()->machine;
#endif
}

#ifdef CONFIG_ARM64
/*
 * Whether the kernel runs its atomics as LSE: the same alternative its own atomics and
 * per-CPU ops are patched with (system_uses_lse_atomics() in older kernels, alternative_has_cap_*()
 * in newer ones: this asks the alternatives themselves, whatever the version calls them).
 */
static bool aw_lse_in_use(void)
{
	unsigned long lse;

	asm volatile(ARM64_LSE_ATOMIC_INSN("mov %0, #0", "mov %0, #1") : "=r"(lse));
	return lse;
}
#endif

/* "yes"/"no" on arm64 (the alternatives chose LSE atomics), "n/a" elsewhere. */
static const char *aw_lse(void)
{
#ifdef CONFIG_ARM64
	return aw_lse_in_use() ? "yes" : "no";
#else
	return "n/a";
#endif
}

#ifdef CONFIG_ARM64
/*
 * The size of the function at `fn` as the compiler wrote it in this module's symbol table
 * (st_size), or 0. Not kallsyms' "name+off/size": that is the distance to the next symbol it
 * knows, which spans other functions when the compiler placed them in between.
 */
static size_t fn_size(const void *fn)
{
	size_t size = 0;
#ifdef CONFIG_KALLSYMS
	struct mod_kallsyms *ks;

	preempt_disable();
	ks = rcu_dereference_sched(THIS_MODULE->kallsyms);
	for (unsigned int i = 0; ks && i < ks->num_symtab; i++) {
		if (ks->symtab[i].st_value == (unsigned long)fn && ks->symtab[i].st_size) {
			size = ks->symtab[i].st_size;
			break;
		}
	}
	preempt_enable();
#endif
	return size;
}

/*
 * The atomic instructions in a loop's machine code as the alternatives patched it at load:
 * what the kernel's this_cpu_*() and atomics turned into on this machine.
 */
static void scan_insns(const void *fn, char *out, size_t len)
{
	enum { F_STADD = 1, F_LDADD = 2, F_LDXR = 4, F_STXR = 8, F_CAS = 16, F_CASP = 32,
	       F_LDXP = 64, F_STXP = 128 };
	static const char *const names[] = { "stadd", "ldadd", "ldxr", "stxr",
					     "cas",   "casp",  "ldxp", "stxp" };
	const __le32 *p = fn;
	size_t size = fn_size(fn), n = size ? size / 4 : 1024, o = 0;
	const unsigned int lse = F_STADD | F_LDADD | F_CAS | F_CASP;
	const unsigned int llsc = F_LDXR | F_STXR | F_LDXP | F_STXP;
	unsigned int seen = 0;

	for (size_t i = 0; i < n; i++) {
		u32 insn = le32_to_cpu(p[i]);

		if (!size && insn == 0xd65f03c0) /* ret */
			break;
		if ((insn & 0x3f20fc00) == 0x38200000) /* LDADD{,A,L,AL}; STADD is Rt == xzr */
			seen |= ((insn & 0x1f) == 0x1f && !(insn & (1u << 23))) ? F_STADD : F_LDADD;
		else if ((insn & 0x3fff7c00) == 0x085f7c00) /* LDXR, LDAXR */
			seen |= F_LDXR;
		else if ((insn & 0x3fe07c00) == 0x08007c00) /* STXR, STLXR */
			seen |= F_STXR;
		else if ((insn & 0x3fa07c00) == 0x08a07c00) /* CAS{,A,L,AL} */
			seen |= F_CAS;
		else if ((insn & 0xbfa07c00) == 0x08207c00) /* CASP{,A,L,AL} */
			seen |= F_CASP;
		else if ((insn & 0xbfff0000) == 0x887f0000) /* LDXP, LDAXP */
			seen |= F_LDXP;
		else if ((insn & 0xbfe00000) == 0x88200000) /* STXP, STLXP */
			seen |= F_STXP;
	}
	/*
	 * LSE atomics outside the per-CPU ops are chosen by a static branch, so both forms are in
	 * the code: keep the one the branch takes.
	 */
	if ((seen & lse) && (seen & llsc))
		seen &= aw_lse_in_use() ? lse : llsc;
	out[0] = '\0';
	for (size_t b = 0; b < ARRAY_SIZE(names); b++)
		if (seen & (1u << b))
			o += scnprintf(out + o, len - o, "%s%s", o ? "+" : "", names[b]);
	if (!o)
		scnprintf(out, len, "none");
}
#endif

/*
 * The per-CPU ops' instruction family: on arm64 what the alternatives patched into
 * this_cpu_inc; on x86-64 fixed by the architecture (%gs-relative, no lock prefix).
 */
static void aw_decide(char *family, size_t len)
{
#if defined(CONFIG_ARM64)
	for (size_t i = 0; i < AW_N_PRIMS; i++) {
		if (aw_prims[i].ssp) /* the atomics are in the out-of-line __srcu_read_lock() */
			strscpy(aw_prims[i].insn, "call", AW_INSN_LEN);
		else if (aw_prims[i].timed)
			scan_insns(aw_prims[i].timed, aw_prims[i].insn, AW_INSN_LEN);
	}
	scnprintf(family, len, "%s-%s", aw_lse_in_use() ? "lse" : "llsc",
		  aw_prims[0].insn);
#elif defined(CONFIG_X86_64)
	static const char *const x86[] = {
		"incq-gs",     "addq-gs",     "xaddq-gs",  "incq-gs+decq-gs", "cmpxchgq-gs",
		"cmpxchg16b-gs", "lock-incq", "call",	   "call",	      "call",
		"cli+incq-gs", "preempt_count+incq-gs",
	};

	BUILD_BUG_ON(ARRAY_SIZE(x86) != AW_N_PRIMS);
	for (size_t i = 0; i < AW_N_PRIMS; i++)
		strscpy(aw_prims[i].insn, x86[i], AW_INSN_LEN);
	if (!boot_cpu_has(X86_FEATURE_CX16))
		strscpy(aw_prims[5].insn, "emulated", AW_INSN_LEN);
	scnprintf(family, len, "x86-gs-nolock");
#else
	for (size_t i = 0; i < AW_N_PRIMS; i++)
		strscpy(aw_prims[i].insn, "unknown", AW_INSN_LEN);
	scnprintf(family, len, "unknown");
#endif
}

/* Whether the double-word cmpxchg works on this machine (x86 without CX16 has none). */
static const char *dword_missing(void)
{
#if defined(this_cpu_cmpxchg128) && defined(system_has_cmpxchg128)
	if (!system_has_cmpxchg128())
		return "this CPU has no 128-bit compare-and-swap (system_has_cmpxchg128() is false)";
#elif defined(this_cpu_cmpxchg_double) && defined(system_has_cmpxchg_double)
	if (!system_has_cmpxchg_double())
		return "this CPU has no double-word compare-and-swap "
		       "(system_has_cmpxchg_double() is false)";
#endif
	return NULL;
}

/* ---- statistics (integer picoseconds; the agent recomputes them exactly from `samples`) ---- */

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* Quantile q/1000 of sorted values by linear interpolation (Hyndman & Fan type 7). */
static u64 quantile(const u64 *v, size_t n, unsigned int q)
{
	u64 pos = (u64)(n - 1) * q, i = pos / 1000, frac = pos % 1000;

	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + div_u64((v[i + 1] - v[i]) * frac, 1000);
}

/* 1-based ranks of the median's 95% interval, normal approximation of binomial(n, 1/2). */
static void ci_ranks(size_t n, size_t *lo, size_t *hi)
{
	size_t d = int_sqrt((unsigned long)n * 9604 / 10000 * 1); /* 0.98 sqrt(n) */
	size_t half = n / 2;

	*lo = half > d ? half - d : 1;
	if (*lo < 1)
		*lo = 1;
	*hi = n + 1 - *lo;
	if (*hi > n)
		*hi = n;
}

static void summarize(struct aw_cell *c, u64 *scratch)
{
	size_t n = c->n, lo, hi;
	u64 *g = scratch, *b = scratch + n, *net = scratch + 2 * n, sum = 0, var = 0, g_lo, b_hi;

	for (size_t i = 0; i < n; i++) {
		g[i] = div64_u64(c->timed_ns[i] * 1000, c->iters);
		b[i] = div64_u64(c->empty_ns[i] * 1000, c->iters);
	}
	sort(g, n, sizeof(*g), cmp_u64, NULL);
	sort(b, n, sizeof(*b), cmp_u64, NULL);
	c->baseline = quantile(b, n, 500);
	for (size_t i = 0; i < n; i++) {
		net[i] = g[i] > c->baseline ? g[i] - c->baseline : 0;
		sum += net[i];
	}
	ci_ranks(n, &lo, &hi);
	c->min = net[0];
	c->p50 = quantile(net, n, 500);
	c->p95 = quantile(net, n, 950);
	c->p99 = quantile(net, n, 990);
	c->max = net[n - 1];
	c->mean = div64_u64(sum, n);
	for (size_t i = 0; i < n; i++) {
		s64 d = (s64)net[i] - (s64)c->mean;

		var += (u64)(d * d);
	}
	c->stddev = n > 1 ? int_sqrt64(div64_u64(var, n - 1)) : 0;
	c->ci_lo = net[lo - 1];
	c->ci_hi = net[hi - 1];
	g_lo = g[lo - 1];
	b_hi = b[hi - 1];
	/* as the runner: the op cannot be told from the empty loop when the intervals overlap */
	c->below_resolution = g_lo <= b_hi;
	if (c->below_resolution)
		c->min = c->p50 = c->ci_lo = 0;
}

/* ---- measuring one CPU ---- */

static void reset_counters(void)
{
	struct aw_pcpu *p = this_cpu_ptr(&aw_pcpu);

	p->value = 0;
	atomic_long_set(&p->atomic, 0);
	memset(&p->dword, 0, sizeof(p->dword));
}

static __printf(2, 3) void cell_fail(struct aw_cell *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vscnprintf(c->reason, sizeof(c->reason), fmt, ap);
	va_end(ap);
	c->status = AW_FAILED;
}

/* One batch with preemption off; false when the thread is not on its CPU. */
static bool batch(struct aw_cell *c, u64 (*fn)(struct aw_loop *, u64), struct aw_loop *l,
		  u64 iters, u64 *ns)
{
	bool here;

	preempt_disable();
	here = smp_processor_id() == c->cpu;
	*ns = fn(l, iters);
	preempt_enable();
	cond_resched();
	return here;
}

static void check_count(struct aw_cell *c, const struct aw_loop *l)
{
	struct aw_pcpu *p = per_cpu_ptr(&aw_pcpu, c->cpu);
	unsigned long want = (unsigned long)c->ops, v = READ_ONCE(p->value);
	unsigned long d0, d1;

	switch (c->prim->check) {
	case AW_CHECK_VALUE:
		if (v != want)
			cell_fail(c, "counter is %lu after the cell, expected %lu", v, want);
		break;
	case AW_CHECK_VALUE3:
		if (v != 3 * want)
			cell_fail(c, "counter is %lu after the cell, expected %lu", v, 3 * want);
		break;
	case AW_CHECK_ZERO:
		if (v)
			cell_fail(c, "counter is %lu after the inc/dec pairs, expected 0", v);
		break;
	case AW_CHECK_DWORD:
		memcpy(&d0, &p->dword, sizeof(d0));
		memcpy(&d1, (const char *)&p->dword + sizeof(d0), sizeof(d1));
		if (d0 != want || d1 != want || l->k != want)
			cell_fail(c, "pair is {%lu, %lu} after the cell, expected {%lu, %lu}", d0,
				  d1, want, want);
		break;
	case AW_CHECK_ATOMIC:
		v = (unsigned long)atomic_long_read(&p->atomic);
		if (v != want)
			cell_fail(c, "atomic is %lu after the cell, expected %lu", v, want);
		break;
	case AW_CHECK_SRCU: {
		unsigned long cookie = start_poll_synchronize_srcu(c->prim->ssp);
		unsigned long deadline = jiffies + msecs_to_jiffies(AW_GP_WAIT_MS);

		while (!poll_state_synchronize_srcu(c->prim->ssp, cookie)) {
			if (time_after(jiffies, deadline)) {
				cell_fail(c,
					  "no SRCU grace period ended within %u ms after the cell "
					  "(a reader left locked?)",
					  AW_GP_WAIT_MS);
				break;
			}
			usleep_range(1000, 2000);
		}
		break;
	}
	}
}

static void measure_cell(struct aw_cell *c, u64 need_ns)
{
	const struct aw_prim *pr = c->prim;
	struct aw_loop l = { 0 };
	u64 ns, t_end, iters = AW_START_ITERS;

	reset_counters();
	/* warm-up: caches, branch predictors, frequency */
	t_end = ktime_get_raw_ns() + (u64)warmup_us * NSEC_PER_USEC;
	do {
		if (!batch(c, pr->timed, &l, iters, &ns))
			goto moved;
		c->ops += iters;
	} while (ktime_get_raw_ns() < t_end && !READ_ONCE(aw.stop));
	/* calibration: grow the batch until it lasts need_ns */
	for (;;) {
		u64 grow;

		if (!batch(c, pr->timed, &l, iters, &ns))
			goto moved;
		c->ops += iters;
		if (ns >= need_ns || iters >= AW_MAX_ITERS || ns >= AW_MAX_BATCH_NS)
			break;
		grow = ns ? div64_u64(need_ns * 5, ns * 4) + 1 : 16;
		grow = clamp_t(u64, grow, 2, 16);
		iters = min_t(u64, iters * grow, AW_MAX_ITERS);
		iters -= iters % AW_UNROLL;
	}
	c->iters = iters;
	for (u64 i = 0; i < c->n && !READ_ONCE(aw.stop); i++) {
		if (!batch(c, loop_empty, &l, iters, &c->empty_ns[i]) ||
		    !batch(c, pr->timed, &l, iters, &c->timed_ns[i]))
			goto moved;
		c->ops += iters;
	}
	if (READ_ONCE(aw.stop)) {
		cell_fail(c, "interrupted");
		return;
	}
	this_cpu_write(aw_pcpu.sink, l.sink);
	check_count(c, &l);
	return;
moved:
	cell_fail(c, "the measuring thread left CPU %d (was it taken offline?)", c->cpu);
}

struct aw_cpu_job {
	int cpu;
	u64 need_ns;
	u64 *scratch;
	struct completion done;
};

static int cpu_thread(void *arg)
{
	struct aw_cpu_job *job = arg;

	for (size_t i = 0; i < aw.n_cells; i++) {
		struct aw_cell *c = &aw.cells[i];

		if (c->cpu != job->cpu || c->status != AW_OK)
			continue;
		measure_cell(c, job->need_ns);
		if (c->status == AW_OK)
			summarize(c, job->scratch);
	}
	complete(&job->done);
	return 0;
}

/* Runs the thread of one CPU to its end. Returns 0 or a negative errno. */
static int measure_cpu(int cpu, u64 need_ns, u64 *scratch)
{
	struct aw_cpu_job job = { .cpu = cpu, .need_ns = need_ns, .scratch = scratch };
	struct task_struct *t;

	init_completion(&job.done);
	t = kthread_create(cpu_thread, &job, "atomwatch/%d", cpu);
	if (IS_ERR(t))
		return PTR_ERR(t);
	kthread_bind(t, cpu);
	wake_up_process(t);
	if (wait_for_completion_killable(&job.done)) {
		/* insmod was killed: end the cell at the next batch, then go */
		WRITE_ONCE(aw.stop, 1);
		wait_for_completion(&job.done);
		return -EINTR;
	}
	return 0;
}

/* The smallest step of the timer seen in a burst of reads. */
static u64 timer_resolution(void)
{
	u64 best = U64_MAX;

	for (int i = 0; i < 1000; i++) {
		u64 t0 = ktime_get_raw_ns(), t1;
		int spins = 0;

		do
			t1 = ktime_get_raw_ns();
		while (t1 == t0 && ++spins < 100000);
		if (t1 > t0 && t1 - t0 < best)
			best = t1 - t0;
	}
	return best == U64_MAX ? 1 : best;
}

/* ---- debugfs ---- */

static const char *const status_names[] = { "ok", "skipped", "failed" };

static void show_header(struct seq_file *m, const char *family)
{
	seq_printf(m, "format %d\n", AW_FORMAT);
	seq_printf(m, "module atomwatch %s\n", AW_KMOD_VERSION);
	seq_printf(m, "release %s\n", init_utsname()->release);
	seq_printf(m, "version %s\n", init_utsname()->version);
	seq_printf(m, "machine %s\n", aw_arch());
	seq_printf(m, "lse %s\n", aw_lse());
	seq_printf(m, "percpu_ops %s\n", family);
	seq_puts(m, "timer ktime_get_raw_ns\n");
	seq_printf(m, "timer_res_ns %llu\n", aw.res_ns);
	seq_printf(m, "samples %u\n", samples);
	seq_printf(m, "batch_min_ns %lu\n", batch_min_ns);
	seq_printf(m, "cpus %s\n", aw.cpulist);
	seq_printf(m, "wall_ns %llu\n", aw.finished_ns - aw.started_ns);
	seq_printf(m, "cells %zu\n", aw.n_cells);
}

static char aw_family[AW_INSN_LEN];

static void *res_start(struct seq_file *m, loff_t *pos)
{
	return *pos <= (loff_t)aw.n_cells + 1 ? pos : NULL;
}

static void *res_next(struct seq_file *m, void *v, loff_t *pos)
{
	++*pos;
	return res_start(m, pos);
}

static void res_stop(struct seq_file *m, void *v)
{
}

static int res_show(struct seq_file *m, void *v)
{
	loff_t i = *(loff_t *)v;
	const struct aw_cell *c;

	if (i == 0) {
		show_header(m, aw_family);
		return 0;
	}
	if (i == (loff_t)aw.n_cells + 1) {
		seq_puts(m, "end\n");
		return 0;
	}
	c = &aw.cells[i - 1];
	seq_printf(m, "cell %s cpu=%d status=%s", c->prim->name, c->cpu, status_names[c->status]);
	if (c->status == AW_OK)
		seq_printf(m,
			   " n=%llu batch=%llu ops=%llu min_ps=%llu p50_ps=%llu p95_ps=%llu "
			   "p99_ps=%llu max_ps=%llu mean_ps=%llu stddev_ps=%llu ci_lo_ps=%llu "
			   "ci_hi_ps=%llu baseline_ps=%llu below_resolution=%d",
			   c->n, c->iters, c->ops, c->min, c->p50, c->p95, c->p99, c->max, c->mean,
			   c->stddev, c->ci_lo, c->ci_hi, c->baseline, c->below_resolution);
	seq_printf(m, " insn=%s calls=%s", c->prim->insn[0] ? c->prim->insn : "unknown",
		   c->prim->calls);
	if (c->status != AW_OK)
		seq_printf(m, " reason=%s", c->reason);
	seq_putc(m, '\n');
	return 0;
}

static const struct seq_operations res_ops = {
	.start = res_start, .next = res_next, .stop = res_stop, .show = res_show
};

static int samples_show(struct seq_file *m, void *v)
{
	loff_t i = *(loff_t *)v;
	const struct aw_cell *c;

	if (i == 0) {
		seq_printf(m, "format %d\n", AW_FORMAT);
		return 0;
	}
	if (i == (loff_t)aw.n_cells + 1) {
		seq_puts(m, "end\n");
		return 0;
	}
	c = &aw.cells[i - 1];
	if (c->status != AW_OK)
		return 0;
	seq_printf(m, "cell %s cpu=%d batch=%llu n=%llu\n", c->prim->name, c->cpu, c->iters,
		   c->n);
	for (u64 k = 0; k < c->n; k++)
		seq_printf(m, "%llu %llu\n", c->empty_ns[k], c->timed_ns[k]);
	return 0;
}

static const struct seq_operations samples_ops = {
	.start = res_start, .next = res_next, .stop = res_stop, .show = samples_show
};

static int res_open(struct inode *inode, struct file *file)
{
	return seq_open(file, &res_ops);
}

static int samples_open(struct inode *inode, struct file *file)
{
	return seq_open(file, &samples_ops);
}

static const struct file_operations res_fops = {
	.owner = THIS_MODULE,
	.open = res_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = seq_release,
};

static const struct file_operations samples_fops = {
	.owner = THIS_MODULE,
	.open = samples_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = seq_release,
};

/* ---- load and unload ---- */

static bool prim_selected(const char *name)
{
	size_t n = strlen(name);
	const char *p = prims;

	if (!strcmp(prims, "all"))
		return true;
	while (*p) {
		size_t len = strcspn(p, ",");

		if (len == n && !strncmp(p, name, n))
			return true;
		p += len;
		if (*p == ',')
			p++;
	}
	return false;
}

/* Every name in `prims` must be known: a typo is an error, not a silently empty run. */
static int check_prims(void)
{
	const char *p = prims;

	if (!strcmp(prims, "all"))
		return 0;
	while (*p) {
		size_t len = strcspn(p, ","), i;

		for (i = 0; i < AW_N_PRIMS; i++)
			if (strlen(aw_prims[i].name) == len && !strncmp(p, aw_prims[i].name, len))
				break;
		if (i == AW_N_PRIMS) {
			pr_err("atomwatch: unknown primitive '%.*s' in prims=\n", (int)len, p);
			return -EINVAL;
		}
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}

static int aw_srcu_init(void)
{
	int rc = init_srcu_struct(&aw_srcu);

#ifdef AW_HAVE_SRCU_NMISAFE
	if (!rc) {
		rc = init_srcu_struct(&aw_srcu_nmi);
		if (rc)
			cleanup_srcu_struct(&aw_srcu);
	}
#endif
#ifdef AW_HAVE_SRCU_FAST
	if (!rc) {
#ifdef DEFINE_SRCU_FAST
		rc = init_srcu_struct_fast(&aw_srcu_fast);
#else
		rc = init_srcu_struct(&aw_srcu_fast);
#endif
		if (rc) {
#ifdef AW_HAVE_SRCU_NMISAFE
			cleanup_srcu_struct(&aw_srcu_nmi);
#endif
			cleanup_srcu_struct(&aw_srcu);
		}
	}
#endif
	return rc;
}

static void aw_srcu_fini(void)
{
#ifdef AW_HAVE_SRCU_FAST
	cleanup_srcu_struct(&aw_srcu_fast);
#endif
#ifdef AW_HAVE_SRCU_NMISAFE
	cleanup_srcu_struct(&aw_srcu_nmi);
#endif
	cleanup_srcu_struct(&aw_srcu);
}

static void free_state(void)
{
	vfree(aw.samples_mem);
	vfree(aw.cells);
	free_cpumask_var(aw.mask);
	memset(&aw, 0, sizeof(aw));
}

static int __init aw_init(void)
{
	u64 need_ns, *scratch = NULL;
	size_t per_cell, n_prims = 0, k = 0;
	int cpu, rc;
	bool srcu_ok = false;

	if (samples < 1 || samples > AW_SAMPLES_MAX) {
		pr_err("atomwatch: samples=%u is out of range (1..%d)\n", samples, AW_SAMPLES_MAX);
		return -EINVAL;
	}
	if (batch_min_ticks < 1 || batch_min_ns > 100 * NSEC_PER_MSEC) {
		pr_err("atomwatch: batch_min_ns (at most 100 ms) or batch_min_ticks (>= 1) out of range\n");
		return -EINVAL;
	}
	rc = check_prims();
	if (rc)
		return rc;
	if (!zalloc_cpumask_var(&aw.mask, GFP_KERNEL))
		return -ENOMEM;
	if (!strcmp(cpus, "all")) {
		cpumask_copy(aw.mask, cpu_online_mask);
	} else {
		rc = cpulist_parse(cpus, aw.mask);
		if (rc || cpumask_empty(aw.mask)) {
			pr_err("atomwatch: bad cpus='%s' (\"all\" or a list such as 0,2-3)\n", cpus);
			rc = -EINVAL;
			goto fail;
		}
	}
	if (!cpumask_subset(aw.mask, cpu_possible_mask)) {
		pr_err("atomwatch: cpus='%s' names CPUs this machine cannot have (possible: %*pbl)\n",
		       cpus, cpumask_pr_args(cpu_possible_mask));
		rc = -EINVAL;
		goto fail;
	}
	scnprintf(aw.cpulist, sizeof(aw.cpulist), "%*pbl", cpumask_pr_args(aw.mask));
	for (size_t i = 0; i < AW_N_PRIMS; i++)
		n_prims += prim_selected(aw_prims[i].name);
	aw.n_cells = n_prims * cpumask_weight(aw.mask);
	per_cell = 2 * (size_t)samples * sizeof(u64);
	if (aw.n_cells * per_cell > AW_MEM_MAX) {
		pr_err("atomwatch: %zu cells x %u samples need more than %lu MiB\n", aw.n_cells,
		       samples, AW_MEM_MAX >> 20);
		rc = -E2BIG;
		goto fail;
	}
	aw.cells = vzalloc(aw.n_cells * sizeof(*aw.cells));
	aw.samples_mem = vzalloc(aw.n_cells * per_cell);
	scratch = vmalloc(3 * (size_t)samples * sizeof(u64));
	if (!aw.cells || !aw.samples_mem || !scratch) {
		rc = -ENOMEM;
		goto fail;
	}
	aw_prims[5].missing = aw_prims[5].timed ? dword_missing() : aw_prims[5].missing;
	aw_decide(aw_family, sizeof(aw_family));
	for_each_cpu(cpu, aw.mask) {
		for (size_t i = 0; i < AW_N_PRIMS; i++) {
			struct aw_cell *c;

			if (!prim_selected(aw_prims[i].name))
				continue;
			c = &aw.cells[k];
			c->prim = &aw_prims[i];
			c->cpu = cpu;
			c->n = samples;
			c->timed_ns = aw.samples_mem + k * 2 * samples;
			c->empty_ns = c->timed_ns + samples;
			if (c->prim->missing) {
				c->status = AW_SKIPPED;
				strscpy(c->reason, c->prim->missing, sizeof(c->reason));
			} else if (!cpu_online(cpu)) {
				c->status = AW_SKIPPED;
				scnprintf(c->reason, sizeof(c->reason), "CPU %d is offline", cpu);
			}
			k++;
		}
	}
	rc = aw_srcu_init();
	if (rc)
		goto fail;
	srcu_ok = true;
	aw.res_ns = timer_resolution();
	need_ns = max_t(u64, batch_min_ns, (u64)batch_min_ticks * aw.res_ns);
	aw.started_ns = ktime_get_raw_ns();
	for_each_cpu(cpu, aw.mask) {
		if (!cpu_online(cpu))
			continue;
		rc = measure_cpu(cpu, need_ns, scratch);
		if (rc)
			goto fail;
	}
	aw.finished_ns = ktime_get_raw_ns();
	aw.dir = debugfs_create_dir("atomwatch", NULL);
	if (IS_ERR_OR_NULL(aw.dir)) {
		pr_err("atomwatch: cannot create debugfs/atomwatch (CONFIG_DEBUG_FS off, debugfs=off "
		       "or lockdown)\n");
		rc = aw.dir ? PTR_ERR(aw.dir) : -ENODEV;
		aw.dir = NULL;
		goto fail;
	}
	debugfs_create_file("results", 0400, aw.dir, NULL, &res_fops);
	debugfs_create_file("samples", 0400, aw.dir, NULL, &samples_fops);
	vfree(scratch);
	pr_info("atomwatch: measured %zu cells on CPUs %s in %llu ms (results in "
		"debugfs/atomwatch/results)\n",
		aw.n_cells, aw.cpulist, div_u64(aw.finished_ns - aw.started_ns, NSEC_PER_MSEC));
	return 0;
fail:
	if (srcu_ok)
		aw_srcu_fini();
	vfree(scratch);
	free_state();
	return rc;
}

static void __exit aw_exit(void)
{
	debugfs_remove_recursive(aw.dir);
	aw_srcu_fini();
	free_state();
}

module_init(aw_init);
module_exit(aw_exit);

MODULE_LICENSE("Dual MIT/GPL");
MODULE_AUTHOR("atomwatch");
MODULE_DESCRIPTION("measures the kernel's own per-CPU ops, atomics and SRCU readers");
MODULE_VERSION(AW_KMOD_VERSION);
