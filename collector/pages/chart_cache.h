/* Charts every collector can serve: each chart file a worker draws (SVG, PNG, a compare chart's
 * table) is stored in the database, and each collector keeps the files it served or drew in a
 * bounded cache under its data dir, the oldest used dropped first. A file served from the cache
 * is checked against the database's hash first, so that a chart another collector redrew is
 * fetched again.
 *
 * Paths are relative to the data dir ("charts/commits/<sha>/heatmap.svg"), as aw_chart_path()
 * makes them. Conventions: int functions return 0 or a negative errno (a store error, or the
 * file's); `char **err`, when given, receives a malloc'd message the caller frees. Every
 * function is safe from any thread. */
#ifndef AW_COLLECTOR_CHART_CACHE_H
#define AW_COLLECTOR_CHART_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* Bytes of one chart file read or fetched at most. */
#define AW_CHART_FILE_MAX (32u << 20)

/* Reads the file `rel` under the directory `dir` into *data (malloc'd, caller frees; *len its
 * size) when it is a regular file of at most AW_CHART_FILE_MAX bytes reached without following
 * any symlink, neither a directory on the way nor the file (aw_open_beneath()), and without
 * leaving `dir` (a FIFO planted there does not block). Returns 0, -ENOENT (not a regular
 * file), -ELOOP (a symlink), -EXDEV (outside `dir`), -E2BIG (too large), -ENOMEM or the
 * open/read errno. */
int aw_chart_read_file(const char *dir, const char *rel, char **data, size_t *len);

struct aw_chart_cache;

/* A cache of at most `max_bytes` of chart files (0: no bound) under <data_dir>/charts. With
 * `scan`, the files already there are counted first (the oldest by modification time is dropped
 * first; their hashes are unknown, so each is fetched again once when the database holds it).
 * Returns 0 with *out (free with aw_chart_cache_free()), or a negative errno with *err. */
int aw_chart_cache_new(const char *data_dir, uint64_t max_bytes, bool scan,
                       struct aw_chart_cache **out, char **err);

/* Frees the cache (its files stay); sets *cc to NULL. */
void aw_chart_cache_free(struct aw_chart_cache **cc);

const char *aw_chart_cache_dir(const struct aw_chart_cache *cc);

/* The file at `rel` under the data dir was just drawn, or found unchanged, with `hash` (of the
 * data it was drawn from): stores it in the database unless the database holds it with that
 * hash already, and counts it in the cache. Returns 0, or a store or file error (logged). */
int aw_chart_cache_publish(struct aw_chart_cache *cc, struct store_conn *c, const char *rel,
                           const char *hash);

/* Holds the files of one chart (those of `rel`'s directory, where a chart keeps its SVG, PNG and
 * table) against aw_chart_cache_refresh() while a worker draws and publishes them. Without it,
 * a page asked for between a draw and its publish found the database's copy older than the
 * file, took it for another collector's newer one and wrote it over the new drawing, which was
 * then published under the new hash and served from then on. aw_chart_cache_publish() is
 * called with the hold; each hold is released once, by the thread that took it. */
void aw_chart_cache_hold(struct aw_chart_cache *cc, const char *rel);
void aw_chart_cache_unhold(struct aw_chart_cache *cc, const char *rel);

/* Whether the file at `rel` is in the cache (a regular, non-empty file) or in the database
 * (stat only: nothing is fetched). */
bool aw_chart_cache_has(struct aw_chart_cache *cc, struct store_conn *c, const char *rel);

/* Makes the cached file at `rel` the database's copy, fetching it when the cache has none or an
 * older one; it waits for a draw of that chart that holds it (aw_chart_cache_hold()). When the
 * database has none, or cannot be reached, what the cache holds is left as it is. Returns 0 (the
 * file, if any, may be read), or a negative errno for a file that could not be written (logged). */
int aw_chart_cache_refresh(struct aw_chart_cache *cc, struct store_conn *c, const char *rel);

/* Writes the database's copy of `rel` to <dir>/<rel> (creating directories; for the static
 * export). Returns 0, -ENOENT when the database has none, or another negative errno with
 * *err. */
int aw_chart_fetch(struct store_conn *c, const char *rel, const char *dir, char **err);

/* What the cache holds now. */
void aw_chart_cache_usage(struct aw_chart_cache *cc, uint64_t *bytes, uint64_t *files);

#endif
