/* The chart files of the database and a collector's bounded cache of them (chart_cache.h): an
 * index of the cached files (path -> hash, size) in a chained hash table threaded on a list in
 * order of use, files written under a temp name and renamed, and the store's chart calls. */
#include "chart_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aw/buf.h"
#include "aw/log.h"
#include "aw/sha256.h"
#include "aw/util.h"

#define REL_MAX      1100 /* bytes of a path under the data dir */
#define SCAN_DEPTH   16   /* directory levels below charts/ a scan descends */
#define BUCKETS_INIT 1024
#define HOLDS        64 /* locks the charts' directories are spread over */

/* One block per cached file, its path inline: the index lives as long as the process, so it
 * should cost one allocation per file (about 200 bytes with a typical path), not two. */
struct entry {
	struct entry *next_in_bucket;
	struct entry *older, *newer; /* the list in order of use */
	uint64_t size;
	uint64_t mtime;                   /* for the scan's ordering only */
	char hash[AW_SHA256_HEX_LEN + 1]; /* "" when unknown (found by the scan) */
	char rel[];
};

static struct entry *entry_new(const char *rel)
{
	size_t n = strlen(rel) + 1;
	struct entry *e = calloc(1, sizeof(*e) + n);

	if (e)
		memcpy(e->rel, rel, n);
	return e;
}

struct aw_chart_cache {
	pthread_mutex_t lock;
	pthread_mutex_t holds[HOLDS]; /* a chart's files while they change (aw_chart_cache_hold) */
	char *dir;
	uint64_t max_bytes, bytes, files;
	struct entry **buckets;
	size_t n_buckets;
	struct entry *oldest, *newest;
};

/* ---- the index ---- */

/* FNV-1a of the first n bytes of s */
static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static uint64_t hash_rel(const char *rel)
{
	return hash_bytes(rel, strlen(rel));
}

static size_t bucket_of(const struct aw_chart_cache *cc, const char *rel)
{
	return (size_t)(hash_rel(rel) & (cc->n_buckets - 1));
}

static struct entry *find(const struct aw_chart_cache *cc, const char *rel)
{
	for (struct entry *e = cc->buckets[bucket_of(cc, rel)]; e; e = e->next_in_bucket)
		if (!strcmp(e->rel, rel))
			return e;
	return NULL;
}

static void unlink_use(struct aw_chart_cache *cc, struct entry *e)
{
	if (e->older)
		e->older->newer = e->newer;
	else
		cc->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		cc->newest = e->older;
	e->older = e->newer = NULL;
}

static void link_newest(struct aw_chart_cache *cc, struct entry *e)
{
	e->older = cc->newest;
	e->newer = NULL;
	if (cc->newest)
		cc->newest->newer = e;
	else
		cc->oldest = e;
	cc->newest = e;
}

/* Doubles the table when it holds twice as many entries as buckets (a failure to grow only
 * makes chains longer). */
static void maybe_grow(struct aw_chart_cache *cc)
{
	size_t n = cc->n_buckets * 2;
	struct entry **b;

	if (cc->files < 2 * cc->n_buckets || !(b = calloc(n, sizeof(*b))))
		return;
	for (size_t i = 0; i < cc->n_buckets; i++) {
		while (cc->buckets[i]) {
			struct entry *e = cc->buckets[i];
			size_t j = (size_t)(hash_rel(e->rel) & (n - 1));

			cc->buckets[i] = e->next_in_bucket;
			e->next_in_bucket = b[j];
			b[j] = e;
		}
	}
	free(cc->buckets);
	cc->buckets = b;
	cc->n_buckets = n;
}

/* Drops `e` from the index (not its file). */
static void forget(struct aw_chart_cache *cc, struct entry *e)
{
	struct entry **p = &cc->buckets[bucket_of(cc, e->rel)];

	while (*p != e)
		p = &(*p)->next_in_bucket;
	*p = e->next_in_bucket;
	unlink_use(cc, e);
	cc->bytes -= e->size;
	cc->files--;
	free(e);
}

/* The sidecar in which the reports library keeps the hash of an SVG and PNG pair it drew
 * (aw_chart_path() with "hash"); *out is "" for other files. */
static void sidecar_of(const char *path, char *out, size_t size)
{
	size_t n = strlen(path);

	out[0] = '\0';
	if (n > 4 && (!strcmp(path + n - 4, ".svg") || !strcmp(path + n - 4, ".png")) &&
	    n + 2 <= size)
		snprintf(out, size, "%.*s.hash", (int)(n - 4), path);
}

