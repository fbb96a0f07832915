/* The progress display of the command-line tools (atomwatch-run, atomwatch-agent): a bar with an
 * ETA on a terminal, one line per matrix section elsewhere. See aw_progress_init() in
 * include/atomwatch/runner.h. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "atomwatch/runner.h"
#include "aw/util.h"

void aw_progress_init(struct aw_progress *p, const char *prog, const struct aw_runner *runner)
{
	memset(p, 0, sizeof(*p));
	p->prog = prog;
	p->runner = runner;
	p->tty = isatty(STDERR_FILENO);
	p->t0 = aw_monotonic_ns();
}

static void draw_bar(const struct aw_progress *p, size_t done, size_t total,
                     const struct aw_cell *cell)
{
	double elapsed = (double)(aw_monotonic_ns() - p->t0) / 1e9;
	double eta = done ? elapsed / (double)done * (double)(total - done) : 0;
	int width = 30, fill = total ? (int)((double)width * (double)done / (double)total) : width;
	char bar[64];

	memset(bar, '#', (size_t)fill);
	memset(bar + fill, '.', (size_t)(width - fill));
	bar[width] = '\0';
	fprintf(stderr, "\r[%s] %zu/%zu cells  ETA %d:%02d  %-40.40s", bar, done, total,
	        (int)eta / 60, (int)eta % 60, cell && cell->key ? cell->key : "");
	if (done == total)
		fputs("\n", stderr);
}

void aw_progress_cb(void *arg, size_t done, size_t total, const struct aw_cell *cell)
{
	struct aw_progress *p = arg;
	struct aw_plan_info next, it;
	size_t n = 0;

	if (p->tty) {
		draw_bar(p, done, total, cell);
		return;
	}
	if (!p->runner || !aw_runner_plan(p->runner, done, &next) || next.section == p->section)
		return;
	for (size_t i = done; aw_runner_plan(p->runner, i, &it) && it.section == next.section; i++)
		n++;
	p->section = next.section;
	fprintf(stderr, "%s: measuring %s (%zu cells)\n", p->prog, next.section, n);
}
