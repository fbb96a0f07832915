/* The spool: result documents wait on disk until the collector has them. A document is written
 * (temp file, fsync, rename, directory fsync) before its first upload attempt and removed only
 * after a 2xx; one the collector refuses for good moves to rejected/ beside a .error file with
 * the reply. Layout: DIR/result-<run_id>.json, DIR/rejected/, DIR/logs/ (build logs),
 * DIR/state.json (the daemon's memory). */
#ifndef AW_AGENT_SPOOL_H
#define AW_AGENT_SPOOL_H

#include <stddef.h>

#define AW_SPOOL_DOC_LIMIT (256u << 20) /* the largest document the spool reads back */

struct aw_spool {
	char *dir;
	char *rejected_dir;
	char *log_dir;
};

/* Creates the directories when missing (mode 0750) and checks that `dir` is writable. Returns 0
 * or a negative errno with *err naming the directory. Release with aw_spool_close(). */
int aw_spool_open(struct aw_spool *s, const char *dir, char **err);
void aw_spool_close(struct aw_spool *s);

/* Stores a document as result-<run_id>.json, durably. Returns 0 with *path (caller frees, may
 * be NULL) or a negative errno with *err. */
int aw_spool_put(struct aw_spool *s, const char *run_id, const char *text, size_t len, char **path,
                 char **err);

/* The waiting documents, oldest first (paths, caller frees with aw_spool_list_free()). Temp
 * files left by a crash are ignored (and removed once older than an hour). Returns 0 or a
 * negative errno with *err. */
int aw_spool_list(struct aw_spool *s, char ***paths, size_t *n, char **err);
void aw_spool_list_free(char ***paths, size_t *n);

/* Removes a document after the collector acknowledged it (already gone is fine). Returns 0 or
 * a negative errno with *err. */
int aw_spool_remove(struct aw_spool *s, const char *path, char **err);

/* Moves a refused document to rejected/, with `why` (the reply) in rejected/<name>.error
 * written first. Returns 0 or a negative errno with *err. */
int aw_spool_reject(struct aw_spool *s, const char *path, const char *why, size_t len, char **err);

/* The number of documents waiting (0 when the spool cannot be read). */
size_t aw_spool_count(struct aw_spool *s);

#endif
