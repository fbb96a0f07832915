/* The collector's offline report commands: `render` does the post-ingest work of one commit on
 * demand (the verdicts, change points and charts the workers make after each upload; the charts
 * are stored in the database too), `export` writes a static copy of the whole site (pages with
 * relative links, charts, icon) that works from a plain file server or file://. */
#ifndef AW_COLLECTOR_EXPORT_H
#define AW_COLLECTOR_EXPORT_H

#include "analysis.h"
#include "reports.h"
#include "store.h"

struct aw_export_stats {
	unsigned hosts, pages;          /* hosts with charts drawn; pages written */
	unsigned drawn, cached, failed; /* charts */
	unsigned fetched;               /* charts taken from the database (export) */
};

/* Judges `commit` (of `project`, NULL: any) on every host that ran it and draws its charts, and
 * each such host's trends, into <data_dir>/charts/, storing each chart in the database. Returns
 * 0, -ENOENT (no run of the commit) or the first failure, with *err; *st counts what was
 * done. */
int aw_export_commit(struct store_conn *c, struct aw_gnuplot *gp, const char *data_dir,
                     const struct aw_analysis_opts *analysis, const char *project,
                     const char *commit, struct aw_export_stats *st, char **err);

/* Writes the site into `out_dir`: index.html, every host's and every commit's page, the
 * compare pages the overview links, favicon.svg, and every chart those pages show (taken from
 * the database, else drawn from the store with `gp`, which may be NULL; cached verdicts are
 * used, none is computed). Returns 0 or the first failure with *err; a chart that cannot be
 * drawn is shown as pending and counted. */
int aw_export_site(struct store_conn *c, struct aw_gnuplot *gp, const char *out_dir,
                   const char *baseline_ref, struct aw_export_stats *st, char **err);

#endif
