/* The agent's work, shared by its commands: measure (matrix, subject cells, refscale cells),
 * keep the result in the spool, upload it, flush the spool, and the daemon loop. main() in
 * agent_main.c only parses the command line around these. */
#ifndef AW_AGENT_AGENT_H
#define AW_AGENT_AGENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "aw/result.h"
#include "config.h"
#include "spool.h"
#include "upload.h"

#define AW_AGENT_PROG "atomwatch-agent"

/* Exit statuses of the commands (README "Agent"). */
enum {
	AW_EXIT_OK = 0,      /* uploaded (or nothing to do) */
	AW_EXIT_FAILURE = 1, /* measuring failed, a build failed, a document was rejected */
	AW_EXIT_USAGE = 2,   /* bad command line or config; nothing measured */
	AW_EXIT_SPOOLED = 3, /* measured, but left in the spool for a later flush */
};

struct aw_agent {
	const struct aw_agent_config *cfg; /* borrowed */
	struct aw_spool spool;
	struct aw_http_client *http;
	struct aw_retry_policy policy;
	volatile int *stop; /* raised by SIGTERM/SIGINT */
	bool progress;      /* show progress on stderr */
};

/* Opens the spool and the HTTP client (reading the token). Returns 0 or a negative errno with
 * *err (a config problem: exit status 2). Close with aw_agent_close(). */
int aw_agent_open(struct aw_agent *a, const struct aw_agent_config *cfg, volatile int *stop,
                  char **err);
void aw_agent_close(struct aw_agent *a);

struct aw_runner;

struct aw_agent_run {
	const char *project, *commit, *ref;
	const char *subject; /* a subject of the config, or NULL */
	const char *profile; /* NULL: the config's */
	enum aw_trigger trigger;
	const json_t *meta; /* extra meta fields (copied), or NULL */
	/* a confirmation run: only these cell keys (matrix and subject cells; kernel and
	 * refscale cells are not re-measured), `samples` batches each, marked as a confirmation
	 * of run `confirmation_of`; n_keys 0: a first run */
	const char *const *keys;
	size_t n_keys;
	uint32_t samples;
	const char *confirmation_of;
	unsigned confirm; /* a first run: the most confirmations this agent measures after it */
	struct aw_runner *reuse; /* measure with this runner (borrowed, kept from an earlier run of
	                            the same commit: no calibration, no subject build again);
	                            NULL: a runner of its own */
	/* a subject built already (a bisection's worktree build): its library is measured as it
	 * is, nothing is built; replaces `subject`. Borrowed; NULL: none */
	const struct aw_agent_subject *built;
	/* the commit's own date (RFC 3339), which orders the run on its ref; NULL: the committer
	 * date from the subject's git repository when it has the commit, else none */
	const char *commit_time;
};

/* The batches of each confirmation run when `confirm` runs re-measure the suspects of a run of
 * `samples` batches per cell: about 2 * samples / confirm (the confirm runs together cost
 * about twice the first measurement of those cells), at most samples, at least
 * AW_RUNNER_MIN_SAMPLES. What bench/runner/confirm.c measures; the adaptive confirmation
 * below gives each confirmation run the first run's batches instead. */
uint32_t aw_confirm_samples(uint32_t samples, unsigned confirm);

void aw_strv_free(char **v);

/* The collector's answer on a run (GET /api/v1/runs/{id}/suspects): the verdict of its commit
 * on its host, now. Release with aw_suspects_release(). */
struct aw_suspects {
	char **keys; /* the suspect cells to re-measure, n_keys of them (NULL-terminated) */
	size_t n_keys;
	char **anchors; /* the run's anchor cells to re-measure beside them (NULL-terminated) */
	size_t n_anchors;
	bool has_anchors;        /* the reply named them (an older collector does not) */
	char status[32];         /* the host's status: unconfirmed, fail, pass, ...; "" unknown */
	unsigned confirm_budget; /* the re-measurements a suspect may get; 0: not said */
};

