/* Detection quality on recordings of real runs (bench/detect/record.py; docs/detection.md,
 * "Recordings"). Each recording is replayed through the collector's own store (a SQLite file)
 * and analysis, with the default thresholds (configs/thresholds.yaml):
 *   - A/A: every base run from the 11th on becomes the head of a commit that changed nothing,
 *     judged against the base runs measured before it (the history of `main`). The share of
 *     such commits whose gate fails is the false gate rate.
 *   - A/B: every run of a variant (the subject with +2%, +5%, +10% of real extra code, its
 *     shift measured by the recorder) becomes the head of a commit, judged the same way. The
 *     share whose subject cell is a confirmed regression is the detection rate.
 * A head's suspect cells are re-measured as `atomwatch-agent run --confirm N` does: one run at a
 * time, only the cells still suspect, until none is or N re-measurements were made (default
 * 10, the collector's detection.confirm_budget): each is the recording's next run of the same
 * kind (base for A/A, the same variant for A/B), seconds later, put as a further run of the
 * head's commit marked `confirmation_of` the head's run. Every subject cell of a recording is a
 * shape of code (subject=... op=overlap, op=hash, ...) and counted apart: caught (confirmed
 * regressed), loud (suspect or inconclusive: the gate says unconfirmed or inconclusive) or
 * silent (the gate passes it). Beside atomwatch: one head run without confirmation, a plain 5%
 * threshold on p50 against the median of the last 10 runs, and |z| > 5.
 *
 * The base runs of a recording are seconds apart, a CI's commits minutes or hours: a spell of
 * the host that lasts several runs shows in the recording's history as consecutive runs, in a
 * CI's history as lone runs. --spaced SEED replays the latter: each head's history is 40 base
 * runs drawn at random (seeded) from the whole recording, more than SPACING runs away from the
 * head and from its confirmations, in a random order. --confirm-after K takes the
 * confirmations from K runs after the head on, as a confirmation waiting that long would.
 * --confirm-gap-s S (default 30, the agent's --confirm-gap-s) takes the i-th confirmation from
 * i x S seconds after the head on (the runs' wall_s), as the agent measures them; 0 takes the
 * next runs of the head's kind, one after another.
 *
 * --screen-noise X sets detection.screen_noise (0: the first run's screen as before it).
 *
 * usage: bench_detect_replay [--confirm N] [--confirm-after K] [--confirm-gap-s S]
 *                            [--spaced SEED] [--screen-noise X] [--thresholds FILE]
 *                            RECORDING...
 * (--confirm 0: no re-measurement; the first run's verdict stands)
 * (.jsonl.xz, .jsonl.gz or plain .jsonl). Exit 0; 1 on a broken recording; 2 on bad usage. */
#include <errno.h>
#include <fnmatch.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis.h"
#include "aw/result.h"
#include "aw/sha256.h"
#include "aw/stats.h"
#include "aw/util.h"
#include "config.h"
#include "splitmix.h"
#include "store.h"

#define MIN_HISTORY    10
#define MAX_CONFIRM    16
#define MAX_SHAPES     8
#define SUBJECT_PREFIX "subject="
#define CONTROL_PREFIX "subject=atomwatch-control "

struct recording {
	const char *path;
	json_t *header;
	json_t **docs;  /* the result documents, in measuring order */
	char **variant; /* "base", "plus2", ... */
	double *t;      /* each run's start, seconds from the first's (the runs' wall_s summed) */
	double span;    /* seconds from the first run's start to the last one's end */
	size_t n;
};

struct tally {
	size_t commits, gates, loud; /* A/A: commits, failed gates, unconfirmed/inconclusive */
	/* the confirmation's cost per head with suspects: the cells it re-measured, its anchors
	 * with them, over the suspect cells of the first run (the time of a cell being about the
	 * same, the time it took over theirs); each head's ratio, for the median */
	double cost[4096];
	size_t n_cost;
	size_t suspects;                /* heads with any fail-level suspect */
	size_t confirm_runs;            /* re-measurement runs, over all heads with suspects */
	size_t confirm_cells;           /* cells re-measured, over all heads */
	size_t first_cells;             /* cells of the heads' first runs */
	size_t rounds[MAX_CONFIRM + 1]; /* heads with suspects by re-measurement runs used */
};

/* A/B, one shape: heads whose subject cell of that shape was caught, loudly missed, silently
 * passed. */
struct shape_tally {
	size_t heads, caught, loud, silent;
	/* the heads whose local shift (local_shift()) reached the cell's threshold: the slowdowns
	 * a user is owed a catch of, whatever the variant's shift over the whole recording */
	size_t real, real_caught, real_silent;
	/* of them, those whose local shift less 1.645 standard errors still reaches it: surely a
	 * slowdown of the threshold or more, not a build just under it that read over */
	size_t sure, sure_caught, sure_silent;
};

enum method {
	M_CONFIRM, /* atomwatch with --confirm N */
	M_SINGLE,  /* atomwatch, one head run, a regressed cell fails */
	M_PLAIN,   /* head / median(last 10) - 1 > 5% on p50 */
	M_ZSCORE,  /* |head - mean| / sd > 5 over the last 10 */
	M_COUNT
};

static const char *const method_names[M_COUNT] = {"atomwatch, --confirm N", "atomwatch, 1 head run",
                                                  "plain 5% threshold", "z-score |z| > 5"};

static unsigned confirm_n = 10;
static const struct aw_thresholds *thresholds;
/* --spaced SEED: each head's history is drawn at random from the recording's base runs away
 * from it, in a random order, as a CI's commits are measured minutes or hours apart (0: the
 * base runs before the head, in measuring order) */
static unsigned long spaced_seed;
/* --confirm-after K: a head's confirmations are the first N runs of its kind from K runs after
 * it on (1: the next ones, as the agent measures them right away) */
static unsigned long confirm_after = 1;
/* --confirm-gap-s S: a head's i-th confirmation is the first run of its kind that started i * S
 * seconds or more after it (the recording's runs' wall_s summed, its start following its end),
 * as an agent waiting S seconds between its re-measurements measures them (0: one after
 * another); the agent's default (agents/agent.h, AW_CONFIRM_DEFAULT_GAP_S) unless given */
static double confirm_gap_s = 30;
/* --screen-noise X: detection.screen_noise (negative: the collector's default) */
static double screen_noise = -1;
/* AW_REPLAY_VERBOSE set: each head's verdicts on stderr (read once, in main) */
static bool verbose;

