/* Ingest throughput of the collector: a libcurl-multi load generator posting realistic
 * 300-cell result documents from N concurrent uploaders (mode "load"), and the raw rate of
 * storing the same documents straight into SQLite through the store with one transaction per
 * document (mode "raw"), and a long history of one host stored straight through the store (mode
 * "fill", for bench/collector/run_history.py). Prints one JSON object of figures;
 * bench/collector/run_ingest.py drives it and writes the table of docs/benchmarks.md. */
#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aw/result.h"
#include "aw/sha256.h"
#include "aw/stats.h"
#include "aw/util.h"
#include "analysis.h"
#include "driver.h"
#include "internal.h"
#include "store.h"

static const char *const ops[] = {"plain",
                                  "llsc",
                                  "stadd",
                                  "ldadd",
                                  "ldadda",
                                  "ldaddl",
                                  "ldaddal",
                                  "prfm_keep_stadd",
                                  "prfm_strm_stadd",
                                  "cas",
                                  "icas",
                                  "swp",
                                  "casp",
                                  "ldxp_stxp",
                                  "c11_relaxed",
                                  "c11_seqcst",
                                  "c11_cas"};
#define N_OPS (sizeof(ops) / sizeof(ops[0]))

static double jitter(unsigned *seed, double lo, double hi)
{
	*seed = *seed * 1103515245u + 12345u;
	return lo + (hi - lo) * ((*seed >> 8) & 0xffff) / 65535.0;
}

static void fill_cell(struct aw_cell *c, const char *op, int cpu, unsigned *seed)
{
	double base = !strcmp(op, "stadd") ? 48.7 : !strcmp(op, "plain") ? 0.9 : 5.1;

	aw_set_str(&c->op, op);
	c->cpu = cpu;
	c->n = 200;
	c->batch = 4096;
	c->p50 = base * jitter(seed, 0.97, 1.03);
	c->min = c->p50 * jitter(seed, 0.9, 0.99);
	c->p95 = c->p50 * jitter(seed, 1.01, 1.2);
	c->p99 = c->p95 * jitter(seed, 1.01, 1.5);
	c->max = c->p99 * jitter(seed, 1.0, 4.0);
	c->mean = (c->p50 + c->p95) / 2;
	c->stddev = c->p50 * 0.03;
	c->ci_lo = c->p50 * 0.995;
	c->ci_hi = c->p50 * 1.005;
	c->baseline_ns = 0.312;
}

/* A realistic document of an aarch64 host: every op on every CPU, readers and a contention
 * grid on CPU 0, cut at `cells`. */
static struct aw_result *make_doc(int cells, int host_index)
{
	struct aw_result *r = aw_result_new();
	unsigned seed = 42;
	char host[32], commit[41];

