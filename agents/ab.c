/* Interleaved A/B of a subject; see ab.h. The builds are the agent owner's own commands (as for
 * `run`); the git commands run with fixed arguments, never through a shell. */
#include "ab.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomwatch/runner.h"
#include "aw/ab.h"
#include "aw/log.h"
#include "aw/util.h"
#include "proc.h"
#include "subjects.h"

#define GIT_TIMEOUT_MS UINT64_C(120000)
#define GIT_OUTPUT_MAX 4096

/* One side of the comparison: where it is built and what was loaded. */
struct side {
	const char *name; /* "base" or "head" */
	const char *commit;
	char *tree;    /* the worktree, or NULL when building in place */
	char *dir;     /* the build's working directory */
	char *library; /* the library to load (a copy when building in place) */
	char *log_path;
	double build_s;
	struct aw_subject_lib lib;
};

struct ab_run {
	struct aw_agent *a;
	const struct aw_agent_ab *ab;
	const struct aw_agent_subject *s;
	char *work;     /* spool/ab/<id>: worktrees and library copies */
	char *toplevel; /* the subject's git repository, or NULL */
	char *rel_dir;  /* the subject's dir inside it ("" or "sub/dir/") */
	char *rel_lib;  /* its library inside it */
	struct side base, head;
	struct aw_subject_lib aa; /* a second load of base's library */
	char *aa_library;
	uint64_t rng;
};

static uint64_t next_random(uint64_t *x)
{
	/* xorshift64*: the order of sides needs no more than unpredictability to the subject */
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * UINT64_C(0x2545f4914f6cdd1d);
}

/* Runs git with `args` in `dir`, output captured into `out` (may be NULL: appended to log_fd
 * when >= 0). Returns 0 with *code, or a negative errno with *err. */