#define SPACING 12 /* runs on either side of a head that its spaced history leaves out */

/* The drawn history of the head being judged (--spaced): positions in the recording, oldest
 * first; NULL when the history is the base runs before the head. */
static const size_t *spaced_hist;
static size_t n_spaced_hist;

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "bench_detect_replay: %s%s%s\n", what, detail ? ": " : "",
	        detail ? detail : "");
	exit(1);
}

/* ---- reading a recording ---- */

static FILE *open_recording(const char *path, bool *piped)
{
	size_t n = strlen(path);
	const char *tool = NULL;
	char cmd[4200];

	*piped = false;
	if (n > 3 && !strcmp(path + n - 3, ".xz"))
		tool = "xz";
	else if (n > 3 && !strcmp(path + n - 3, ".gz"))
		tool = "gzip";
	if (!tool)
		return fopen(path, "r");
	if (strchr(path, '\'') || n > 4000)
		return NULL;
	snprintf(cmd, sizeof(cmd), "%s -dc '%s'", tool, path);
	*piped = true;
	return popen(cmd, "r");
}

static void load(struct recording *rec, const char *path)
{
	bool piped;
	FILE *f = open_recording(path, &piped);
	char *line = NULL;
	size_t cap = 0, alloc = 0;
	ssize_t len;

	memset(rec, 0, sizeof(*rec));
	rec->path = path;
	if (!f)
		die("cannot open", path);
	while ((len = getline(&line, &cap, f)) > 0) {
		json_error_t je;
		json_t *o = json_loadb(line, (size_t)len, 0, &je);

		if (!o)
			die("a line is not JSON", path);
		if (!rec->header) {
			rec->header = o;
			continue;
		}
		if (aw_array_reserve(&rec->docs, rec->n, &alloc, sizeof(*rec->docs), 64))
			die("out of memory", NULL);
		rec->variant = realloc(rec->variant, alloc * sizeof(*rec->variant));
		rec->t = realloc(rec->t, alloc * sizeof(*rec->t));
		if (!rec->variant || !rec->t || !json_is_object(json_object_get(o, "doc")) ||
		    !json_is_string(json_object_get(o, "variant")))
			die("a run line lacks doc or variant", path);
		rec->docs[rec->n] = json_incref(json_object_get(o, "doc"));
		rec->variant[rec->n] = strdup(json_string_value(json_object_get(o, "variant")));
		rec->t[rec->n] = rec->span;
		if (json_is_number(json_object_get(o, "wall_s")))
			rec->span += json_number_value(json_object_get(o, "wall_s"));
		json_decref(o);
		rec->n++;
	}
	free(line);
	if ((piped ? pclose(f) : fclose(f)) != 0 || !rec->header || !rec->n)
		die("cannot read the recording", path);
}

/* ---- the store ---- */

/* A 40-hex commit id named by a label. */
static void commit_of(const char *label, char out[41])
{
	char hex[AW_SHA256_HEX_LEN + 1];

	aw_sha256_hex(label, strlen(label), hex);
	memcpy(out, hex, 40);
	out[40] = 0;
}

/* Whether `key` is among keys[0..n). */
static bool listed(const char *key, char *const *keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(keys[i], key))
			return true;
	return false;
}

/* The run id put() gave the last run it stored. */
static char last_run_id[AW_UUID_LEN + 1];

/* Whether a document's cell is one of the first AW_ANCHORS anchors (aw_cell_is_anchor()), which
 * a confirmation re-measures beside the suspects as the agent does; *seen counts them. */
static bool anchor_key(const json_t *cell, size_t *seen)
{
	const json_t *d = json_object_get(cell, "d"), *c = json_object_get(cell, "c");
	bool anchor = json_is_string(json_object_get(cell, "op")) &&
	              !json_is_string(json_object_get(cell, "reader")) &&
	              !json_is_string(json_object_get(cell, "subject")) &&
	              !json_is_string(json_object_get(cell, "kernel")) &&
	              !json_is_integer(json_object_get(cell, "contender_cpu")) &&
	              (!json_is_integer(c) || !json_integer_value(c)) &&
	              (!json_is_integer(d) || !json_integer_value(d));

	if (!anchor || *seen >= AW_ANCHORS)
		return false;
	(*seen)++;
	return true;
}

/* The A/A heads whose subject cell of each shape regressed after confirmation (caught: a false
 * gate of that shape), or stayed suspect or inconclusive (loud), of one recording. */
static struct shape_tally aa_shape[MAX_SHAPES];

/* --without: the reference kernel left out of every document (NULL: none). */
static const char *without;

/* The anchor cells the last put() kept beside the suspects. */
static size_t last_anchors;

/* The document of the head being re-measured (its times are its confirmations'). */
static const json_t *head_doc;

/* Puts `doc` as a run of `commit` on `ref` with a fresh run id; with `keep`, only the cells
 * whose keys it lists (and their reference values), marked as a confirmation of the run
 * `of`, as `atomwatch-agent run --confirm N` uploads one. */