	if (!r)
		return NULL;
	snprintf(host, sizeof(host), "bench-host-%d", host_index);
	snprintf(commit, sizeof(commit), "%08x%032x", (unsigned)host_index, 7u);
	aw_set_str(&r->project, "linux");
	aw_set_str(&r->commit, commit);
	aw_set_str(&r->ref, "main");
	aw_set_str(&r->matrix_name, "default");
	aw_set_str(&r->matrix_hash, "9a8b7c6d5e4f3a2b");
	aw_set_str(&r->matrix_profile, "full");
	r->matrix_version = 1;
	r->trigger = AW_TRIGGER_CI;
	snprintf(r->started_at, sizeof(r->started_at), "2026-11-29T10:00:00.000000Z");
	snprintf(r->finished_at, sizeof(r->finished_at), "2026-11-29T10:03:12.500000Z");
	r->host = json_pack(
	    "{s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:i, s:b, s:s, s:s}, s:{s:s, s:s, "
	    "s:s, s:f}}",
	    "name", host, "arch", "aarch64", "cpu_model", "Neoverse-V2", "platform_hash",
	    "5f1c2e9a0b7d3c41", "labels", "cloud", "aws", "instance", "c8g.metal-48xl", "stable",
	    "implementer", "0x41", "part", "0xd4f", "cpus", 64, "lse", 1, "compiler", "gcc 12.2.0",
	    "cflags", "-O2", "changing", "kernel", "6.12.0", "governor", "performance", "timer",
	    "cntvct", "timer_hz", 1e9);
	r->meta = json_pack("{s:s}", "agent", "atomwatch-agent 0.1.0");
	for (int cpu = 0; (int)r->n_cells < cells; cpu++) {
		for (size_t i = 0; i < N_OPS && (int)r->n_cells < cells; i++) {
			struct aw_cell *c = aw_result_add_cell(r);

			fill_cell(c, ops[i], cpu, &seed);
			aw_cell_make_key(c);
		}
		for (int k = 0; cpu == 0 && k < 9 && (int)r->n_cells < cells; k++) {
			static const char *const readers[] = {"srcu", "srcu_fast", "srcu_nmisafe"};
			static const char *const rops[] = {"llsc", "stadd", "ldadd"};
			struct aw_cell *c = aw_result_add_cell(r);

			fill_cell(c, rops[k % 3], 0, &seed);
			aw_set_str(&c->reader, readers[k / 3]);
			c->p50 *= 2.1;
			c->p95 *= 2.1;
			c->p99 *= 2.1;
			c->max *= 2.1;
			c->mean *= 2.1;
			c->ci_lo *= 2.1;
			c->ci_hi *= 2.1;
			aw_cell_make_key(c);
		}
		for (int k = 0; cpu == 0 && k < 6 && (int)r->n_cells < cells; k++) {
			struct aw_cell *c = aw_result_add_cell(r);

			fill_cell(c, "stadd", 0, &seed);
			c->contender_cpu = 1;
			c->c = k < 2 ? 10 : k < 4 ? 100 : 1000;
			c->d = k % 2 ? 100 : 0;
			aw_cell_make_key(c);
		}
	}
	/* the family of reference kernels beside every cell, as an agent sends it (their
	 * medians per step on the development VM, docs/benchmarks.md) */
	if (aw_result_set_references(r, AW_REF_ALL)) {
		aw_result_free(&r);
		return NULL;
	}
	for (size_t i = 0; i < r->n_cells; i++) {
		static const double usual[AW_REF_COUNT] = {0.852, 1.146, 5.72, 36.0, 4.23};

		for (int k = 0; k < AW_REF_COUNT; k++)
			r->cells[i].ref_ns[k] = usual[k] * jitter(&seed, 0.95, 1.05);
	}
	return r;
}

/* A distinct, valid lowercase UUID for upload number `n` of uploader `u`. */
static void put_uuid(char *at, unsigned u, unsigned long n)
{
	char id[AW_UUID_LEN + 1];

	snprintf(id, sizeof(id), "%08x-%04x-4%03x-8%03x-%012lx", 0xbe5c0000u | u,
	         (unsigned)getpid() & 0xffff, 0u, 0u, n & 0xffffffffffffUL); /* 12 digits */
	memcpy(at, id, AW_UUID_LEN);
}

struct uploader {
	CURL *easy;
	char *body;
	size_t len, id_at;
	size_t commit_at; /* where the commit is in body; 0: the same commit every time */
	unsigned index;
	unsigned long n;
	uint64_t started;
	struct curl_slist *headers;
};

static size_t discard(char *p, size_t size, size_t n, void *cls)
{
	(void)p;
	(void)cls;
	return size * n;
}

static void arm(struct uploader *up, unsigned long n)
{
	put_uuid(up->body + up->id_at, up->index, n);
	if (up->commit_at) { /* a new commit of its host, as CI uploads each */
		char sha[41];

		snprintf(sha, sizeof(sha), "%08x%032lx", 0xc0000000u | up->index, n);
		memcpy(up->body + up->commit_at, sha, 40);
	}
	up->started = aw_monotonic_ns();
}

/* `fresh`: each upload a commit of its own (else every upload of a host is a run of one
 * commit, which post-ingest merges into one task). */