static int git(struct ab_run *x, const char *dir, const char *const *args, struct aw_buf *out,
               int log_fd, int *code, char **err)
{
	const char *argv[12] = {"git", "-C", dir};
	struct aw_proc p = {0};
	size_t n = 3;

	for (size_t i = 0; args[i] && n < 11; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	p.argv = argv;
	p.output = out;
	p.log_fd = out ? -1 : log_fd;
	p.timeout_ms = GIT_TIMEOUT_MS;
	p.stop = x->a->stop;
	return aw_proc_run(&p, code, err);
}

/* The repository holding the subject's dir, or none (*toplevel NULL). */
static int find_repository(struct ab_run *x, char **err)
{
	const char *args[] = {"rev-parse", "--show-toplevel", NULL};
	struct aw_buf out;
	size_t len_top;
	int code = 0, rc;

	aw_buf_init(&out, GIT_OUTPUT_MAX);
	rc = git(x, x->s->dir, args, &out, -1, &code, err);
	if (rc || code || !out.len)
		goto out; /* no git, or not a repository: build in place */
	while (out.len && (out.data[out.len - 1] == '\n' || out.data[out.len - 1] == '\r'))
		out.data[--out.len] = '\0';
	x->toplevel = realpath(out.data, NULL);
	if (!x->toplevel)
		goto out;
	len_top = strlen(x->toplevel);
	/* dir and library as paths inside the repository, so that each worktree has its own */
	if (strncmp(x->s->dir, x->toplevel, len_top) ||
	    (x->s->dir[len_top] && x->s->dir[len_top] != '/') ||
	    strncmp(x->s->library, x->toplevel, len_top) || x->s->library[len_top] != '/') {
		rc = aw_errorf(err, -EINVAL,
		               "subject '%s': its library '%s' is not inside its repository '%s', "
		               "so the two commits cannot be built apart",
		               x->s->name, x->s->library, x->toplevel);
		goto out;
	}
	x->rel_dir = aw_asprintf("%s", x->s->dir[len_top] ? x->s->dir + len_top + 1 : "");
	x->rel_lib = aw_asprintf("%s", x->s->library + len_top + 1);
	if (!x->rel_dir || !x->rel_lib)
		rc = aw_errorf(err, -ENOMEM, "out of memory");
out:
	aw_buf_release(&out);
	return rc;
}

/* The last lines of a log, for an error message (what aw_subject_build() says of a build). */
static char *log_tail(const char *path)
{
	char *text = NULL, *why = NULL, *tail;
	size_t len = 0;

	if (aw_read_file(path, 1u << 20, &text, &len, &why)) {
		free(why);
		return aw_asprintf("(the log cannot be read)");
	}
	tail = aw_asprintf("%s", aw_text_tail(text, len, 15, 2048));
	free(text);
	return tail;
}

/* Checks out the side's commit in its own worktree. */
static int checkout(struct ab_run *x, struct side *sd, char **err)
{
	char *spec = aw_asprintf("%s^{commit}", sd->commit), *tail;
	const char *verify[] = {"rev-parse", "--verify", "--quiet", spec, NULL};
	const char *add[] = {"worktree", "add", "--detach", "--force", sd->tree, sd->commit, NULL};
	int fd = -1, code = 0, rc;

	if (!spec)
		return aw_errorf(err, -ENOMEM, "out of memory");
	fd = open(sd->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0) {
		rc = aw_errorf(err, -errno, "cannot create the build log '%s': %s", sd->log_path,
		               strerror(errno));
		goto out;
	}
	dprintf(fd, "# atomwatch-agent ab: %s %s in %s\n$ git worktree add --detach %s %s\n",
	        sd->name, sd->commit, x->toplevel, sd->tree, sd->commit);
	rc = git(x, x->toplevel, verify, NULL, fd, &code, err);
	if (!rc && !code)
		rc = git(x, x->toplevel, add, NULL, fd, &code, err);
	if (rc)
		goto out;
	if (code) {
		close(fd);
		fd = -1;
		tail = log_tail(sd->log_path);
		rc = aw_errorf(err, -EIO,
		               "subject '%s': cannot check out the %s commit %s in %s; the last "
		               "lines of %s:\n%s",
		               x->s->name, sd->name, sd->commit, x->toplevel, sd->log_path,
		               tail ? tail : "");
		free(tail);
	}
out:
	if (fd >= 0)
		close(fd);
	free(spec);
	return rc;
}

/* Copies a built library aside so that the next build in place cannot change it and each
 * side (and the A/A second load) is dlopened from its own path. */
static int copy_file(const char *from, const char *to, char **err)
{
	char *data = NULL, *why = NULL;
	size_t len = 0;
	int rc = aw_read_file(from, 1u << 30, &data, &len, &why);

	if (rc) {
		rc = aw_errorf(err, rc, "%s", why ? why : "cannot read the library");
		free(why);
		return rc;
	}
	rc = aw_write_file_atomic(to, data, len, err);
	free(data);
	return rc;
}

static int build_side(struct ab_run *x, struct side *sd, char **err)
{
	struct aw_agent_subject s = *x->s;
	uint64_t t0;
	char *why = NULL;
	int rc;

	sd->log_path = aw_asprintf("%s/%s-ab-%s-%.12s.log", x->a->spool.log_dir, x->s->name,
	                           sd->name, sd->commit);
	if (x->toplevel) {
		sd->tree = aw_asprintf("%s/%s", x->work, sd->name);
		sd->dir = aw_asprintf("%s/%s", sd->tree ? sd->tree : "", x->rel_dir);
		sd->library = aw_asprintf("%s/%s", sd->tree ? sd->tree : "", x->rel_lib);
	} else {
		sd->dir = aw_asprintf("%s", x->s->dir);
		sd->library = aw_asprintf("%s/%s.so", x->work, sd->name);
	}
	if (!sd->log_path || !sd->dir || !sd->library || (x->toplevel && !sd->tree))
		return aw_errorf(err, -ENOMEM, "out of memory");
	if (x->toplevel) {
		rc = checkout(x, sd, err);
		if (rc)
			return rc;
	}
	s.dir = sd->dir;
	s.library = sd->library;
	if (x->s->build)
		aw_info("building the %s (%.12s) of subject '%s' (log: %s)", sd->name, sd->commit,
		        x->s->name, sd->log_path);
	t0 = aw_monotonic_ns();
	rc = aw_subject_build(&s, x->ab->project, sd->commit, x->ab->ref, sd->log_path, x->a->stop,
	                      &why);
	sd->build_s = (double)(aw_monotonic_ns() - t0) / 1e9;
	if (rc) {
		rc = aw_errorf(err, rc, "the %s commit %s: %s", sd->name, sd->commit,
		               why ? why : "the build failed");
		free(why);
		return rc;
	}
	if (!x->toplevel) {
		rc = copy_file(x->s->library, sd->library, err);
		if (rc)
			return rc;
	}
	return 0;
}

static void remove_worktree(struct ab_run *x, struct side *sd)
{
	const char *args[] = {"worktree", "remove", "--force", sd->tree, NULL};
	char *err = NULL;
	int code = 0;

	if (!sd->tree || access(sd->tree, F_OK))
		return;
	if (git(x, x->toplevel, args, NULL, -1, &code, &err) || code)
		aw_warn("cannot remove the worktree %s (git worktree prune removes it later)",
		        sd->tree);
	free(err);
}

static void side_release(struct ab_run *x, struct side *sd)
{
	aw_subject_close(&sd->lib);
	remove_worktree(x, sd);
	if (!x->toplevel && sd->library)
		unlink(sd->library);
	free(sd->tree);
	free(sd->dir);
	free(sd->library);
	free(sd->log_path);
}

/* One entry of a side's description: an op (index < n_ops) or a reader. */
struct entry {
	const char *name;
	void (*op)(uint64_t *counter);
	void (*lock)(void), (*unlock)(void);
};

static bool find_entry(const struct aw_subject_lib *lib, bool reader, const char *name,
                       struct entry *e)
{
	if (!reader) {
		for (size_t i = 0; i < lib->n_ops; i++)
			if (!strcmp(lib->d->ops[i].name, name)) {
				*e = (struct entry){name, lib->d->ops[i].op, NULL, NULL};
				return true;
			}
		return false;
	}
	for (size_t i = 0; i < lib->n_readers; i++)
		if (!strcmp(lib->d->readers[i].name, name)) {
			*e = (struct entry){name, NULL, lib->d->readers[i].lock,
			                    lib->d->readers[i].unlock};
			return true;
		}
	return false;
}

/* Measures one side once: the runner's normal batch set for the cell. Returns 0 with the
 * median and the reference kernel's value, 1 with *reason when the cell failed, or a negative
 * errno. */
static int measure_once(struct aw_runner *r, const struct entry *e, int cpu, double *p50,
                        double *ref, char **reason)
{
	struct aw_cell c;
	int rc;

	memset(&c, 0, sizeof(c));
	c.cpu = cpu;
	c.reference_ns = NAN;
	rc = aw_runner_measure_call(r, e->op, e->lock, e->unlock, &c);
	if (!rc && c.status != AW_CELL_OK) {
		*reason = c.reason;
		c.reason = NULL;
		rc = 1;
	} else if (!rc) {
		*p50 = c.p50;
		*ref = c.reference_ns;
	}
	aw_cell_release(&c);
	return rc;
}

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* One round: the two entries measured in a random order. */
static int round_pair(struct ab_run *x, struct aw_runner *r, const struct entry *first_e,
                      const struct entry *second_e, bool swap, int cpu, json_t *rounds,
                      char **reason)
{
	const struct entry *order[2] = {swap ? second_e : first_e, swap ? first_e : second_e};
	double p50[2] = {NAN, NAN}, ref[2] = {NAN, NAN};
	int rc;

	(void)x;
	for (int i = 0; i < 2; i++) {
		rc = measure_once(r, order[i], cpu, &p50[i], &ref[i], reason);
		if (rc)
			return rc;
	}
	/* stored as base, then head (or base's second load), with which went first */
	return json_array_append_new(
	           rounds,
	           json_pack("{s:s, s:o, s:o, s:o, s:o}", "first", swap ? "head" : "base", "base",
	                     num(p50[swap ? 1 : 0]), "head", num(p50[swap ? 0 : 1]), "base_ref",
	                     num(ref[swap ? 1 : 0]), "head_ref", num(ref[swap ? 0 : 1])))
	           ? -ENOMEM
	           : 0;
}

/* Every round of one cell on one CPU: rounds come in ABBA blocks (AB then BA, or BA then AB,
 * at random), each followed by an A/A round in the same pattern, so that drift within a
 * block falls on both sides alike. */
static int measure_cell(struct ab_run *x, struct aw_runner *r, const struct entry *be,
                        const struct entry *he, const struct entry *ae, int cpu, json_t *cell)
{
	json_t *ab = json_array(), *aa = json_array();
	char *reason = NULL;
	bool flip = false, aflip = false;
	int rc = 0;

	if (!ab || !aa) {
		rc = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < x->ab->rounds && !rc; i++) {
		if (x->a->stop && *x->a->stop) {
			rc = -EINTR;
			break;
		}
		if (i % 2 == 0) {
			flip = next_random(&x->rng) & 1;
			aflip = next_random(&x->rng) & 1;
		}
		rc = round_pair(x, r, be, he, flip ^ (i % 2), cpu, ab, &reason);
		if (!rc)
			rc = round_pair(x, r, be, ae, aflip ^ (i % 2), cpu, aa, &reason);
	}
	if (rc == 1) {
		rc = json_object_set_new(cell, "status", json_string("failed")) ||
		             json_object_set_new(cell, "reason", json_string(reason))
		         ? -ENOMEM
		         : 0;
		goto out;
	}
	if (!rc && (json_object_set_new(cell, "status", json_string("ok")) ||
	            json_object_set(cell, "rounds", ab) || json_object_set(cell, "aa_rounds", aa)))
		rc = -ENOMEM;
out:
	free(reason);
	json_decref(ab);
	json_decref(aa);
	return rc;
}

static json_t *side_json(const struct side *sd)
{
	return json_pack("{s:s, s:s, s:s, s:f}", "commit", sd->commit, "library_name",
	                 sd->lib.d && sd->lib.d->name ? sd->lib.d->name : "", "build_log",
	                 sd->log_path, "build_s", sd->build_s);
}

/* The cells of both sides: every op and reader of either, in base's order then head's new
 * ones, on every CPU. */
static int measure_all(struct ab_run *x, struct aw_runner *r, const int *cpus, int n_cpus,
                       json_t *cells)
{
	const struct aw_subject_lib *libs[2] = {&x->base.lib, &x->head.lib};
	size_t total = 0, done = 0;
	int rc = 0;

	/* the union of both sides' entries */
	total = x->base.lib.n_ops + x->base.lib.n_readers;
	for (size_t i = 0; i < x->head.lib.n_ops + x->head.lib.n_readers; i++) {
		bool reader = i >= x->head.lib.n_ops;
		struct entry e;

		total += !find_entry(&x->base.lib, reader,
		                     reader ? x->head.lib.d->readers[i - x->head.lib.n_ops].name
		                            : x->head.lib.d->ops[i].name,
		                     &e);
	}
	for (int ci = 0; ci < n_cpus && !rc; ci++) {
		for (int l = 0; l < 2 && !rc; l++) {
			const struct aw_subject_lib *lib = libs[l];

			for (size_t i = 0; i < lib->n_ops + lib->n_readers && !rc; i++) {
				bool reader = i >= lib->n_ops;
				const char *name = reader ? lib->d->readers[i - lib->n_ops].name
				                          : lib->d->ops[i].name;
				struct entry be, he, ae;
				bool in_base = find_entry(&x->base.lib, reader, name, &be);
				bool in_head = find_entry(&x->head.lib, reader, name, &he);
				struct aw_cell key = {0};
				json_t *cell;

				if (l == 1 && in_base)
					continue; /* measured with base's cells */
				key.cpu = cpus[ci];
				key.contender_cpu = AW_NONE;
				key.c = AW_NONE;
				if (aw_set_str(&key.subject, x->s->name) ||
				    aw_set_str(&key.op, reader ? x->s->name : name) ||
				    aw_set_str(&key.reader, reader ? name : NULL) ||
				    aw_cell_make_key(&key)) {
					aw_cell_release(&key);
					return -ENOMEM;
				}
				cell = json_pack("{s:s, s:s, s:s?, s:i}", "key", key.key, "op",
				                 key.op, "reader", key.reader, "cpu", cpus[ci]);
				aw_cell_release(&key);
				if (!cell || json_array_append_new(cells, cell))
					return -ENOMEM;
				if (!in_base || !in_head) {
					if (json_object_set_new(
					        cell, "status",
					        json_string(in_base ? "missing" : "new")))
						return -ENOMEM;
					continue;
				}
				find_entry(&x->aa, reader, name, &ae);
				rc = measure_cell(x, r, &be, &he, &ae, cpus[ci], cell);
				if (x->a->progress)
					fprintf(stderr, AW_AGENT_PROG ": ab %zu/%zu %s\n", ++done,
					        total * (size_t)n_cpus,
					        json_string_value(json_object_get(cell, "key")));
			}
		}
	}
	return rc;
}

static int check_request(struct aw_agent *a, const struct aw_agent_ab *ab,
                         const struct aw_agent_subject **s, char **err)
{
	char names[512];

	*s = aw_agent_config_subject(a->cfg, ab->subject);
	if (!*s) {
		aw_agent_config_subject_names(a->cfg, names, sizeof(names));
		return aw_errorf(err, -EINVAL,
		                 "unknown subject '%s' (this agent's config defines: %s)",
		                 ab->subject, names);
	}
	if (!strcmp(ab->base, ab->head) && !ab->aa)
		return aw_errorf(err, -EINVAL,
		                 "--base and --head are the same commit %s: nothing to compare "
		                 "(for an A/A measurement of two builds of one commit, add --aa)",
		                 ab->base);
	if (ab->rounds < AW_AB_MIN_ROUNDS || ab->rounds > AW_AB_MAX_ROUNDS)
		return aw_errorf(err, -EINVAL,
		                 "--rounds %u: at least %d rounds are needed for a 95%% interval "
		                 "(the Wilcoxon signed-rank test cannot reach it with fewer), at "
		                 "most %d",
		                 ab->rounds, AW_AB_MIN_ROUNDS, AW_AB_MAX_ROUNDS);
	return 0;
}

static json_t *new_document(struct ab_run *x, struct aw_runner *r, const char *id,
                            const char *started)
{
	const struct aw_agent_ab *ab = x->ab;

	return json_pack("{s:s, s:s, s:s, s:s?, s:s, s:b, s:s, s:O, s:s?, s:i, s:i, s:s, "
	                 "s:[]}",
	                 "schema", AW_AB_SCHEMA, "ab_id", id, "project", ab->project, "ref",
	                 ab->ref, "subject", x->s->name, "aa", ab->aa, "started_at", started,
	                 "host", aw_runner_host(r), "reference_kernel",
	                 aw_runner_reference_kernel(r), "rounds", (int)ab->rounds, "aa_rounds",
	                 (int)ab->rounds, "agent", AW_AGENT_PROG " " AW_VERSION, "cells");
}

int aw_agent_ab(struct aw_agent *a, const struct aw_agent_ab *ab, json_t **out, char **err)
{
	struct ab_run x = {.a = a, .ab = ab};
	struct aw_runner_opts opts = {0};
	struct aw_runner *r = NULL;
	char id[AW_UUID_LEN + 1], started[AW_TIME_LEN], finished[AW_TIME_LEN];
	json_t *doc = NULL;
	int *cpus = NULL, n_cpus = 0, rc;

	*out = NULL;
	x.base = (struct side){.name = "base", .commit = ab->base};
	x.head = (struct side){.name = "head", .commit = ab->head};
	rc = check_request(a, ab, &x.s, err);
	if (rc)
		return rc;
	aw_agent_runner_opts(a, ab->profile, &opts);
	r = aw_runner_new(&opts, err);
	if (!r)
		return -EINVAL;
	n_cpus = aw_subject_cpus(r, x.s, ab->cpus, &cpus, err);
	if (n_cpus < 0) {
		rc = -EINVAL;
		goto out;
	}
	if (aw_uuid4(id) || aw_random_bytes(&x.rng, sizeof(x.rng))) {
		rc = aw_errorf(err, -EIO, "cannot read random bytes");
		goto out;
	}
	x.rng |= 1;
	aw_time_now(started);
	x.work = aw_asprintf("%s/ab/%s", a->spool.dir, id);
	if (!x.work || aw_make_dirs(x.work, 0750)) {
		rc = aw_errorf(err, -errno, "cannot create '%s': %s", x.work ? x.work : "",
		               strerror(errno));
		goto out;
	}
	rc = find_repository(&x, err);
	if (!rc)
		rc = build_side(&x, &x.base, err);
	if (!rc)
		rc = build_side(&x, &x.head, err);
	if (rc)
		goto out;
	x.aa_library = aw_asprintf("%s/base-aa.so", x.work);
	rc = x.aa_library ? copy_file(x.base.library, x.aa_library, err)
	                  : aw_errorf(err, -ENOMEM, "out of memory");
	if (!rc)
		rc = aw_subject_open(x.s, x.base.library, &x.base.lib, err);
	if (!rc)
		rc = aw_subject_open(x.s, x.head.library, &x.head.lib, err);
	if (!rc)
		rc = aw_subject_open(x.s, x.aa_library, &x.aa, err);
	if (rc)
		goto out;
	doc = new_document(&x, r, id, started);
	if (!doc) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	rc = measure_all(&x, r, cpus, n_cpus, json_object_get(doc, "cells"));
	if (rc == -EINTR) {
		aw_errorf(err, rc, "interrupted while measuring subject '%s'", x.s->name);
		goto out;
	}
	if (rc < 0) {
		aw_errorf(err, rc, "subject '%s': cannot measure: %s", x.s->name, strerror(-rc));
		goto out;
	}
	aw_time_now(finished);
	if (json_object_set_new(doc, "base", side_json(&x.base)) ||
	    json_object_set_new(doc, "head", side_json(&x.head)) ||
	    json_object_set_new(doc, "finished_at", json_string(finished))) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	*out = doc;
	doc = NULL;
out:
	json_decref(doc);
	aw_subject_close(&x.aa);
	if (x.aa_library)
		unlink(x.aa_library);
	side_release(&x, &x.base);
	side_release(&x, &x.head);
	if (x.work)
		rmdir(x.work);
	free(x.work);
	free(x.aa_library);
	free(x.toplevel);
	free(x.rel_dir);
	free(x.rel_lib);
	free(cpus);
	aw_runner_free(&r);
	return rc;
}