static void put(struct store_conn *c, const json_t *doc, const char *commit, const char *ref,
                char *const *keep, size_t n_keep, const char *of)
{
	json_t *d = json_deep_copy(doc), *cells = json_array();
	/* the reference series, an older document's one or the family, kept beside the cells */
	json_t *series[1 + AW_REF_COUNT], *vals[1 + AW_REF_COUNT];
	size_t n_series = 0;
	struct aw_result *r, *id = aw_result_new();
	struct aw_verr e;
	struct store_put p;
	char *text, *host;
	size_t i;
	json_t *cell, *o;
	size_t anchors = 0;

	if (!d || !cells || !id)
		die("out of memory", NULL);
	if (without) { /* --without: as the agent would have sent it with the family less one */
		json_t *family = json_object_get(d, "references");

		for (i = json_array_size(family); i-- > 0;) {
			const json_t *k = json_object_get(json_array_get(family, i), "kernel");

			if (json_is_string(k) && !strcmp(json_string_value(k), without))
				json_array_remove(family, i);
		}
	}
	if (json_is_object(json_object_get(d, "reference")))
		series[n_series++] = json_object_get(d, "reference");
	json_array_foreach (json_object_get(d, "references"), i, o) {
		if (n_series < 1 + AW_REF_COUNT)
			series[n_series++] = o;
	}
	for (size_t k = 0; k < n_series; k++)
		if (!(vals[k] = json_array()))
			die("out of memory", NULL);
	json_array_foreach (json_object_get(d, "cells"), i, cell) {
		const char *key = json_string_value(json_object_get(cell, "key"));

		if (keep && !listed(key, keep, n_keep) && !anchor_key(cell, &anchors))
			continue;
		json_array_append(cells, cell);
		for (size_t k = 0; k < n_series; k++)
			json_array_append(vals[k],
			                  json_array_get(json_object_get(series[k], "values"), i));
	}
	last_anchors = anchors;
	json_object_set_new(d, "cells", cells);
	for (size_t k = 0; k < n_series; k++)
		json_object_set_new(series[k], "values", vals[k]);
	json_object_set_new(d, "run_id", json_string(id->run_id));
	snprintf(last_run_id, sizeof(last_run_id), "%s", id->run_id);
	if (of) {
		/* measured right after the head, as the agent does: a re-measurement taken from
		 * the recording's start (next_of() wraps around) must not move the commit's place
		 * in the history */
		json_object_set_new(d, "confirmation_of", json_string(of));
		json_object_set(d, "started_at", json_object_get(head_doc, "started_at"));
		json_object_set(d, "finished_at", json_object_get(head_doc, "finished_at"));
	}
	json_object_set_new(d, "commit", json_string(commit));
	json_object_set_new(d, "ref", json_string(ref));
	aw_result_free(&id);
	r = aw_result_from_json(d, NULL, &e);
	if (!r)
		die("a recorded document does not validate", e.message);
	memset(&p, 0, sizeof(p));
	p.result = r;
	text = json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);
	host = json_dumps(r->host, JSON_COMPACT | JSON_SORT_KEYS);
	if (!text || !host)
		die("out of memory", NULL);
	aw_sha256_hex(text, strlen(text), p.content_hash);
	aw_sha256_hex(host, strlen(host), p.host_hash);
	p.host_json = host;
	aw_time_now(p.received_at);
	if (store_put_runs(c, &p, 1) || p.outcome != STORE_CREATED)
		die("cannot store a run", NULL);
	free(text);
	free(host);
	aw_result_free(&r);
	json_decref(d);
}

/* ---- what gates ---- */

/* Whether a regression of this cell fails the gate (its level from thresholds.yaml's `gate:`,
 * by default: uncontended ops, readers, subject and kernel cells do; contended cells and cells
 * with duty only warn). */
static bool fails_gate(const struct aw_cell_verdict *c)
{
	return c->gate == AW_GATE_FAIL;
}

/* A subject shape's cell: "subject=..." but not the agent's control cell, which no variant
 * changes (agents/control.h). */
static bool is_shape_key(const char *key)
{
	return key && !strncmp(key, SUBJECT_PREFIX, strlen(SUBJECT_PREFIX)) &&
	       strncmp(key, CONTROL_PREFIX, strlen(CONTROL_PREFIX));
}

/* ---- the comparison methods ---- */

struct cellhist {
	const char *key;
	double v[MIN_HISTORY];
	size_t n;
};

/* The last MIN_HISTORY base runs' p50 of `key` before position `at` (measuring order), or the
 * last of the head's drawn history (--spaced). */
static size_t last_base(const struct recording *rec, size_t at, const char *key, double *out)
{
	size_t n = 0, from = spaced_hist ? n_spaced_hist : at;

	for (size_t jj = from; jj-- > 0 && n < MIN_HISTORY;) {
		size_t i, j = spaced_hist ? spaced_hist[jj] : jj;
		json_t *cell;

		if (strcmp(rec->variant[j], "base"))
			continue;
		json_array_foreach (json_object_get(rec->docs[j], "cells"), i, cell) {
			json_t *v = json_object_get(cell, "p50");

			if (!strcmp(json_string_value(json_object_get(cell, "key")), key) &&
			    json_is_number(v))
				out[n++] = json_number_value(v);
		}
	}
	return n;
}

/* Plain threshold and z-score over the fail-level cells of the head at position `at`;
 * subject_hit[] says whether the subject cell `shape` (NULL: none) was flagged. */
static void simple_methods(const struct recording *rec, size_t at, const char *shape,
                           bool flags[M_COUNT], bool subject_hit[M_COUNT])
{
	size_t i;
	json_t *cell;

	json_array_foreach (json_object_get(rec->docs[at], "cells"), i, cell) {
		const char *key = json_string_value(json_object_get(cell, "key"));
		json_t *pv = json_object_get(cell, "p50");
		double b[MIN_HISTORY], head, med, mean = 0, sd = 0;
		size_t n;
		bool plain, z;

		if (!json_is_number(pv) || strstr(key, " contender=") || strstr(key, " d="))
			continue;
		head = json_number_value(pv);
		n = last_base(rec, at, key, b);
		if (n < 3)
			continue;
		for (size_t k = 0; k < n; k++)
			mean += b[k] / (double)n;
		for (size_t k = 0; k < n; k++)
			sd += (b[k] - mean) * (b[k] - mean) / (double)(n - 1);
		sd = sqrt(sd);
		aw_sort_doubles(b, n);
		med = aw_quantile_sorted(b, n, 0.5);
		plain = med > 0 ? head / med - 1 > 0.05 : head > 0;
		z = sd > 0 ? (head - mean) / sd > 5 : head > mean;
		flags[M_PLAIN] |= plain;
		flags[M_ZSCORE] |= z;
		if (shape && !strcmp(key, shape)) {
			subject_hit[M_PLAIN] |= plain;
			subject_hit[M_ZSCORE] |= z;
		}
	}
}

/* ---- one recording ---- */

/* A head's verdict as the gate sees it. */
struct verdict_of {
	bool fail;        /* a fail-level cell regressed */
	bool loud;        /* else: one is suspect or inconclusive */
	char *keys[4096]; /* the fail-level suspects to re-measure */
	size_t n_keys;
	char *shape[MAX_SHAPES]; /* the subject cells' keys, in order met */
	enum aw_verdict shape_v[MAX_SHAPES];
	double shape_thr[MAX_SHAPES]; /* their p50 thresholds */
	size_t n_shapes;
};

