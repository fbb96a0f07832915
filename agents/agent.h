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
	unsigned confirm;        /* a first run: the confirmations this agent measures after it */
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
 * AW_RUNNER_MIN_SAMPLES. */
uint32_t aw_confirm_samples(uint32_t samples, unsigned confirm);

/* The keys of the suspect cells of run `run_id` (GET /api/v1/runs/{id}/suspects: the verdict
 * of its commit on its host), retried like uploads. Returns 0 with *keys (a NULL-terminated
 * array; free with aw_strv_free()) and *n, or a negative errno with *err. */
int aw_agent_suspects(struct aw_agent *a, const char *run_id, char ***keys, size_t *n, char **err);
void aw_strv_free(char **v);

/* Re-measures cells keys[n] of run `first_id` (of `run`, measured with `first_samples`
 * batches per cell) `confirm` times as confirmation runs (see aw_agent_confirm()), with
 * run->reuse when set, else with one runner made for all of them (the subject built once);
 * last_id (may be NULL) receives the last run's id. Returns 0 or a negative errno with
 * *err. */
int aw_agent_remeasure(struct aw_agent *a, const struct aw_agent_run *run, const char *first_id,
                       const char *const *keys, size_t n, uint32_t first_samples, unsigned confirm,
                       char *last_id, size_t *deferred, char **err);

/* Re-measures the suspect cells of `first` (a run of `run` just uploaded) `confirm` times, each
 * a run of its own marked as a confirmation of it, spooled and uploaded like any run; nothing
 * when it has no suspect. *deferred counts the confirmations left in the spool. Returns 0, or
 * a negative errno with *err (-EINTR when stopped). */
int aw_agent_confirm(struct aw_agent *a, const struct aw_agent_run *run,
                     const struct aw_result *first, unsigned confirm, size_t *deferred, char **err);

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