static int mode_load(const char *url, const char *token, unsigned concurrency, unsigned long count,
                     int cells, int hosts, bool fresh)
{
	struct uploader *ups = calloc(concurrency, sizeof(*ups));
	double *lat = calloc(count, sizeof(*lat));
	unsigned long sent = 0, done = 0, errors = 0, codes[6] = {0};
	char auth[256], *text;
	CURLM *multi = curl_multi_init();
	uint64_t t0, t1;
	int running = 0;

	if (!ups || !lat || !multi)
		return 1;
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
	for (unsigned i = 0; i < concurrency; i++) {
		struct uploader *up = &ups[i];
		struct aw_result *r = make_doc(cells, (int)(i % (unsigned)hosts));
		json_t *doc = aw_result_to_json(r);
		char *at;

		text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(10));
		at = strstr(text, r->run_id);
		up->commit_at = fresh ? (size_t)(strstr(text, r->commit) - text) : 0;
		up->index = i;
		up->body = text;
		up->len = strlen(text);
		up->id_at = (size_t)(at - text);
		up->easy = curl_easy_init();
		up->headers = curl_slist_append(NULL, "Content-Type: application/json");
		up->headers = curl_slist_append(up->headers, auth);
		up->headers = curl_slist_append(up->headers, "Expect:");
		curl_easy_setopt(up->easy, CURLOPT_URL, url);
		curl_easy_setopt(up->easy, CURLOPT_HTTPHEADER, up->headers);
		curl_easy_setopt(up->easy, CURLOPT_POSTFIELDS, up->body);
		curl_easy_setopt(up->easy, CURLOPT_POSTFIELDSIZE, (long)up->len);
		curl_easy_setopt(up->easy, CURLOPT_WRITEFUNCTION, discard);
		curl_easy_setopt(up->easy, CURLOPT_PRIVATE, up);
		curl_easy_setopt(up->easy, CURLOPT_TCP_NODELAY, 1L);
		json_decref(doc);
		aw_result_free(&r);
	}
	t0 = aw_monotonic_ns();
	for (unsigned i = 0; i < concurrency && sent < count; i++) {
		arm(&ups[i], sent++);
		curl_multi_add_handle(multi, ups[i].easy);
	}
	while (done < count) {
		CURLMsg *msg;
		int left;

		curl_multi_perform(multi, &running);
		while ((msg = curl_multi_info_read(multi, &left))) {
			struct uploader *up;
			long code = 0;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&up);
			curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
			if (msg->data.result != CURLE_OK || code != 201) {
				errors++;
				if (errors <= 5)
					fprintf(stderr,
					        "ingest_bench: upload failed: %s, HTTP %ld\n",
					        curl_easy_strerror(msg->data.result), code);
			}
			codes[code / 100 < 6 ? code / 100 : 0]++;
			lat[done++] = (double)(aw_monotonic_ns() - up->started) / 1e6;
			curl_multi_remove_handle(multi, up->easy);
			if (sent < count) {
				arm(up, sent++);
				curl_multi_add_handle(multi, up->easy);
			}
		}
		if (done < count)
			curl_multi_poll(multi, NULL, 0, 100, NULL);
	}
	t1 = aw_monotonic_ns();
	aw_sort_doubles(lat, count);
	printf("{\"mode\":\"load\",\"uploads\":%lu,\"concurrency\":%u,\"cells\":%d,"
	       "\"body_bytes\":%zu,\"seconds\":%.3f,\"uploads_per_s\":%.1f,\"p50_ms\":%.2f,"
	       "\"p99_ms\":%.2f,\"max_ms\":%.2f,\"errors\":%lu,\"http_2xx\":%lu}\n",
	       count, concurrency, cells, ups[0].len, (double)(t1 - t0) / 1e9,
	       (double)count / ((double)(t1 - t0) / 1e9), aw_quantile_sorted(lat, count, 0.5),
	       aw_quantile_sorted(lat, count, 0.99), lat[count - 1], errors, codes[2]);
	for (unsigned i = 0; i < concurrency; i++) {
		curl_easy_cleanup(ups[i].easy);
		curl_slist_free_all(ups[i].headers);
		free(ups[i].body);
	}
	curl_multi_cleanup(multi);
	free(ups);
	free(lat);
	return errors ? 1 : 0;
}