static void verbose_cell(const char *commit, const struct aw_cell_verdict *cv)
{
	const struct aw_metric_verdict *m = cv->p50.verdict == cv->verdict ? &cv->p50 : &cv->p99;

	fprintf(
	    stderr,
	    "  %s %s: %s %s %.4g -> %.4g (%+.2f%% [%+.2f, %+.2f]) noise %.3g window %zu head %zu "
	    "agree %zu levels %zu%s%s%s; %s\n",
	    commit, cv->key, aw_verdict_name(cv->verdict), m == &cv->p50 ? "p50" : "p99",
	    m->baseline, m->head, 100 * m->change, 100 * m->change_lo, 100 * m->change_hi, m->noise,
	    m->window, m->head_n, m->agree_n, m->n_levels, m->reference ? ", ref " : "",
	    m->reference ? m->reference : "", m->level_by ? ", levels by a reference" : "",
	    m->note ? m->note : "");
}

/* Judges `commit` on `host` as the gate does. */
static void judge(struct store_conn *c, const struct aw_analysis_opts *o, const char *project,
                  const char *commit, const char *host, const char *stage, struct verdict_of *out)
{
	struct aw_host_verdict v;
	char *err = NULL;

	memset(out, 0, sizeof(*out));
	if (verbose)
		fprintf(stderr, "  [%s]\n", stage);
	if (aw_analysis_host(c, o, project, commit, NULL, host, &v, &err))
		die("analysis failed", err);
	out->fail = v.status == AW_VERDICT_FAIL;
	out->loud = v.status == AW_VERDICT_UNCONFIRMED || v.status == AW_VERDICT_INCONCLUSIVE;
	for (size_t i = 0; i < v.n_cells; i++) {
		const struct aw_cell_verdict *cv = &v.cells[i];

		if (is_shape_key(cv->key) && out->n_shapes < MAX_SHAPES) {
			out->shape[out->n_shapes] = strdup(cv->key);
			out->shape_thr[out->n_shapes] = cv->p50.threshold;
			out->shape_v[out->n_shapes++] = cv->verdict;
		}
		if (verbose && (is_shape_key(cv->key) ||
		                (fails_gate(cv) && cv->verdict != AW_VERDICT_UNCHANGED)))
			verbose_cell(commit, cv);
		if (cv->verdict == AW_VERDICT_SUSPECT && fails_gate(cv) && out->n_keys < 4096)
			out->keys[out->n_keys++] = strdup(cv->key);
	}
	aw_host_verdict_release(&v);
}

static void verdict_release(struct verdict_of *v)
{
	for (size_t i = 0; i < v->n_keys; i++)
		free(v->keys[i]);
	for (size_t i = 0; i < v->n_shapes; i++)
		free(v->shape[i]);
	memset(v, 0, sizeof(*v));
}

/* The verdict of the subject cell `key` in v (unknown when v lacks it). */
static enum aw_verdict shape_verdict(const struct verdict_of *v, const char *key)
{
	for (size_t i = 0; i < v->n_shapes; i++)
		if (!strcmp(v->shape[i], key))
			return v->shape_v[i];
	return AW_VERDICT_UNKNOWN;
}

#define CLOCK_KERNEL "mulchain-v1" /* the latency chain: the clock, not the ports */

/* The p50 of cell `key` in a run (NAN when it has none) in steps of the latency chain measured
 * beside it (the document's references), as measured where the run has no such reference. The
 * machine's clock moves by steps (all four references 4% together in `-38`, between minutes) that a
 * head and its nearest base runs can straddle; the chain feels the clock and not the sharing of the
 * core's ports, so a shift in its steps keeps what a change costs in either state of the ports
 * and drops what the clock did. */
static double steps_of(const json_t *doc, const char *key)
{
	size_t i, k;
	json_t *cell, *ref;
	double p50 = NAN;

	json_array_foreach (json_object_get(doc, "cells"), i, cell)
		if (!strcmp(json_string_value(json_object_get(cell, "key")), key)) {
			if (json_is_number(json_object_get(cell, "p50")))
				p50 = json_number_value(json_object_get(cell, "p50"));
			break;
		}
	if (isnan(p50))
		return NAN;
	json_array_foreach (json_object_get(doc, "references"), k, ref) {
		const char *kernel = json_string_value(json_object_get(ref, "kernel"));
		json_t *v;

		if (!kernel || strcmp(kernel, CLOCK_KERNEL))
			continue;
		v = json_array_get(json_object_get(ref, "values"), i);
		return json_is_number(v) && json_number_value(v) > 0 ? p50 / json_number_value(v)
		                                                     : p50;
	}
	return p50;
}

static double median_of(double *v, size_t n)
{
	aw_sort_doubles(v, n);
	return n ? aw_quantile_sorted(v, n, 0.5) : NAN;
}

#define LOCAL_HEADS 10 /* head runs in a head's local shift, each beside two base runs */

/* Takes for a head run at position `p` the `want` base runs nearest it in measuring order that
 * `taken` (n_taken of them) lacks and that measured cell `key`, adding their steps to b[]. */
static size_t nearest_base(const struct recording *rec, size_t p, const char *key, size_t want,
                           size_t *taken, size_t *n_taken, double *b)
{
	size_t got = 0;

	for (size_t d = 1; d < rec->n && got < want; d++)
		for (int side = 0; side < 2 && got < want; side++) {
			size_t j = side ? p + d : p - d;
			bool dup = false;
			double x;

			if (side ? p + d >= rec->n : p < d)
				continue;
			for (size_t q = 0; q < *n_taken && !dup; q++)
				dup = taken[q] == j;
			if (dup || strcmp(rec->variant[j], "base") ||
			    isnan(x = steps_of(rec->docs[j], key)))
				continue;
			taken[(*n_taken)++] = j;
			b[got++] = x;
		}
	return got;
}

/* The shift a head really had, measured without the model: over the head and the next runs of
 * its variant (LOCAL_HEADS in all), the median of each one's p50 of cell `key`, in the latency
 * chain's steps (steps_of()), against the two base runs measured nearest it (their geometric
 * mean; none taken twice): each pair shares one moment of the machine. The variant's shift over
 * the whole recording misleads where the effect of a change depends on the machine's level of
 * the moment, and so did the 20 base runs nearest the head against its ten runs (8 s against
 * 45 s): on a core shared part of that time they read branchy's build of +1% alone and +2-5%
 * shared (`-72`) as +6 to +16% (`-71` to `-74`). So does the median of each side's runs, as the
 * levels mix: a median of runs in two levels 11% apart leaps with their shares. NAN when fewer than
 * 3 pairs. *se gets its standard error (log; 1.2533 sigma / sqrt(n) of a median, sigma 1.4826 times
 * the pairs' MAD): a local shift is itself a measurement, and a build at +4.8% reads 5% or more now
 * and then. */
