/* The macro check's cells; see macro.h. The tools run with fixed arguments, never through a
 * shell. */
#include "macro.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/buf.h"
#include "aw/stats.h"
#include "aw/util.h"
#include "proc.h"

#define MACRO_OUTPUT_MAX 65536
#define MACRO_TIMEOUT_MS UINT64_C(600000)
#define MACRO_RUNS_MAX   100

double aw_macro_seconds(const char *tool, const char *output)
{
	const char *mark = strcmp(tool, "hackbench") ? "Total time:" : "Time:";
	const char *at = output ? strstr(output, mark) : NULL;
	char *end = NULL;
	double v;

	if (!at)
		return -1;
	errno = 0;
	v = strtod(at + strlen(mark), &end);
	return errno || end == at + strlen(mark) || !(v >= 0) ? -1 : v;
}

/* Why a tool could not run, or NULL when it ran (*seconds set). */
static char *run_once(const char *tool, const char *groups, const char *loops, volatile int *stop,
                      double *seconds, int *rc)
{
	const char *hackbench[] = {"hackbench", "-g", groups, "-l", loops, NULL};
	const char *perf[] = {"perf", "bench", "sched", "messaging", "-g",
	                      groups, "-l",    loops,   NULL};
	bool is_perf = strcmp(tool, "hackbench") != 0;
	struct aw_proc p = {0};
	struct aw_buf out;
	char *why = NULL, *err = NULL;
	int code = 0;

	aw_buf_init(&out, MACRO_OUTPUT_MAX);
	p.argv = is_perf ? perf : hackbench;
	p.output = &out;
	p.log_fd = -1;
	p.timeout_ms = MACRO_TIMEOUT_MS;
	p.stop = stop;
	*rc = aw_proc_run(&p, &code, &err);
	if (*rc == -EINTR)
		goto out;
	if (*rc == -ETIMEDOUT)
		why = aw_asprintf("%s ran out of time (%llu s)", tool,
		                  (unsigned long long)(MACRO_TIMEOUT_MS / 1000));
	else if (*rc)
		why = aw_asprintf("%s could not run: %s", tool, err ? err : strerror(-*rc));
	else if (code == 127)
		why = aw_asprintf(is_perf ? "perf is not installed (Debian's linux-perf)"
		                          : "hackbench is not installed (Debian's rt-tests)");
	else if (code)
		why = aw_asprintf("%s exited with status %d: %s", tool, code,
		                  aw_text_tail(out.data ? out.data : "", out.len, 2, 200));
	else if ((*seconds = aw_macro_seconds(tool, out.data)) < 0)
		why = aw_asprintf("%s printed no time: %s", tool,
		                  aw_text_tail(out.data ? out.data : "", out.len, 2, 200));
	*rc = 0;
	if (why)
		for (char *c = why; *c; c++)
			*c = (unsigned char)*c < 0x20 ? ' ' : *c;
out:
	free(err);
	aw_buf_release(&out);
	return why;
}

int aw_macro_measure(struct aw_runner *r, struct aw_result *res, volatile int *stop, char **err)
{
	struct aw_macro_spec m;
	char groups[16], loops[16];

	aw_runner_macro(r, &m);
	snprintf(groups, sizeof(groups), "%u", m.groups);
	snprintf(loops, sizeof(loops), "%u", m.loops);
	for (size_t t = 0; t < m.n_tools; t++) {
		double seconds[MACRO_RUNS_MAX];
		struct aw_summary sum;
		struct aw_cell *c = aw_result_add_cell(res);
		unsigned runs = m.runs < MACRO_RUNS_MAX ? m.runs : MACRO_RUNS_MAX;
		char *why = NULL;
		int rc = 0;

		if (!c || aw_set_str(&c->subject, AW_MACRO_SUBJECT) ||
		    aw_set_str(&c->op, m.tools[t]) || aw_cell_make_key(c))
			return aw_errorf(err, -ENOMEM, "out of memory");
		if (!aw_runner_selected(r, c->key)) {
			aw_cell_release(c);
			res->n_cells--;
			continue;
		}
		for (unsigned i = 0; i < runs && !why; i++) {
			why = run_once(m.tools[t], groups, loops, stop, &seconds[i], &rc);
			if (rc == -EINTR)
				return aw_errorf(err, rc, "interrupted while running %s",
				                 m.tools[t]);
			seconds[i] *= 1e9; /* ns per run, as every cell */
		}
		if (why) {
			c->status = AW_CELL_SKIPPED;
			c->reason = why;
			continue;
		}
		if (aw_summarize(seconds, runs, &sum))
			return aw_errorf(err, -EINVAL, "no run of %s", m.tools[t]);
		c->n = sum.n;
		c->batch = 1;
		c->min = sum.min;
		c->p50 = sum.p50;
		c->p95 = sum.p95;
		c->p99 = sum.p99;
		c->max = sum.max;
		c->mean = sum.mean;
		c->stddev = sum.stddev;
		c->ci_lo = sum.ci_lo;
		c->ci_hi = sum.ci_hi;
		c->baseline_ns = 0;
	}
	return 0;
}