static int mode_raw(const char *db, unsigned long count, int cells, bool sync_full)
{
	struct store_options opt = STORE_OPTIONS_DEFAULT;
	struct aw_result *r = make_doc(cells, 0);
	struct store *s = NULL;
	struct store_conn *c = NULL;
	struct store_put put;
	char *err = NULL, *host_json;
	uint64_t t0, t1;
	int rc;

	opt.sqlite_sync_full = sync_full;
	rc = store_open(db, &opt, &s, &err);
	if (!rc)
		rc = store_connect(s, &c, &err);
	if (!rc)
		rc = store_migrate(c, NULL, NULL, &err);
	if (rc) {
		fprintf(stderr, "ingest_bench: %s\n", err);
		return 1;
	}
	memset(&put, 0, sizeof(put));
	host_json = json_dumps(r->host, JSON_COMPACT | JSON_SORT_KEYS);
	aw_sha256_hex(host_json, strlen(host_json), put.host_hash);
	memset(put.content_hash, 'a', AW_SHA256_HEX_LEN);
	put.host_json = host_json;
	put.result = r;
	aw_time_now(put.received_at);
	t0 = aw_monotonic_ns();
	for (unsigned long i = 0; i < count; i++) {
		put_uuid(r->run_id, 999, i);
		rc = store_put_runs(c, &put, 1);
		if (rc || put.outcome != STORE_CREATED) {
			fprintf(stderr, "ingest_bench: store failed: %d\n", rc);
			return 1;
		}
	}
	t1 = aw_monotonic_ns();
	printf("{\"mode\":\"raw\",\"documents\":%lu,\"cells\":%d,\"synchronous\":\"%s\","
	       "\"seconds\":%.3f,\"documents_per_s\":%.1f}\n",
	       count, cells, sync_full ? "full" : "normal", (double)(t1 - t0) / 1e9,
	       (double)count / ((double)(t1 - t0) / 1e9));
	free(host_json);
	aw_result_free(&r);
	store_disconnect(&c);
	store_close(&s);
	return 0;
}

/* The CPU cost of each step of an upload, single-threaded, on the load generator's document:
 * what bounds the collector's throughput. */