static double local_shift(const struct recording *rec, size_t at, const char *key, double *se)
{
	double d[LOCAL_HEADS], dev[LOCAL_HEADS], b[2], x, md;
	size_t n = 0, taken[2 * LOCAL_HEADS], n_taken = 0;

	for (size_t j = at; j < rec->n && n < LOCAL_HEADS && n_taken + 2 <= 2 * LOCAL_HEADS; j++)
		if (!strcmp(rec->variant[j], rec->variant[at]) &&
		    !isnan(x = steps_of(rec->docs[j], key)) &&
		    nearest_base(rec, j, key, 2, taken, &n_taken, b) == 2)
			d[n++] = log(x) - (log(b[0]) + log(b[1])) / 2;
	if (n < 3)
		return NAN;
	md = median_of(d, n);
	for (size_t i = 0; i < n; i++)
		dev[i] = fabs(d[i] - md);
	*se = 1.2533 * 1.4826 * median_of(dev, n) / sqrt((double)n);
	return expm1(md);
}

/* The next `n` runs of `variant` from confirm_after runs after position `at` on, continuing
 * from the recording's start when its end comes first (never the head itself); with
 * confirm_gap_s, the i-th of them the first from confirm_after runs after `at` on that started
 * i * confirm_gap_s seconds after it or later and is not taken yet. */
static size_t next_of(const struct recording *rec, size_t at, const char *variant, size_t *out,
                      size_t n)
{
	size_t k = 0;

	if (confirm_gap_s > 0) {
		for (size_t q = 1; q <= n; q++) {
			/* (round the recording as many times as the gaps need) */
			size_t laps = 2 + (size_t)((double)q * confirm_gap_s /
			                           (rec->span > 0 ? rec->span : 1));

			for (size_t step = confirm_after; step < laps * rec->n; step++) {
				size_t j = (at + step) % rec->n;
				double after = rec->t[j] - rec->t[at] +
				               (double)((at + step) / rec->n) * rec->span;
				bool taken = j == at || after < (double)q * confirm_gap_s;

				for (size_t x = 0; x < k && !taken; x++)
					taken = out[x] == j;
				if (!taken && !strcmp(rec->variant[j], variant)) {
					out[k++] = j;
					break;
				}
			}
		}
		return k;
	}
	for (size_t step = confirm_after; step < rec->n && k < n; step++) {
		size_t j = (at + step) % rec->n;

		if (j != at && !strcmp(rec->variant[j], variant))
			out[k++] = j;
	}
	return k;
}

/* The subject cells ("shapes") of a recording, from its first run. */
static char *shapes[MAX_SHAPES];
static size_t n_shapes;

/* One head at position `at`: its run as a commit of its own, then (while it has suspects) one
 * re-measurement at a time. Updates the tallies of every method. */
static void one_head(struct store_conn *c, const struct aw_analysis_opts *o,
                     const struct recording *rec, size_t at, const char *host, bool aa,
                     struct tally t[M_COUNT], struct shape_tally st[M_COUNT][MAX_SHAPES])
{
	static unsigned serial;
	const char *project = json_string_value(json_object_get(rec->docs[at], "project"));
	char label[128], commit[41], ref[64], head_id[AW_UUID_LEN + 1];
	struct verdict_of now, single;
	struct aw_analysis_opts one;
	bool flags[M_COUNT] = {0}, subj[M_COUNT] = {0}, real[MAX_SHAPES] = {0};
	bool sure[MAX_SHAPES] = {0};
	double shift_of[MAX_SHAPES] = {0};
	size_t next[MAX_CONFIRM], k, used = 0, first_keys, remeasured = 0;

	snprintf(label, sizeof(label), "%s:%zu:%u", rec->path, at, ++serial);
	commit_of(label, commit);
	if (verbose)
		fprintf(stderr, "%s head %zu (%s) commit %s\n", aa ? "A/A" : "A/B", at,
		        rec->variant[at], commit);
	snprintf(ref, sizeof(ref), "pr-%u", serial);
	put(c, rec->docs[at], commit, ref, NULL, 0, NULL);
	snprintf(head_id, sizeof(head_id), "%s", last_run_id);
	head_doc = rec->docs[at];
	/* one head run decides (detection.confirm_runs: 1): any fail-level regression fails */
	one = *o;
	one.confirm_runs = 1;
	judge(c, &one, project, commit, host, "one head run", &single);
	flags[M_SINGLE] = single.fail;
	judge(c, o, project, commit, host, "first run", &now);
	if (now.n_keys && confirm_n)
		t[M_CONFIRM].suspects++;
	t[M_CONFIRM].first_cells += json_array_size(json_object_get(rec->docs[at], "cells"));
	k = next_of(rec, at, rec->variant[at], next, confirm_n);
	first_keys = now.n_keys;
	while (now.n_keys && used < k) {
		char stage[32];

		put(c, rec->docs[next[used]], commit, ref, now.keys, now.n_keys, head_id);
		t[M_CONFIRM].confirm_cells += now.n_keys;
		remeasured += now.n_keys + last_anchors;
		used++;
		snprintf(stage, sizeof(stage), "re-measurement %zu", used);
		verdict_release(&now);
		judge(c, o, project, commit, host, stage, &now);
	}
	t[M_CONFIRM].confirm_runs += used;
	if (used && first_keys && t[M_CONFIRM].n_cost < 4096)
		t[M_CONFIRM].cost[t[M_CONFIRM].n_cost++] = (double)remeasured / (double)first_keys;
	if (used || now.n_keys)
		t[M_CONFIRM].rounds[used]++;
	flags[M_CONFIRM] = now.fail;
	if (verbose && aa && now.fail)
		fprintf(stderr, "  => A/A head %zu: the gate fails after confirmation\n", at);
	simple_methods(rec, at, NULL, flags, subj);
	for (size_t s = 0; !aa && s < n_shapes; s++) {
		double thr = 0.05; /* (the default, for a shape the verdict lacks) */

		for (size_t i = 0; i < now.n_shapes; i++)
			if (!strcmp(now.shape[i], shapes[s]))
				thr = now.shape_thr[i];
		double se = NAN, shift = local_shift(rec, at, shapes[s], &se);

		shift_of[s] = shift;
		real[s] = shift >= thr;
		sure[s] = log1p(shift) - 1.645 * se >= log1p(thr);
	}
	for (size_t s = 0; aa && s < n_shapes; s++) {
		enum aw_verdict v = shape_verdict(&now, shapes[s]);

		aa_shape[s].heads++;
		aa_shape[s].caught += v == AW_VERDICT_REGRESSED;
		aa_shape[s].loud += v == AW_VERDICT_SUSPECT || v == AW_VERDICT_INCONCLUSIVE;
	}
	for (size_t s = 0; s < n_shapes; s++) {
		bool plain[M_COUNT] = {0};

		simple_methods(rec, at, shapes[s], flags, plain);
		for (int m = 0; !aa && m < M_COUNT; m++) {
			enum aw_verdict v = m == M_CONFIRM  ? shape_verdict(&now, shapes[s])
			                    : m == M_SINGLE ? shape_verdict(&single, shapes[s])
			                                    : AW_VERDICT_UNKNOWN;
			bool caught =
			    m == M_CONFIRM || m == M_SINGLE ? v == AW_VERDICT_REGRESSED : plain[m];
			bool loud = (m == M_CONFIRM || m == M_SINGLE) &&
			            (v == AW_VERDICT_SUSPECT || v == AW_VERDICT_INCONCLUSIVE ||
			             v == AW_VERDICT_NOISY);

			st[m][s].heads++;
			st[m][s].caught += caught;
			st[m][s].loud += !caught && loud;
			st[m][s].silent += !caught && !loud;
			if (real[s]) {
				st[m][s].real++;
				st[m][s].real_caught += caught;
				st[m][s].real_silent += !caught && !loud;
			}
			if (sure[s]) {
				st[m][s].sure++;
				st[m][s].sure_caught += caught;
				st[m][s].sure_silent += !caught && !loud;
				if (verbose && m == M_CONFIRM && !caught && !loud)
					fprintf(stderr,
					        "  => silent pass: %s %s, local shift %+.2f%%\n",
					        shapes[s], rec->variant[at], 100 * shift_of[s]);
			}
		}
	}
	(void)subj;
	for (int m = 0; aa && m < M_COUNT; m++) {
		t[m].commits++;
		t[m].gates += flags[m];
		if (m == M_CONFIRM)
			t[m].loud += !now.fail && now.loud;
	}
	verdict_release(&now);
	verdict_release(&single);
}

