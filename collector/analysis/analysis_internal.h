/* The analysis's reading of runs, shared by analysis.c (verdicts, change points, the cache)
 * and analysis_read.c (the runs and cells read from the store into one table). Private to
 * collector/analysis/. */
#ifndef AW_ANALYSIS_INTERNAL_H
#define AW_ANALYSIS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "aw/strmap.h"
#include "detect.h"
#include "store.h"

#define MAX_HEAD_RUNS 16
#define MAX_CELLS     65536
#define MAX_CP        32
#define REFS          AW_DETECT_REFS
#define KERNELS       AW_DETECT_KERNELS /* slots of kernels; then the run's memory states */
#define MEMORY        AW_DETECT_MEMORY
#define GATHER        AW_DETECT_GATHER
#define STATES        2        /* the memory states: MEMORY, GATHER */
#define MEMORY_NAME   "memory" /* how verdicts name those slots */
#define GATHER_NAME   "memory-gather"
#define DISTURB_MIN   0.03 /* a head run's reference this far from usual (log) ... */
#define DISTURB_K     4    /* ... and this many of its history's spreads is disturbed */

/* What is being read into a table. */
enum analysis_reading {
	READ_HISTORY,
	READ_HEAD,
	READ_BASE
};

/* The reference kernels of one run: each kernel's ns beside each cell, in document order. */
struct run_ref {
	int64_t seq;
	int64_t order_us;
	char *run_id, *commit, *matrix_hash, *platform_hash;
	char *kernel[KERNELS];
	double *ref[KERNELS]; /* NAN: none beside that cell */
	size_t n_ref[KERNELS], n_kernels;
	bool confirmation;  /* re-measures another run's suspects */
	bool has_reference; /* stored with reference series (analysis_list_references()) */
};

struct run_list {
	struct run_ref *r;
	size_t n, cap, max;
	const char *skip_commit; /* leave out runs of this commit (the head's own) */
	bool firsts_only;        /* leave out confirmation runs (a history: they re-measure a
	                            commit's suspects, and are no further runs of its matrix) */
};

/* One side of a cell (the baseline's runs, the head's, a base commit's): p50, p99, the runs'
 * own standard error of the median, and each reference kernel beside it, per run. */
struct side {
	double *p50, *p99, *se, *ref[REFS];
	size_t n, cap;
};

/* One cell across the runs read. */
struct series {
	char *key, *op, *reader, *subject;
	int cpu;
	int kind;       /* pooling group: 0 op, 1 reader, 2 contended, 3 subject, 4 kernel */
	bool warn_only; /* contended or with duty: its default gate level is warn */
	struct side hist, head, base;
	size_t head_run[MAX_HEAD_RUNS]; /* which head run each head value is from */
	bool head_conf[MAX_HEAD_RUNS];  /* ... and whether that run was a confirmation */
	size_t base_run[MAX_HEAD_RUNS]; /* which base commit run each base value is from */
	bool in_head;
	char *failed; /* the head cell failed: why */
};

struct table {
	struct aw_strmap *index;      /* key -> position */
	struct store_cell_book *book; /* the runs' cells as described (analysis_read_runs()) */
	struct series *s;
	size_t n, cap;
	const struct aw_detect_opts *detect;
	char *kernel[KERNELS]; /* the reference kernels met, in slot order */
	size_t n_kernels;
	int state_kernel[STATES]; /* the slots of the walk and the gather, -1 until met */
	/* each run's memory states: the walk's and the gather's median beside its anchor cells
	 * (NAN: none), by state, reading (history, base, head) and run */
	double *memory[STATES][3];
	size_t n_memory[3];
	/* while reading a run: the walk and the gather beside its first anchors */
	double anchor_mem[STATES][AW_ANCHORS];
	size_t n_anchor_mem[STATES];
	const char *const *globs; /* only cells matching one of these (none: every cell) */
	size_t n_globs;
	uint64_t globs_matched; /* bit i: globs[i] matched a head cell */
	/* while reading one run */
	size_t run;
	size_t runs; /* in the list being read: a history's sides are sized for them at once */
	size_t ord;  /* the cell's position in its document */
	const struct run_ref *ref; /* the run being read */
	int slot[KERNELS];         /* its kernels' slots in the table */
	enum analysis_reading reading;
};

/* The stored references of a run, packed (aw/refblob.h; NULL: none), into x's kernel slots,
 * mulchain-v1 first and the rest of the family in enum order, each value that is not positive
 * NAN. What does not open is no series (the run is judged without it). 0 or -ENOMEM. */
int analysis_unpack_references(const uint8_t *packed, size_t len, struct run_ref *x);
/* As analysis_unpack_references(), from the process's cache of the runs' unpacked references
 * when it holds `key`, else of the bytes fetch(cls, &packed, &len) gives (the caller's to free;
 * NULL: none), then kept under the key (refcache.c); thread-safe. A key must name one run
 * forever. 0 or fetch's negative errno, or -ENOMEM. */
#define REFCACHE_KEY_LEN 48
typedef int (*analysis_ref_fetch_fn)(void *cls, uint8_t **packed, size_t *len);
int analysis_references(const char *key, analysis_ref_fetch_fn fetch, void *cls, struct run_ref *x);
/* The references of run `seq` of the store c reads (store_run_reference()), by
 * analysis_references() under the store's generation and the sequence. */
int analysis_run_references(struct store_conn *c, int64_t seq, struct run_ref *x);
/* Frees x's kernel names and series (what the two above filled) and empties its slots. */
void analysis_references_release(struct run_ref *x);
/* The cache's lookups that found the run and those that parsed it, and the bytes it holds (at
 * most AW_REFCACHE_BYTES: 16 hosts' 41 runs of 300 cells, 12 KB each, are 8 MB; a budget
 * below the runs in play keeps none of them, as 10 MiB did while each post-ingest task of a
 * backlog also read the newest window for its change points; docs/benchmarks.md). */
#define AW_REFCACHE_BYTES (10u << 20)
void analysis_refcache_counts(uint64_t *hits, uint64_t *misses, size_t *bytes);

/* store_list_runs()'s callback: the run into the run_list `cls`, unless the list leaves it
 * out; analysis_list_references() then reads its references. */
int analysis_collect_run(const struct store_run *run, void *cls);
int analysis_list_references(struct store_conn *c, struct run_list *l);
void analysis_run_list_release(struct run_list *l);
/* Leaves out the runs of another matrix, or of another platform, than `like`. */
void analysis_keep_comparable(struct run_list *l, const struct run_ref *like);
void analysis_table_release(struct table *t);
/* Reads the cells of every run of `l` into t as `reading`. Returns 0 or a negative errno. */
int analysis_read_runs(struct store_conn *c, struct table *t, const struct run_list *l,
                       int reading);
/* Each run's memory states from the walk and the gather beside its anchor cells. */
void analysis_fill_memory(struct table *t);

#endif