static int mode_stages(const char *db, unsigned long count, int cells)
{
	struct store_options opt = STORE_OPTIONS_DEFAULT;
	struct aw_result *model = make_doc(cells, 0), *r = NULL;
	json_t *doc = aw_result_to_json(model);
	char *text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(10)),
	     hex[AW_SHA256_HEX_LEN + 1];
	size_t len = strlen(text);
	double parse = 0, validate = 0, hash = 0, free_tree = 0, store = 0, fast = 0;
	struct aw_result *fr;
	struct store *s = NULL;
	struct store_conn *c = NULL;
	struct store_put put;
	char *err = NULL, *host_json;
	struct aw_verr verr;
	json_error_t jerr;
	uint64_t t;

	opt.sqlite_sync_full = false;
	if (store_open(db, &opt, &s, &err) || store_connect(s, &c, &err) ||
	    store_migrate(c, NULL, NULL, &err)) {
		fprintf(stderr, "ingest_bench: %s\n", err);
		return 1;
	}
	memset(&put, 0, sizeof(put));
	host_json = json_dumps(model->host, JSON_COMPACT | JSON_SORT_KEYS);
	put.host_json = host_json;
	aw_sha256_hex(host_json, strlen(host_json), put.host_hash);
	aw_time_now(put.received_at);
	json_decref(doc);
	for (unsigned long i = 0; i < count; i++) {
		/* the collector's fast path: the text straight into the model, in place of the
		 * three stages after it (parse, validate, free the tree) */
		t = aw_monotonic_ns();
		fr = aw_result_parse_fast(text, len, NULL);
		fast += (double)(aw_monotonic_ns() - t);
		if (!fr) {
			fprintf(stderr, "ingest_bench: the fast path gave up on the document\n");
			return 1;
		}
		aw_result_free(&fr);
		t = aw_monotonic_ns();
		doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
		parse += (double)(aw_monotonic_ns() - t);
		t = aw_monotonic_ns();
		r = aw_result_from_json(doc, NULL, &verr);
		validate += (double)(aw_monotonic_ns() - t);
		t = aw_monotonic_ns();
		json_decref(doc);
		free_tree += (double)(aw_monotonic_ns() - t);
		if (!r) {
			fprintf(stderr, "ingest_bench: %s: %s\n", verr.field, verr.message);
			return 1;
		}
		put_uuid(r->run_id, 998, i);
		t = aw_monotonic_ns();
		aw_ingest_content_hash(r, put.content_hash);
		hash += (double)(aw_monotonic_ns() - t);
		put.result = r;
		t = aw_monotonic_ns();
		if (store_put_runs(c, &put, 1) || put.outcome != STORE_CREATED) {
			fprintf(stderr, "ingest_bench: store failed\n");
			return 1;
		}
		store += (double)(aw_monotonic_ns() - t);
		aw_result_free(&r);
	}
	(void)hex;
	printf("{\"mode\":\"stages\",\"documents\":%lu,\"cells\":%d,\"body_bytes\":%zu,"
	       "\"parse_ms\":%.3f,\"validate_ms\":%.3f,\"free_tree_ms\":%.3f,\"hash_ms\":%.3f,"
	       "\"store_ms\":%.3f,\"fast_ms\":%.3f}\n",
	       count, cells, len, parse / 1e6 / (double)count, validate / 1e6 / (double)count,
	       free_tree / 1e6 / (double)count, hash / 1e6 / (double)count,
	       store / 1e6 / (double)count, fast / 1e6 / (double)count);
	free(text);
	free(host_json);
	aw_result_free(&model);
	store_disconnect(&c);
	store_close(&s);
	return 0;
}

/* ---- fill: a long history of one host, straight through the store ---- */

#define FILL_BATCH  100                       /* runs per transaction */
#define FILL_T0_US  INT64_C(1704067200000000) /* 2024-01-01T00:00:00Z, unless told */
#define FILL_STEP_S 3600                      /* an hour between commits */

static int64_t fill_t0_us = FILL_T0_US;

/* Every value of r's cells from base's, times a factor near 1 (each cell its own). */
static void jiggle(struct aw_result *r, const struct aw_result *base, unsigned *seed)
{
	for (size_t i = 0; i < r->n_cells; i++) {
		const struct aw_cell *b = &base->cells[i];
		struct aw_cell *c = &r->cells[i];
		double f = jitter(seed, 0.99, 1.01);

		c->min = b->min * f;
		c->p50 = b->p50 * f;
		c->p95 = b->p95 * f;
		c->p99 = b->p99 * f;
		c->max = b->max * f;
		c->mean = b->mean * f;
		c->stddev = b->stddev * f;
		c->ci_lo = b->ci_lo * f;
		c->ci_hi = b->ci_hi * f;
	}
}

static void fill_time(unsigned long i, char *out)
{
	struct timespec ts = {.tv_sec = (time_t)(fill_t0_us / 1000000) + (time_t)i * FILL_STEP_S};

	aw_time_format(&ts, out);
}

static void fill_commit(unsigned long i, char *out)
{
	snprintf(out, 41, "%08x%032lx", 0xf1110000u, i);
}