/* --spaced: draws the history of the head at position `at`, up to `want` base runs more than
 * SPACING runs away from it (so neither the head's confirmations nor the spell it was measured
 * in), in a random order, and puts them as commits of a ref of their own, named in `ref`.
 * Returns how many it drew (spaced_hist lists them). */
static size_t draw_history(const struct recording *rec, size_t at, size_t want, char *ref,
                           size_t ref_size, struct store_conn *c)
{
	static size_t pool[8192], serial;
	uint64_t state = spaced_seed * 0x100000001b3u + at;
	size_t n = 0;
	char label[128], commit[41];

	size_t conf[MAX_CONFIRM], n_conf = next_of(rec, at, rec->variant[at], conf, confirm_n);

	for (size_t j = 0; j < rec->n && n < 8192; j++) {
		bool near = j + SPACING >= at && j <= at + SPACING;

		for (size_t q = 0; q < n_conf; q++)
			near = near || (j + SPACING >= conf[q] && j <= conf[q] + SPACING);
		if (!strcmp(rec->variant[j], "base") && !near)
			pool[n++] = j;
	}
	/* a partial Fisher-Yates shuffle: the first `want` of the pool */
	if (want > n)
		want = n;
	for (size_t k = 0; k < want; k++) {
		size_t r = k + (size_t)(aw_splitmix64(&state) % (n - k)), t = pool[k];

		pool[k] = pool[r];
		pool[r] = t;
	}
	snprintf(ref, ref_size, "spaced-%zu", ++serial);
	for (size_t k = 0; k < want; k++) {
		/* an hour apart, and before every head (whose commits have no commit time and
		 * are ordered by when they were measured) */
		json_t *d = json_deep_copy(rec->docs[pool[k]]);
		char when[32];

		snprintf(when, sizeof(when), "2020-01-%02zuT%02zu:00:00Z", 1 + k / 24, k % 24);
		if (!d || json_object_set_new(d, "commit_time", json_string(when)))
			die("out of memory", NULL);
		snprintf(label, sizeof(label), "%s:%s:%zu", rec->path, ref, k);
		commit_of(label, commit);
		put(c, d, commit, ref, NULL, 0, NULL);
		json_decref(d);
	}
	spaced_hist = pool;
	n_spaced_hist = want;
	return want;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The shift the recorder measured for `variant` of the subject cell `shape` (NAN: unknown):
 * one number for a one-op recording, or an object by op. */
static double measured_shift(const json_t *header, const char *variant, const char *shape)
{
	const json_t *var = json_object_get(
	    json_object_get(json_object_get(header, "subject"), "variants"), variant);
	const json_t *shift = json_object_get(var, "measured_shift");
	const char *op = strstr(shape, " op=");

	if (json_is_number(shift))
		return json_number_value(shift);
	if (json_is_object(shift) && op) {
		char name[64];

		snprintf(name, sizeof(name), "%s", op + 4);
		name[strcspn(name, " ")] = 0;
		shift = json_object_get(shift, name);
		if (json_is_number(shift))
			return json_number_value(shift);
	}
	return NAN;
}

static double pct(size_t a, size_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

static void replay(const char *path, const char *tmp)
{
	struct recording rec;
	struct store *s = NULL;
	struct store_conn *c = NULL;
	struct aw_analysis_opts o;
	static struct tally aa[M_COUNT],
	    ab[3][M_COUNT]; /* (each with its costs: not on the stack) */
	static struct shape_tally st[3][M_COUNT][MAX_SHAPES];
	size_t next[MAX_CONFIRM], need = confirm_n < 3 ? confirm_n : 3, cum = 0, median = 0, with;
	static const char *const variants[3] = {"plus2", "plus5", "plus10"};
	char url[512], *err = NULL, commit[41], label[128];
	const char *host, *project, *load_kind;
	size_t n_base = 0, i;
	json_t *cell;

	memset(st, 0, sizeof(st));
	memset(aa, 0, sizeof(aa));
	memset(ab, 0, sizeof(ab));
	memset(aa_shape, 0, sizeof(aa_shape));
	load(&rec, path);
	snprintf(url, sizeof(url), "sqlite:%s/replay-%d.db", tmp, (int)getpid());
	unlink(url + 7);
	if (store_open(url, NULL, &s, &err) || store_connect(s, &c, &err) ||
	    store_migrate(c, NULL, NULL, &err))
		die("cannot open the store", err);
	aw_analysis_opts_default(&o);
	o.thresholds = thresholds;
	if (confirm_n)
		o.confirm_budget = confirm_n;
	else
		o.confirm_runs = 1;
	if (screen_noise >= 0)
		o.detect.screen_noise = screen_noise;
	host = json_string_value(json_object_get(json_object_get(rec.docs[0], "host"), "name"));
	project = json_string_value(json_object_get(rec.docs[0], "project"));
	if (!host || !project)
		die("the first run has no host name or project", path);
	n_shapes = 0;
	json_array_foreach (json_object_get(rec.docs[0], "cells"), i, cell) {
		const char *key = json_string_value(json_object_get(cell, "key"));

		if (is_shape_key(key) && n_shapes < MAX_SHAPES)
			shapes[n_shapes++] = strdup(key);
	}
	qsort(shapes, n_shapes, sizeof(*shapes), cmp_str);
	/* the history of main: the base runs, each its own commit, in measuring order; a head
	 * is judged against those measured before it (with --spaced, each head gets its own) */
	for (i = 0; !spaced_seed && i < rec.n; i++) {
		if (strcmp(rec.variant[i], "base"))
			continue;
		snprintf(label, sizeof(label), "main:%zu", i);
		commit_of(label, commit);
		put(c, rec.docs[i], commit, "main", NULL, 0, NULL);
	}
	for (i = 0; i < rec.n; i++) {
		bool base = !strcmp(rec.variant[i], "base");
		int v = -1;
		char hist_ref[64];

		if (!spaced_seed) {
			if (base && n_base++ < MIN_HISTORY)
				continue;
			if (n_base < MIN_HISTORY)
				continue;
		}
		for (int k = 0; k < 3; k++)
			if (!strcmp(rec.variant[i], variants[k]))
				v = k;
		/* heads that have re-measurements to take (from anywhere in the recording) */
		if ((!base && v < 0) || next_of(&rec, i, rec.variant[i], next, need) < need)
			continue;
		/* (a history drawn only for a head that is judged) */
		if (spaced_seed) {
			if (draw_history(&rec, i, o.history, hist_ref, sizeof(hist_ref), c) <
			    MIN_HISTORY)
				continue;
			o.baseline_ref = hist_ref;
		}
		if (base)
			one_head(c, &o, &rec, i, host, true, aa, st[0]);
		else if (v >= 0)
			one_head(c, &o, &rec, i, host, false, ab[v], st[v]);
		o.baseline_ref = "main";
	}
	load_kind = json_string_value(json_object_get(json_object_get(rec.header, "load"), "kind"));
	printf("\n%s: %s, profile %s, load %s, %zu runs\n", path,
	       json_string_value(json_object_get(rec.header, "cpu_model")),
	       json_string_value(json_object_get(rec.header, "profile")), load_kind, rec.n);
	printf("A/A (%zu commits): false gates", aa[M_CONFIRM].commits);
	for (int m = 0; m < M_COUNT; m++)
		printf("%s %s %zu (%.1f%%)", m ? ";" : "",
		       m == M_CONFIRM ? "atomwatch" : method_names[m], aa[m].gates,
		       pct(aa[m].gates, aa[m].commits));
	printf("; atomwatch unconfirmed or inconclusive %zu (%.1f%%)\n", aa[M_CONFIRM].loud,
	       pct(aa[M_CONFIRM].loud, aa[M_CONFIRM].commits));
	with = 0;
	for (size_t r = 1; r <= MAX_CONFIRM; r++)
		with += aa[M_CONFIRM].rounds[r];
	for (size_t r = 1; r <= MAX_CONFIRM && with; r++) {
		cum += aa[M_CONFIRM].rounds[r];
		if (!median && 2 * cum >= with)
			median = r;
	}
	printf(
	    "re-measurement (budget %u): %zu of %zu A/A heads had suspects; runs used median %zu, "
	    "%.2f cells each on average, against %.1f cells in a head's first run\n",
	    confirm_n, aa[M_CONFIRM].suspects, aa[M_CONFIRM].commits, median,
	    aa[M_CONFIRM].confirm_runs
	        ? (double)aa[M_CONFIRM].confirm_cells / (double)aa[M_CONFIRM].confirm_runs
	        : 0.0,
	    aa[M_CONFIRM].commits
	        ? (double)aa[M_CONFIRM].first_cells / (double)aa[M_CONFIRM].commits
	        : 0.0);
	aw_sort_doubles(aa[M_CONFIRM].cost, aa[M_CONFIRM].n_cost);
	printf("confirmation cost: the cells re-measured (their anchors with them) over the first "
	       "run's suspect cells, median %.1fx over %zu A/A heads with suspects\n",
	       aa[M_CONFIRM].n_cost
	           ? aw_quantile_sorted(aa[M_CONFIRM].cost, aa[M_CONFIRM].n_cost, 0.5)
	           : 0.0,
	       aa[M_CONFIRM].n_cost);
	printf("A/A per shape (its subject cell regressed after confirmation; suspect or "
	       "inconclusive):");
	for (size_t sh = 0; sh < n_shapes; sh++)
		printf(" %s %zu/%zu (%zu)",
		       strstr(shapes[sh], "op=") ? strstr(shapes[sh], "op=") + 3 : shapes[sh],
		       aa_shape[sh].caught, aa_shape[sh].heads, aa_shape[sh].loud);
	printf("\n");
	printf("tally aa %s %s %zu %zu %zu\n", path, load_kind, aa[M_CONFIRM].gates,
	       aa[M_CONFIRM].loud, aa[M_CONFIRM].commits);
	for (size_t sh = 0; sh < n_shapes; sh++)
		printf("tally aashape %s %s %s %zu %zu %zu\n", path, load_kind, shapes[sh],
		       aa_shape[sh].caught, aa_shape[sh].loud, aa_shape[sh].heads);
	for (size_t sh = 0; sh < n_shapes; sh++) {
		printf("%s\n", shapes[sh]);
		for (int k = 0; k < 3; k++) {
			const struct shape_tally *x = &st[k][M_CONFIRM][sh];
			double shift = measured_shift(rec.header, variants[k], shapes[sh]);

			printf(
			    "  %-6s (%+5.1f%%): atomwatch caught %3zu/%-3zu (%5.1f%%), loud %3zu, "
			    "silent %3zu (%4.1f%%)",
			    variants[k], 100 * shift, x->caught, x->heads, pct(x->caught, x->heads),
			    x->loud, x->silent, pct(x->silent, x->heads));
			for (int m = M_SINGLE; m < M_COUNT; m++)
				printf("; %s %zu", method_names[m], st[k][m][sh].caught);
			printf("\n");
			printf(
			    "           of them %zu with a local shift at their threshold or more: "
			    "caught %zu (%5.1f%%), silent %zu (%4.1f%%)\n",
			    x->real, x->real_caught, pct(x->real_caught, x->real), x->real_silent,
			    pct(x->real_silent, x->real));
			printf(
			    "           of them %zu surely so (less 1.645 standard errors): caught "
			    "%zu (%5.1f%%), silent %zu (%4.1f%%)\n",
			    x->sure, x->sure_caught, pct(x->sure_caught, x->sure), x->sure_silent,
			    pct(x->sure_silent, x->sure));
			printf(
			    "tally ab %s %s %s %s %.4f %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu\n",
			    path, load_kind, shapes[sh], variants[k], shift, x->caught, x->loud,
			    x->silent, x->heads, x->real, x->real_caught, x->real_silent, x->sure,
			    x->sure_caught, x->sure_silent);
		}
	}
	fflush(stdout);
	(void)ab;
	store_disconnect(&c);
	store_close(&s);
	unlink(url + 7);
	for (i = 0; i < rec.n; i++) {
		json_decref(rec.docs[i]);
		free(rec.variant[i]);
	}
	for (i = 0; i < n_shapes; i++)
		free(shapes[i]);
	free(rec.docs);
	free(rec.variant);
	free(rec.t);
	json_decref(rec.header);
}

int main(int argc, char **argv)
{
	static struct aw_thresholds th;
	struct aw_analysis_opts defaults;
	const char *th_path = AW_SOURCE_DIR "/configs/thresholds.yaml";
	char tmp[] = "/tmp/aw-replay-XXXXXX", *err = NULL, cmd[64];
	int i = 1;

	verbose = getenv("AW_REPLAY_VERBOSE") != NULL;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--confirm") && i + 1 < argc) {
			char *end;
			long n = strtol(argv[++i], &end, 10);

			if (*end || n < 0 || n > MAX_CONFIRM) {
				fprintf(stderr, "bench_detect_replay: --confirm takes 0..%d\n",
				        MAX_CONFIRM);
				return 2;
			}
			confirm_n = (unsigned)n;
		} else if (!strcmp(argv[i], "--confirm-after") && i + 1 < argc) {
			char *end;
			unsigned long n = strtoul(argv[++i], &end, 10);

			if (*end || !n || n > 1000 || argv[i][0] == '-') {
				fprintf(stderr,
				        "bench_detect_replay: --confirm-after takes 1..1000\n");
				return 2;
			}
			confirm_after = n;
		} else if (!strcmp(argv[i], "--confirm-gap-s") && i + 1 < argc) {
			char *end;
			double x = strtod(argv[++i], &end);

			if (*end || !argv[i][0] || !(x >= 0 && x <= 3600)) {
				fprintf(stderr,
				        "bench_detect_replay: --confirm-gap-s takes 0..3600\n");
				return 2;
			}
			confirm_gap_s = x;
		} else if (!strcmp(argv[i], "--spaced") && i + 1 < argc) {
			char *end;
			unsigned long n = strtoul(argv[++i], &end, 10);

			if (*end || !n || argv[i][0] == '-') {
				fprintf(stderr,
				        "bench_detect_replay: --spaced takes a seed >= 1\n");
				return 2;
			}
			spaced_seed = n;
		} else if (!strcmp(argv[i], "--screen-noise") && i + 1 < argc) {
			char *end;
			double x = strtod(argv[++i], &end);

			if (*end || !(x >= 0 && x <= 0.5)) {
				fprintf(stderr,
				        "bench_detect_replay: --screen-noise takes 0..0.5\n");
				return 2;
			}
			screen_noise = x;
		} else if (!strcmp(argv[i], "--thresholds") && i + 1 < argc) {
			th_path = argv[++i];
		} else if (!strcmp(argv[i], "--without") && i + 1 < argc) {
			without = argv[++i];
			if (aw_ref_lookup(without) < 0) {
				fprintf(stderr,
				        "bench_detect_replay: --without takes a reference kernel's "
				        "name, not '%s'\n",
				        without);
				return 2;
			}
		} else {
			fprintf(
			    stderr,
			    "usage: bench_detect_replay [--confirm N] [--confirm-after K] "
			    "[--confirm-gap-s S] [--spaced SEED] [--screen-noise X] [--thresholds FILE] "
			    "[--without KERNEL] RECORDING...\n");
			return 2;
		}
	}
	if (i == argc) {
		fprintf(stderr, "bench_detect_replay: no recording given\n");
		return 2;
	}
	if (aw_thresholds_load(&th, th_path, &err))
		die("cannot load the thresholds", err);
	thresholds = &th;
	if (!mkdtemp(tmp))
		die("cannot make a temporary directory", strerror(errno));
	aw_analysis_opts_default(&defaults);
	printf(
	    "Recordings replayed through the collector's store and analysis (default thresholds, "
	    "window %u); a head is a commit judged against %s (at least %d), and followed by at "
	    "least N runs of its variant (its confirmations, from %lu runs after it on; N = %u).\n"
	    "A/A false = commits of an unchanged subject whose gate fails; "
	    "plusK = heads of a really slower subject whose subject cell fails the gate.\n",
	    (unsigned)defaults.detect.window,
	    spaced_seed ? "40 base runs drawn at random away from it (--spaced)"
	                : "the base runs measured before it",
	    MIN_HISTORY, confirm_after, confirm_n);
	if (confirm_gap_s > 0)
		printf(
		    "Confirmations measured apart: the i-th the first run of its kind started %g s "
		    "x i or more after the head (--confirm-gap-s).\n",
		    confirm_gap_s);
	if (without)
		printf("Every run's reference kernel %s left out (--without).\n", without);
	if (spaced_seed)
		printf(
		    "History drawn with seed %lu, leaving out %d runs on either side of the head "
		    "and of each confirmation.\n",
		    spaced_seed, SPACING);
	for (; i < argc; i++)
		replay(argv[i], tmp);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_detect_replay: cannot remove %s\n", tmp);
	aw_thresholds_release(&th);
	return 0;
}