/* Removes <dir>/<rel> and, with `sidecar`, the .hash beside a chart, without following a
 * symbolic link on the way (aw_unlink_beneath()). Returns 0 or a negative errno (-ENOENT
 * when it was not there). */
static int unlink_beneath(const char *dir, const char *rel, bool sidecar)
{
	char side[PATH_MAX];
	int rc = aw_unlink_beneath(dir, rel);

	if (sidecar) {
		sidecar_of(rel, side, sizeof(side));
		if (*side)
			aw_unlink_beneath(dir, side); /* (not there: nothing to distrust) */
	}
	return rc;
}

/* Removes the oldest files until the cache fits, never `keep` (the file just added). */
static void evict(struct aw_chart_cache *cc, const struct entry *keep)
{
	while (cc->max_bytes && cc->bytes > cc->max_bytes && cc->oldest && cc->oldest != keep) {
		struct entry *e = cc->oldest;
		/* the pair is drawn again rather than trusted half gone */
		int rc = unlink_beneath(cc->dir, e->rel, true);

		if (rc < 0 && rc != -ENOENT)
			aw_warn("chart cache: cannot remove '%s' under '%s': %s", e->rel, cc->dir,
			        strerror(-rc));
		forget(cc, e);
	}
}

/* Counts `rel` as cached with `hash` ("" unknown) and `size`, the newest used. Called with the
 * lock held. Returns 0 or -ENOMEM. */
static int record(struct aw_chart_cache *cc, const char *rel, const char *hash, uint64_t size)
{
	struct entry *e = find(cc, rel);

	if (!e) {
		size_t b;

		e = entry_new(rel);
		if (!e)
			return -ENOMEM;
		b = bucket_of(cc, rel);
		e->next_in_bucket = cc->buckets[b];
		cc->buckets[b] = e;
		cc->files++;
		maybe_grow(cc);
	} else {
		unlink_use(cc, e);
		cc->bytes -= e->size;
	}
	snprintf(e->hash, sizeof(e->hash), "%s", hash ? hash : "");
	e->size = size;
	cc->bytes += size;
	link_newest(cc, e);
	evict(cc, e);
	return 0;
}

/* ---- files ---- */

static const char *content_type(const char *rel)
{
	size_t n = strlen(rel);

	if (n > 4 && !strcmp(rel + n - 4, ".svg"))
		return "image/svg+xml";
	if (n > 4 && !strcmp(rel + n - 4, ".png"))
		return "image/png";
	return "application/json";
}

int aw_chart_read_file(const char *dir, const char *rel, char **data, size_t *len)
{
	return aw_read_beneath(dir, rel, AW_CHART_FILE_MAX, data, len);
}

/* ---- the database ---- */

struct db_copy {
	char hash[AW_SHA256_HEX_LEN + 1];
	size_t len;
	char *data; /* with the data only */
	int rc;
};

static int on_chart(const struct store_chart *ch, void *cls)
{
	struct db_copy *d = cls;

	snprintf(d->hash, sizeof(d->hash), "%s", ch->hash);
	d->len = ch->len;
	if (ch->data) {
		d->data = malloc(ch->len ? ch->len : 1);
		if (!d->data)
			return d->rc = -ENOMEM;
		memcpy(d->data, ch->data, ch->len);
	}
	return 0;
}

int aw_chart_fetch(struct store_conn *c, const char *rel, const char *dir, char **err)
{
	struct db_copy d = {.rc = 0};
	int rc = store_chart_get(c, rel, on_chart, &d);

	if (rc == -ENOENT)
		return rc;
	if (rc)
		return aw_errorf(err, rc, "cannot read the chart '%s': %s", rel, strerror(-rc));
	rc = aw_write_beneath(dir, rel, d.data, d.len, true, err);
	free(d.data);
	return rc;
}

/* ---- the cache ---- */

struct scan {
	struct aw_chart_cache *cc;
	struct entry **found;
	size_t n, cap;
	int rc;
};

static bool cached_name(const char *name)
{
	size_t n = strlen(name);

	return name[0] != '.' &&
	       ((n > 4 && (!strcmp(name + n - 4, ".svg") || !strcmp(name + n - 4, ".png"))) ||
	        (n > 11 && !strcmp(name + n - 11, ".cells.json")));
}