/* Reads a suspects reply. Returns 0 with *out (release it), or -EPROTO (an unreadable reply)
 * or -ENOMEM with *err naming run_id; *out is then empty. */
int aw_suspects_from_json(const json_t *doc, const char *run_id, struct aw_suspects *out,
                          char **err);
void aw_suspects_release(struct aw_suspects *s);

/* Asks the collector for the suspects of run `run_id`, retried like uploads. Returns 0 with
 * *out (release it), or a negative errno with *err; *out is then empty. */
int aw_agent_suspects(struct aw_agent *a, const char *run_id, struct aw_suspects *out, char **err);

/* The time budget of a confirmation (--confirm-budget-s): the default and the most. */
#define AW_CONFIRM_DEFAULT_BUDGET_S 120
#define AW_CONFIRM_MAX_BUDGET_S     86400

/* The wait before each re-measurement (--confirm-gap-s, the daemon's schedule.confirm_gap):
 * the machine moves in spells of tens of seconds, and a re-measurement made within the first
 * run's spell repeats it rather than tests it (docs/detection.md, part 8). The default and the
 * most. */
#define AW_CONFIRM_DEFAULT_GAP_S 30
#define AW_CONFIRM_MAX_GAP_S     3600

struct aw_confirm_opts {
	unsigned max_runs; /* at most this many confirmation runs, 1..AW_RESULT_MAX_CONFIRM */
	double budget_s;   /* seconds of measuring them in all (> 0): no further one once spent */
	uint32_t samples;  /* batches per cell: the first run's (0: the runner's default) */
	double gap_s;      /* seconds from the end of one measurement (the first run's, or a
	                      re-measurement's) to the start of the next, 0..AW_CONFIRM_MAX_GAP_S */
};

/* Why a confirmation stopped (AW_CONFIRM_GO_ON: it did not). */
enum aw_confirm_stop {
	AW_CONFIRM_GO_ON = 0,
	AW_CONFIRM_NO_SUSPECT, /* the collector has no suspect left */
	AW_CONFIRM_MAX_RUNS,   /* max_runs confirmation runs made */
	AW_CONFIRM_BUDGET,     /* budget_s spent measuring */
	AW_CONFIRM_DEFERRED,   /* the last upload waits in the spool: the collector cannot judge */
	AW_CONFIRM_UNMEASURABLE, /* the suspects are kernel or refscale cells */
};

/* Words for the summary: "no suspect left", ... */
const char *aw_confirm_stop_name(enum aw_confirm_stop s);

/* Whether the next confirmation run is due, with n_suspects suspect cells after `made` runs
 * that took measured_s seconds of measuring: AW_CONFIRM_GO_ON, or why not. The first run is
 * due whenever there is a suspect, whatever the budget. */
enum aw_confirm_stop aw_confirm_check(const struct aw_confirm_opts *o, size_t n_suspects,
                                      unsigned made, double measured_s);

/* What a confirmation did. */
struct aw_confirm_report {
	unsigned runs;                 /* confirmation runs measured and stored (or spooled) */
	size_t cells;                  /* the cells they measured, in all */
	double measured_s;             /* seconds spent measuring them */
	double waited_s;               /* seconds waited between them (gap_s) */
	char status[32];               /* the collector's status after the last ("" unknown) */
	enum aw_confirm_stop stop;     /* why it stopped */
	char last_id[AW_UUID_LEN + 1]; /* the last confirmation run's id; "" none */
	bool deferred;                 /* the last one waits in the spool */
};

/* The adaptive confirmation of run `first_id` (a run of `run`): while `start`'s suspects (then
 * the collector's) last and aw_confirm_check() says so, measures one confirmation run of the
 * suspect cells and of start's anchors (each once), with o->samples batches per cell, marked
 * confirmation_of first_id, spools and uploads it, then asks the collector for the suspects
 * again (not after an upload left in the spool: the confirmation stops there). Measures with
 * run->reuse when set, else with one runner made for all of them (the subject built once: its
 * build counts as measuring time). `start` is borrowed. Logs a summary line at the end.
 * Returns 0 with *rep, or a negative errno with *err (-EINTR when stopped; a confirmation run
 * the collector refused, or a suspects question it could not answer, is an error); *rep says
 * what was done up to then. */
