/* Importers of results people already have (tests/fixtures/import/samples/): Breno Leitao's
 * percpu_bench output in its three shapes and the kernel's refscale log, read line by line from
 * whatever was pasted (mail quoting, indentation, prose, elided blocks, decorations, error
 * lines, several runs), into result documents with trigger "import". The refscale parser is
 * also what reads /dev/kmsg when the agent runs refscale itself (refscale.c). */
#ifndef AW_AGENT_IMPORT_H
#define AW_AGENT_IMPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aw/result.h"

#define AW_IMPORT_LIMIT (64u << 20) /* the largest paste read */

/* One imported measurement. */
struct aw_import_cell {
	char op[32];                  /* atomwatch op ("llsc", "stadd", ...) or "refscale" */
	char kernel[AW_NAME_MAX + 1]; /* refscale scale_type; "" for percpu_bench */
	int cpu;                      /* AW_NONE when unknown */
	int64_t c;            /* contender's nops; AW_NONE: uncontended (c 0 in the paste) */
	int64_t d;            /* duty nops */
	double p50, p95, p99; /* percpu_bench: the printed order statistics of 100 batches */
	double *samples;      /* refscale: one ns value per run (nruns of them) */
	size_t n_samples, cap_samples;
	int64_t loops; /* refscale loops per run; -1 unknown */
	int64_t nruns; /* refscale nruns announced at the start; -1 unknown */
	bool ended;    /* refscale: END OF TEST seen */
	unsigned line; /* line of the paste it came from (1-based) */
};

/* One run of the benchmark (one document). */
struct aw_import_run {
	struct aw_import_cell *cells;
	size_t n_cells, cap_cells;
	struct aw_strmap *keys; /* identities seen in this run */
	int64_t iterations;     /* percpu_bench preamble, -1 unknown */
	int64_t detected_cpus;  /* percpu_bench preamble, -1 unknown */
	unsigned formats;       /* AW_PCB_* bits seen */
};

enum {
	AW_PCB_2VARIANT = 1u << 0,   /* "LL/SC: " / "LSE  : " */
	AW_PCB_5VARIANT = 1u << 1,   /* "STADD           : " ... */
	AW_PCB_CONTENTION = 1u << 2, /* "(c N, d N)" */
	AW_PCB_CONT_OLD = 1u << 3,   /* "(N)" */
};

struct aw_import {
	const char *format; /* "percpu_bench" or "refscale" */
	struct aw_import_run *runs;
	size_t n_runs, cap_runs;
	uint64_t lines;   /* lines read */
	uint64_t skipped; /* non-blank lines that matched nothing */
};

void aw_import_init(struct aw_import *imp, const char *format);
void aw_import_release(struct aw_import *imp);

/* Cleans one line in place: drops a trailing CR, mail quoting (any mix of '>' and blanks at
 * the start), surrounding whitespace and a kernel timestamp "[  123.456789]". Returns the start
 * of what is left. */
char *aw_import_clean_line(char *line);

/* Parses percpu_bench output (every known shape; see samples/README.md) into imp, which must
 * have been initialised with format "percpu_bench". Returns 0, or -ENOMEM. Lines that match
 * nothing are counted in imp->skipped. */
int aw_percpu_bench_parse(const char *text, size_t len, struct aw_import *imp);

/* The refscale parser, fed one line at a time (the importer reads a paste, the agent reads
 * /dev/kmsg). A run starts at "<type>-ref-scale: --- Start of test: ... loops=L ... nruns=N"
 * (or, when that was not pasted, at its "END OF TEST" line); its samples are the
 * "<run>\t<ns>" lines after "Runs\tTime(ns)". A type seen again starts a new document. */
struct aw_refscale_parser {
	struct aw_import *imp;
	struct aw_import_cell *cur; /* the run being read, or NULL */
	int state;                  /* see refscale.c */
	unsigned line;
};

void aw_refscale_parser_init(struct aw_refscale_parser *p, struct aw_import *imp);

/* Feeds one line (modified in place; without its newline). Returns 0 or -ENOMEM. */
int aw_refscale_feed(struct aw_refscale_parser *p, char *line);

/* The whole text through aw_refscale_feed(). Returns 0 or -ENOMEM. */
int aw_refscale_parse(const char *text, size_t len, struct aw_import *imp);

/* Appends a new run to imp. Returns it or NULL (-ENOMEM). */
struct aw_import_run *aw_import_new_run(struct aw_import *imp);

/* Adds a cell to the last run, starting a new run first when the last one already holds a cell
 * with the same identity (cpu, op, kernel, c, d). Returns the new cell (zeroed but for its
 * identity) or NULL on allocation failure. */
struct aw_import_cell *aw_import_add(struct aw_import *imp, const struct aw_import_cell *id);

/* Appends a sample to a refscale cell. Returns 0 or -ENOMEM. */
int aw_import_add_sample(struct aw_import_cell *c, double v);

/* Fills a result cell from an imported one (statistics from the samples, or the printed
 * percentiles with n = 100) and makes its key. A refscale cell without samples becomes a
 * failed cell. Returns 0 or -ENOMEM. */
int aw_import_fill_cell(const struct aw_import_cell *ic, struct aw_cell *cell);

struct aw_import_opts {
	const char *host, *project, *commit, *ref;
	const char *arch, *cpu_model;
	const json_t *labels; /* or NULL */
	const char *source;   /* the file name, for meta */
};

/* Builds one validated result document per run that holds cells. Returns 0 with *docs (an
 * array of *n results; free each and the array) or a negative errno with *err (-ENOENT: no
 * results in the paste). */
int aw_import_documents(const struct aw_import *imp, const struct aw_import_opts *o,
                        struct aw_result ***docs, size_t *n, char **err);

#endif
