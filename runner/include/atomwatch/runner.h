/* The runner's public API: plan the fixed matrix for this host, measure it, and get the result
 * document. Used by atomwatch-run and by the agent. */
#ifndef ATOMWATCH_RUNNER_H
#define ATOMWATCH_RUNNER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aw/result.h"

struct aw_runner;

/* Called after each cell (done of total cells, the cell just finished). */
typedef void (*aw_progress_fn)(void *arg, size_t done, size_t total, const struct aw_cell *cell);

struct aw_runner_opts {
	const char *matrix_path; /* NULL: the built-in configs/matrix.yaml */
	const char *profile;     /* NULL: "default" */
	const char *cpus;        /* NULL: the profile's choice; "all" or a list like "0,2-3" */
	const char *ops;         /* NULL: every op; else a comma list of op or reader names */
	uint32_t samples;        /* 0: the profile's */
	const char *host_name;   /* NULL: this host's name, sanitised */
	const json_t *labels;    /* host labels (object of strings) or NULL */
	const char *sysroot;     /* NULL: "/" (tests point it at fixture trees) */
	bool force_clock;        /* time with CLOCK_MONOTONIC_RAW, not the cycle counter */
	bool no_reference;       /* measure no reference kernel beside the cells (benchmarks) */
	/* which reference kernels: bits of enum aw_ref (aw/result.h); 0: the whole family */
	unsigned reference_kernels;
	/* When n_keys > 0, only the planned cells whose key is one of keys[] are measured (and
	 * aw_runner_selected() tells subject cells the same); the rest are left out of the result.
	 * Borrowed. Confirmation runs re-measure a run's suspect cells this way. */
	const char *const *keys;
	size_t n_keys;
	aw_progress_fn progress;
	void *progress_arg;
	volatile int *stop; /* when non-zero, aw_runner_run() stops between cells */
};

/* The fewest batches per cell whose median and interval mean anything. */
#define AW_RUNNER_MIN_SAMPLES 5

/* A planned cell: what will be measured, or why it will be skipped. */
struct aw_plan_info {
	const char *key;
	const char *section; /* "ops", "readers" or "contention" */
	bool skipped;
	const char *reason; /* NULL unless skipped */
};

/* Loads the matrix, reads the topology and fingerprint, calibrates the timer and plans every
 * cell. Returns a runner, or NULL with *err (a one-line message: bad option, unknown op, a CPU
 * that is not online, a matrix error with file:line:col). */
struct aw_runner *aw_runner_new(const struct aw_runner_opts *opts, char **err);

void aw_runner_free(struct aw_runner **r);

/* The planned cells, in measuring order. Valid while the runner lives. */
size_t aw_runner_plan(const struct aw_runner *r, size_t i, struct aw_plan_info *out);
size_t aw_runner_cell_count(const struct aw_runner *r);

/* Whether a cell of this key is to be measured: always without opts.keys, else when it is one
 * of them. For callers adding cells of their own (subjects). */
bool aw_runner_selected(const struct aw_runner *r, const char *key);

/* The batches measured per cell (the profile's, or opts' override). */
uint32_t aw_runner_samples(const struct aw_runner *r);

/* From now on measures only the planned cells whose key is one of keys[n] (n 0: every cell),
 * as opts.keys; the keys are borrowed until the next call. A runner kept from a first run
 * re-measures its suspects this way without calibrating again. */
void aw_runner_select(struct aw_runner *r, const char *const *keys, size_t n);

/* Replaces the progress callback (NULL: none). */
void aw_runner_set_progress(struct aw_runner *r, aw_progress_fn fn, void *arg);

/* Measures `samples` batches per cell from now on (at least AW_RUNNER_MIN_SAMPLES) without
 * changing the matrix hash: a confirmation measures fewer and must stay comparable with the
 * run it confirms. */
void aw_runner_set_samples(struct aw_runner *r, uint32_t samples);

/* The host object (fingerprint) that results will carry; borrowed. */
const json_t *aw_runner_host(const struct aw_runner *r);

/* The matrix identity: name, version, profile name and hash (borrowed strings). */
void aw_runner_matrix(const struct aw_runner *r, const char **name, int64_t *version,
                      const char **profile, const char **hash);

/* Measures every planned cell and returns a result whose project/commit/ref are unset (the
 * caller fills them). Unless opts.no_reference, the reference kernels are measured beside every
 * cell (result->references says which, each cell's ref_ns holds them; mulchain-v1's are
 * result->reference_kernel and each cell's reference_ns), and beside each
 * aw_runner_measure_call() cell too. Returns NULL with *err on failure, or with -EINTR semantics
 * when *stop was raised (then *err says "interrupted"). Never SIGILLs: LSE cells on CPUs without
 * LSE are skipped at plan time. */
struct aw_result *aw_runner_run(struct aw_runner *r, char **err);

/* An extra cell timed through function pointers (subject libraries): `op` is called `iters`
 * times per sample with a pointer to a counter that it must increment by 1; `reader_lock` and
 * `reader_unlock` (both or neither) are timed as a pair instead when `op` is NULL. The call
 * overhead is measured with an empty function and subtracted. `cell` has its identity fields
 * (op, reader, subject, cpu) set by the caller; statistics and status are filled in. Returns
 * 0 (the cell may still be failed, with a reason) or a negative errno. */
int aw_runner_measure_call(struct aw_runner *r, void (*op)(uint64_t *counter),
                           void (*reader_lock)(void), void (*reader_unlock)(void),
                           struct aw_cell *cell);

/* The CPUs that a selection names on this host: "all", "first", "first-per-type" (the first
 * online CPU of each core type) or a CPU list such as "0,2-3" whose CPUs must be online. Writes
 * at most `max` CPU numbers, ascending, into `cpus`. Returns how many the selection holds (may
 * exceed `max`), or a negative errno with *err. */
int aw_runner_cpus(const struct aw_runner *r, const char *selection, int *cpus, size_t max,
                   char **err);

/* This host's fingerprint alone (the host object of a result, see runner/internal.h), without
 * loading a matrix or planning: `opts` gives host_name, labels and sysroot (the rest is
 * ignored); the timer is calibrated (about 20 ms) so that its name and rate are recorded as in
 * a run. Returns a new object (caller decrefs) or NULL with *err. */
json_t *aw_runner_fingerprint(const struct aw_runner_opts *opts, char **err);

/* A progress display for aw_runner_opts.progress, shared by the command-line tools: on a
 * terminal (stderr) a bar with the count, an ETA and the cell just measured, redrawn in place;
 * elsewhere one line per matrix section ("PROG: measuring ops (12 cells)") so that logs stay
 * readable. */
struct aw_progress {
	const char *prog;               /* program name of the section lines */
	const struct aw_runner *runner; /* for section lines; NULL: no section lines */
	int tty;                        /* stderr is a terminal: draw the bar */
	uint64_t t0;                    /* start of the measured span (ETA) */
	const char *section;            /* section of the last line printed */
};

/* Prepares `p` for a run of `runner` (may be NULL); the ETA counts from now. */
void aw_progress_init(struct aw_progress *p, const char *prog, const struct aw_runner *runner);

/* The aw_progress_fn callback; `arg` is a struct aw_progress. */
void aw_progress_cb(void *arg, size_t done, size_t total, const struct aw_cell *cell);

/* "mulchain-v1" when the runner measures that reference kernel beside each cell (the one an
 * aw_cell's reference_ns holds), or NULL when it does not (opts.no_reference, or a choice of
 * kernels without it). */
const char *aw_runner_reference_kernel(const struct aw_runner *r);

/* The runner's version string. */
const char *aw_runner_version(void);

#endif