/* Lists the chart files under <dir>/<rel> (a directory), descending at most `depth` levels. */
static void scan_dir(struct scan *s, char *rel, size_t rel_len, int depth)
{
	int fd = aw_open_beneath(s->cc->dir, rel, O_RDONLY | O_DIRECTORY, 0);
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while (!s->rc && (de = readdir(d))) {
		struct stat st;
		size_t n = strlen(de->d_name);

		if (de->d_name[0] == '.' || rel_len + 1 + n >= REL_MAX ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		rel[rel_len] = '/';
		memcpy(rel + rel_len + 1, de->d_name, n + 1);
		if (S_ISDIR(st.st_mode) && depth > 0) {
			scan_dir(s, rel, rel_len + 1 + n, depth - 1);
		} else if (S_ISREG(st.st_mode) && cached_name(de->d_name)) {
			struct entry *e = entry_new(rel);

			if (!e ||
			    aw_array_reserve(&s->found, s->n, &s->cap, sizeof(*s->found), 256)) {
				free(e);
				s->rc = -ENOMEM;
			} else {
				e->size = (uint64_t)st.st_size;
				e->mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000u +
				           (uint64_t)st.st_mtim.tv_nsec;
				s->found[s->n++] = e;
			}
		}
		rel[rel_len] = '\0';
	}
	closedir(d);
}

static int by_mtime(const void *x, const void *y)
{
	const struct entry *a = *(struct entry *const *)x, *b = *(struct entry *const *)y;

	return (a->mtime > b->mtime) - (a->mtime < b->mtime);
}

int aw_chart_cache_new(const char *data_dir, uint64_t max_bytes, bool scan,
                       struct aw_chart_cache **out, char **err)
{
	struct aw_chart_cache *cc = calloc(1, sizeof(*cc));
	struct scan s = {.cc = cc};
	char rel[REL_MAX] = "charts";

	*out = NULL;
	if (!cc)
		return aw_errorf(err, -ENOMEM, "out of memory");
	pthread_mutex_init(&cc->lock, NULL);
	for (int i = 0; i < HOLDS; i++)
		pthread_mutex_init(&cc->holds[i], NULL);
	cc->max_bytes = max_bytes;
	cc->n_buckets = BUCKETS_INIT;
	cc->dir = strdup(data_dir);
	cc->buckets = calloc(cc->n_buckets, sizeof(*cc->buckets));
	if (!cc->dir || !cc->buckets) {
		aw_chart_cache_free(&cc);
		return aw_errorf(err, -ENOMEM, "out of memory");
	}
	if (scan) {
		scan_dir(&s, rel, strlen(rel), SCAN_DEPTH);
		if (s.n)
			qsort(s.found, s.n, sizeof(*s.found), by_mtime);
		for (size_t i = 0; i < s.n; i++) {
			if (!s.rc)
				s.rc = record(cc, s.found[i]->rel, NULL, s.found[i]->size);
			free(s.found[i]);
		}
		free(s.found);
		if (s.rc) {
			aw_chart_cache_free(&cc);
			return aw_errorf(err, s.rc, "cannot list the charts under '%s': %s",
			                 data_dir, strerror(-s.rc));
		}
		if (cc->files)
			aw_info("chart cache: %llu file(s), %.1f MiB in '%s/charts'",
			        (unsigned long long)cc->files, (double)cc->bytes / (1 << 20),
			        data_dir);
	}
	*out = cc;
	return 0;
}

void aw_chart_cache_free(struct aw_chart_cache **ccp)
{
	struct aw_chart_cache *cc = *ccp;

	if (!cc)
		return;
	while (cc->oldest)
		forget(cc, cc->oldest);
	free(cc->buckets);
	free(cc->dir);
	pthread_mutex_destroy(&cc->lock);
	for (int i = 0; i < HOLDS; i++)
		pthread_mutex_destroy(&cc->holds[i]);
	free(cc);
	*ccp = NULL;
}

const char *aw_chart_cache_dir(const struct aw_chart_cache *cc)
{
	return cc->dir;
}

void aw_chart_cache_usage(struct aw_chart_cache *cc, uint64_t *bytes, uint64_t *files)
{
	pthread_mutex_lock(&cc->lock);
	*bytes = cc->bytes;
	*files = cc->files;
	pthread_mutex_unlock(&cc->lock);
}

/* The hash the cache knows for `rel` into out ("" when none), and marks it used. */
static void known_hash(struct aw_chart_cache *cc, const char *rel, char *out, size_t size)
{
	struct entry *e;

	pthread_mutex_lock(&cc->lock);
	e = find(cc, rel);
	snprintf(out, size, "%s", e ? e->hash : "");
	if (e) {
		unlink_use(cc, e);
		link_newest(cc, e);
	}
	pthread_mutex_unlock(&cc->lock);
}

static void remember(struct aw_chart_cache *cc, const char *rel, const char *hash, uint64_t size)
{
	pthread_mutex_lock(&cc->lock);
	if (record(cc, rel, hash, size))
		aw_warn("chart cache: out of memory: '%s' is not counted", rel);
	pthread_mutex_unlock(&cc->lock);
}

int aw_chart_cache_publish(struct aw_chart_cache *cc, struct store_conn *c, const char *rel,
                           const char *hash)
{
	char path[PATH_MAX], known[AW_SHA256_HEX_LEN + 1];
	struct db_copy d = {.rc = 0};
	char *data = NULL;
	size_t len = 0;
	int rc;

	known_hash(cc, rel, known, sizeof(known));
	if (*known && !strcmp(known, hash))
		return 0; /* stored by this collector, or fetched from the database, already */
	if (snprintf(path, sizeof(path), "%s/%s", cc->dir, rel) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	rc = store_chart_stat(c, rel, on_chart, &d);
	if (rc && rc != -ENOENT)
		return rc;
	if (!rc && !strcmp(d.hash, hash)) {
		/* drawn alike by another collector */
		remember(cc, rel, hash, d.len);
		return 0;
	}
	rc = aw_chart_read_file(cc->dir, rel, &data, &len);
	if (rc) {
		aw_warn("chart cache: cannot read '%s' to store it: %s", path, strerror(-rc));
		return rc;
	}
	const struct store_chart ch = {
	    .path = rel, .content_type = content_type(rel), .hash = hash, .data = data, .len = len};

	rc = store_chart_put(c, &ch);
	if (!rc)
		remember(cc, rel, hash, len);
	free(data);
	return rc;
}

/* The lock of the directory of `rel`: a chart's files share one. */
static pthread_mutex_t *hold_of(struct aw_chart_cache *cc, const char *rel)
{
	const char *slash = strrchr(rel, '/');

	return &cc->holds[hash_bytes(rel, slash ? (size_t)(slash - rel) : 0) % HOLDS];
}

void aw_chart_cache_hold(struct aw_chart_cache *cc, const char *rel)
{
	pthread_mutex_lock(hold_of(cc, rel));
}

void aw_chart_cache_unhold(struct aw_chart_cache *cc, const char *rel)
{
	pthread_mutex_unlock(hold_of(cc, rel));
}

bool aw_chart_cache_has(struct aw_chart_cache *cc, struct store_conn *c, const char *rel)
{
	struct db_copy d = {.rc = 0};
	struct stat st;

	if (aw_stat_beneath(cc->dir, rel, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		return true;
	return c && store_chart_stat(c, rel, on_chart, &d) == 0;
}

static int refresh_held(struct aw_chart_cache *cc, struct store_conn *c, const char *rel)
{
	char known[AW_SHA256_HEX_LEN + 1];
	struct db_copy d = {.rc = 0};
	char *err = NULL;
	struct stat st;
	int rc;

	known_hash(cc, rel, known, sizeof(known));
	rc = store_chart_stat(c, rel, on_chart, &d);
	if (rc)
		return 0; /* none there (or no answer): what the cache holds, if anything */
	if (*known && !strcmp(known, d.hash) && aw_stat_beneath(cc->dir, rel, &st) == 0 &&
	    S_ISREG(st.st_mode) && (uint64_t)st.st_size == d.len)
		return 0;
	rc = store_chart_get(c, rel, on_chart, &d);
	if (rc)
		return rc == -ENOENT ? 0 : rc;
	rc = aw_write_beneath(cc->dir, rel, d.data, d.len, false, &err);
	if (!rc) {
		/* the reports library must not take this file for one it drew */
		{
			char side[PATH_MAX];

			sidecar_of(rel, side, sizeof(side));
			if (*side)
				unlink_beneath(cc->dir, side, false);
		}
		remember(cc, rel, d.hash, d.len);
	} else {
		aw_warn("chart cache: %s", err);
	}
	free(err);
	free(d.data);
	return rc;
}

int aw_chart_cache_refresh(struct aw_chart_cache *cc, struct store_conn *c, const char *rel)
{
	int rc;

	if (!c)
		return 0;
	aw_chart_cache_hold(cc, rel);
	rc = refresh_held(cc, c, rel);
	aw_chart_cache_unhold(cc, rel);
	return rc;
}
