/* TEMPORARY, until the analysis lands from main (analysis.c, store_*.c): the few functions of
 * analysis.h and store.h that the render workers and pages call, answering "nothing computed,
 * nothing cached". Delete this file when merging main. */
#include <errno.h>

#include "analysis.h"
#include "store.h"

void aw_analysis_opts_default(struct aw_analysis_opts *o)
{
	const struct aw_detect_opts detect = AW_DETECT_OPTS_DEFAULT;

	o->baseline_ref = "main";
	o->history = 40;
	o->detect = detect;
	o->thresholds = 0;
}

int aw_analysis_after_ingest(struct store_conn *c, const struct aw_analysis_opts *o,
                             const char *project, const char *commit, const char *host,
                             const char *ref, char **err)
{
	(void)c, (void)o, (void)project, (void)commit, (void)host, (void)ref, (void)err;
	return 0;
}

int store_changepoints_list(struct store_conn *c, const char *project, const char *host,
                            const char *ref, const char *cell_key, store_changepoint_cb cb,
                            void *cls)
{
	(void)c, (void)project, (void)host, (void)ref, (void)cell_key, (void)cb, (void)cls;
	return 0;
}

int store_verdict_list(struct store_conn *c, const char *project, const char *commit,
                       const char *host, unsigned limit, store_verdict_cb cb, void *cls)
{
	(void)c, (void)project, (void)commit, (void)host, (void)limit, (void)cb, (void)cls;
	return 0;
}