int aw_agent_remeasure(struct aw_agent *a, const struct aw_agent_run *run, const char *first_id,
                       const struct aw_suspects *start, const struct aw_confirm_opts *o,
                       struct aw_confirm_report *rep, char **err);

/* Confirms `first` (a run of `run` just stored) adaptively: asks the collector for its
 * suspects and anchors (the first run's own anchors when an older collector names none) and
 * runs aw_agent_remeasure() with them, with the first run's batches per cell when o->samples
 * is 0; nothing is measured when it has no suspect. Returns as aw_agent_remeasure(). */
int aw_agent_confirm(struct aw_agent *a, const struct aw_agent_run *run,
                     const struct aw_result *first, const struct aw_confirm_opts *o,
                     struct aw_confirm_report *rep, char **err);

/* Measures one run: the matrix through the runner, then the subject's cells (after building
 * it), then the refscale cells when configured. Returns 0 with *out (caller frees), or a
 * negative errno with *err: -EINVAL for a bad request (unknown subject, bad profile or CPUs:
 * exit status 2), -EINTR when stopped, others for failures. */
int aw_agent_measure(struct aw_agent *a, const struct aw_agent_run *run, struct aw_result **out,
                     char **err);

/* The same, handing the runner it made to *keep (when it returns 0; free it with
 * aw_runner_free()) for confirmation runs of the same commit. */
int aw_agent_measure_keep(struct aw_agent *a, const struct aw_agent_run *run,
                          struct aw_result **out, struct aw_runner **keep, char **err);

/* Writes the result to the spool, then uploads it. Returns 0 with *outcome (STORED: removed
 * from the spool; REJECTED: moved to rejected/; DEFERRED: still in the spool), or a negative
 * errno with *err when it could not even be spooled. */
int aw_agent_submit(struct aw_agent *a, const struct aw_result *r, enum aw_upload_outcome *outcome,
                    char **err);

/* aw_agent_submit() for a document already in JSON (an A/B document), spooled under `id`. */
int aw_agent_submit_json(struct aw_agent *a, const char *id, const json_t *doc,
                         enum aw_upload_outcome *outcome, char **err);

/* The runner options of the agent's config (matrix, profile or `profile` when not NULL, CPUs,
 * ops, samples, host name and labels, the stop flag). */
struct aw_runner_opts;
void aw_agent_runner_opts(const struct aw_agent *a, const char *profile,
                          struct aw_runner_opts *opts);

/* Uploads every spooled document, oldest first, stopping at the first one the collector could
 * not take (it is down). Counts go to the pointers (may be NULL). Returns 0 or a negative errno
 * with *err when the spool cannot be read. */
int aw_agent_flush(struct aw_agent *a, size_t *stored, size_t *rejected, size_t *left, char **err);

/* The daemon: long-polls the collector for jobs, runs them and reports their status, runs on
 * the schedule and when the fingerprint changes, flushes the spool; returns 0 once *stop is
 * raised (between cells of a run: nothing is left half-written), or a negative errno with *err
 * when it cannot go on. */
int aw_agent_daemon(struct aw_agent *a, char **err);

/* Compares the changing part (and the platform hash) of two fingerprints. Returns a new object
 * {field: {"from": old, "to": new}} of what differs (empty when nothing does; timer_hz, which
 * moves with every calibration, is ignored), or NULL on allocation failure. */
json_t *aw_fingerprint_changes(const json_t *old_host, const json_t *new_host);

/* A 40-hex-digit commit id that names the platform state of a fingerprint (SHA-256 of its
 * platform_hash and changing fields, timer_hz left out): scheduled runs without a configured
 * commit are filed under it, so each platform state is one point of the trend. */
int aw_platform_commit(const json_t *host, char out[41]);

#endif