/* Stores runs [first, first + n) of the history, one commit each, in one transaction. */
static int fill_runs(struct store_conn *c, struct aw_result **docs, const struct aw_result *base,
                     struct store_put *puts, unsigned long first, size_t n, unsigned *seed)
{
	for (size_t k = 0; k < n; k++) {
		struct aw_result *r = docs[k];
		char commit[41], when[AW_TIME_LEN];

		fill_commit(first + k, commit);
		fill_time(first + k, when);
		if (aw_set_str(&r->commit, commit) || aw_set_str(&r->commit_time, when))
			return -ENOMEM;
		snprintf(r->started_at, sizeof(r->started_at), "%s", when);
		snprintf(r->finished_at, sizeof(r->finished_at), "%s", when);
		put_uuid(r->run_id, 0xf11, first + k);
		jiggle(r, base, seed);
		puts[k].result = r;
		aw_sha256_hex(r->run_id, strlen(r->run_id), puts[k].content_hash);
	}
	return store_put_runs(c, puts, n);
}

/* The verdict of the newest commit, computed as post-ingest would, as the text every commit of
 * the history gets (pages read statuses and parse the newest few). */
static int fill_verdicts(struct store_conn *c, unsigned long runs, const char *host)
{
	struct aw_analysis_opts o;
	struct aw_host_verdict v;
	char commit[41], now[AW_TIME_LEN], *err = NULL, *text = NULL;
	json_t *doc = NULL;
	int rc;

	aw_analysis_opts_default(&o);
	fill_commit(runs - 1, commit);
	rc = aw_analysis_host(c, &o, "linux", commit, NULL, host, &v, &err);
	if (rc) {
		fprintf(stderr, "ingest_bench: %s\n", err ? err : "cannot judge");
		free(err);
		return rc;
	}
	doc = aw_host_verdict_json(&v, false);
	text = doc ? json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
	aw_time_now(now);
	rc = text ? c->drv->begin(c, STORE_TX_WRITE) : -ENOMEM;
	for (unsigned long i = 0; !rc && i < runs; i++) {
		struct store_verdict sv = {.project = "linux",
		                           .commit = commit,
		                           .host = host,
		                           .baseline_ref = "main",
		                           .status = aw_verdict_name(v.status),
		                           .json = text,
		                           .computed_at = now,
		                           .order_us =
		                               fill_t0_us + (int64_t)i * FILL_STEP_S * 1000000};

		fill_commit(i, commit);
		rc = store_verdict_put(c, &sv);
		if (!rc && i % 1000 == 999) {
			rc = c->drv->commit(c);
			if (!rc)
				rc = c->drv->begin(c, STORE_TX_WRITE);
		}
	}
	if (!rc)
		rc = c->drv->commit(c);
	else
		c->drv->rollback(c);
	free(text);
	json_decref(doc);
	aw_host_verdict_release(&v);
	return rc;
}

/* `runs` runs of one host on main, a commit each an hour apart from fill_t0_us on (commit_time
 * set), with every
 * commit's verdict cached and no post-ingest task left: what a collector holds after that many
 * uploads, made in seconds. PostgreSQL's tables are analysed after, as autovacuum would. */
static int mode_fill(const char *db, unsigned long runs, int cells)
{
	struct store_options opt = STORE_OPTIONS_DEFAULT;
	struct aw_result *base = make_doc(cells, 0), *docs[FILL_BATCH] = {0};
	struct store_put puts[FILL_BATCH];
	struct store *s = NULL;
	struct store_conn *c = NULL;
	char *err = NULL, *host_json = NULL, host_hash[AW_SHA256_HEX_LEN + 1], now[AW_TIME_LEN];
	unsigned seed = 7;
	uint64_t t0 = aw_monotonic_ns(), t1;
	int rc;

	opt.sqlite_sync_full = false;
	rc = base ? store_open(db, &opt, &s, &err) : -ENOMEM;
	if (!rc)
		rc = store_connect(s, &c, &err);
	if (!rc)
		rc = store_migrate(c, NULL, NULL, &err);
	if (rc) {
		fprintf(stderr, "ingest_bench: %s\n", err ? err : "out of memory");
		return 1;
	}
	host_json = json_dumps(base->host, JSON_COMPACT | JSON_SORT_KEYS);
	aw_sha256_hex(host_json, strlen(host_json), host_hash);
	aw_time_now(now);
	for (size_t k = 0; k < FILL_BATCH && !rc; k++) {
		docs[k] = make_doc(cells, 0);
		memset(&puts[k], 0, sizeof(puts[k]));
		puts[k].host_json = host_json;
		memcpy(puts[k].host_hash, host_hash, sizeof(host_hash));
		memcpy(puts[k].received_at, now, sizeof(now));
		rc = docs[k] ? 0 : -ENOMEM;
	}
	for (unsigned long i = 0; !rc && i < runs; i += FILL_BATCH)
		rc = fill_runs(c, docs, base, puts, i,
		               runs - i < FILL_BATCH ? runs - i : FILL_BATCH, &seed);
	if (!rc && runs)
		rc = fill_verdicts(c, runs, aw_host_name(base->host));
	if (!rc)
		rc = c->drv->exec(c, "DELETE FROM tasks", &err);
	if (!rc && store_kind(s) == STORE_POSTGRES)
		rc = c->drv->exec(c, "ANALYZE", &err);
	if (rc) {
		fprintf(stderr, "ingest_bench: cannot fill: %s\n", err ? err : strerror(-rc));
		return 1;
	}
	t1 = aw_monotonic_ns();
	printf("{\"mode\":\"fill\",\"runs\":%lu,\"cells\":%d,\"host\":\"%s\",\"seconds\":%.3f}\n",
	       runs, cells, aw_host_name(base->host), (double)(t1 - t0) / 1e9);
	for (size_t k = 0; k < FILL_BATCH; k++)
		aw_result_free(&docs[k]);
	free(host_json);
	aw_result_free(&base);
	store_disconnect(&c);
	store_close(&s);
	return 0;
}

/* A command-line count, or exit 2: a typo must not run a bench of 0 uploads. */
static unsigned long arg_count(const char *s)
{
	uint64_t v;

	if (aw_parse_u64(s, INT_MAX, &v)) {
		fprintf(stderr, "ingest_bench: not a count: '%s'\n", s);
		exit(2);
	}
	return (unsigned long)v;
}

int main(int argc, char **argv)
{
	const char *usage = "usage: ingest_bench load URL TOKEN CONCURRENCY COUNT [CELLS [HOSTS "
	                    "[fixed|fresh]]]\n"
	                    "       ingest_bench raw DB_URL COUNT [CELLS [full|normal]]\n"
	                    "       ingest_bench stages SQLITE_URL COUNT [CELLS]\n"
	                    "       ingest_bench fill DB_URL RUNS [CELLS [FIRST_EPOCH_S]]\n";
	int rc;

	if (argc >= 6 && !strcmp(argv[1], "load")) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		rc = mode_load(argv[2], argv[3], (unsigned)arg_count(argv[4]), arg_count(argv[5]),
		               argc > 6 ? (int)arg_count(argv[6]) : 300,
		               argc > 7 ? (int)arg_count(argv[7]) : 16,
		               argc > 8 && !strcmp(argv[8], "fresh"));
		curl_global_cleanup();
		return rc;
	}
	if (argc >= 4 && !strcmp(argv[1], "raw"))
		return mode_raw(argv[2], arg_count(argv[3]),
		                argc > 4 ? (int)arg_count(argv[4]) : 300,
		                argc > 5 ? strcmp(argv[5], "normal") != 0 : true);
	if (argc >= 4 && !strcmp(argv[1], "stages"))
		return mode_stages(argv[2], arg_count(argv[3]),
		                   argc > 4 ? (int)arg_count(argv[4]) : 300);
	if (argc >= 4 && !strcmp(argv[1], "fill")) {
		if (argc > 5)
			fill_t0_us = (int64_t)arg_count(argv[5]) * 1000000;
		return mode_fill(argv[2], arg_count(argv[3]),
		                 argc > 4 ? (int)arg_count(argv[4]) : 30);
	}
	fputs(usage, stderr);
	return 2;
}
