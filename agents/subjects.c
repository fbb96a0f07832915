/* Building, loading and measuring subject libraries; see subjects.h. The build is the agent
 * owner's own command from the config (never anything the collector sent), hence sh -c. */
#include "subjects.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomwatch/subject.h"
#include "aw/util.h"
#include "proc.h"

#define TAIL_BYTES     2048
#define TAIL_LINES     15
#define SUBJECT_OPS    256
#define SUBJECT_CPUS   4096
#define BUILD_ENV_BASE 5
#if defined(__aarch64__)
#define NOP_BYTES 4
#else
#define NOP_BYTES 1
#endif

/* The last bytes of a log file, for an error message. */
static void log_tail(const char *path, char *out, size_t len)
{
	char buf[TAIL_BYTES + 1];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	off_t size;
	ssize_t n = 0;

	out[0] = '\0';
	if (fd < 0)
		return;
	size = lseek(fd, 0, SEEK_END);
	if (size > 0 && lseek(fd, size > TAIL_BYTES ? size - TAIL_BYTES : 0, SEEK_SET) >= 0) {
		do {
			n = read(fd, buf, TAIL_BYTES);
		} while (n < 0 && errno == EINTR);
	}
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	snprintf(out, len, "%s", aw_text_tail(buf, (size_t)n, TAIL_LINES, TAIL_BYTES));
	for (size_t l = strlen(out); l && out[l - 1] == '\n'; l--)
		out[l - 1] = '\0';
}

unsigned aw_subject_layout_shift(unsigned k)
{
	return 40 * k % 64;
}

int aw_subject_build(const struct aw_agent_subject *s, const char *project, const char *commit,
                     const char *ref, int layout, const char *log_path, volatile int *stop,
                     char **err)
{
	const char *argv[] = {"/bin/sh", "-c", s->build, NULL};
	const char **env = NULL;
	char *vars[BUILD_ENV_BASE] = {NULL}, tail[TAIL_BYTES + 1];
	struct aw_proc proc = {0};
	int fd = -1, code = 0, rc = 0;

	if (!s->build)
		return 0;
	vars[0] = aw_asprintf("ATOMWATCH_PROJECT=%s", project ? project : "");
	vars[1] = aw_asprintf("ATOMWATCH_COMMIT=%s", commit ? commit : "");
	vars[2] = aw_asprintf("ATOMWATCH_REF=%s", ref ? ref : "");
	if (layout < 0) {
		vars[3] = aw_asprintf("ATOMWATCH_LAYOUT=");
		vars[4] = aw_asprintf("ATOMWATCH_LAYOUT_CFLAGS=");
	} else {
		/* the shift in NOPs before each function's entry, none of them executed: one byte
		 * each on x86, four on arm64 (the shifts are multiples of 8) */
		vars[3] = aw_asprintf("ATOMWATCH_LAYOUT=%d", layout);
		vars[4] = aw_asprintf("ATOMWATCH_LAYOUT_CFLAGS=-falign-functions=64 "
		                      "-fpatchable-function-entry=%u,%u",
		                      aw_subject_layout_shift((unsigned)layout) / NOP_BYTES,
		                      aw_subject_layout_shift((unsigned)layout) / NOP_BYTES);
	}
	env = calloc(BUILD_ENV_BASE + s->n_env, sizeof(*env));
	for (size_t i = 0; i < BUILD_ENV_BASE; i++)
		if (!vars[i])
			rc = -ENOMEM;
	if (rc || !env) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	/* The configured env first, ours last: ATOMWATCH_* cannot be overridden by mistake. */
	for (size_t i = 0; i < s->n_env; i++)
		env[i] = s->env[i];
	for (size_t i = 0; i < BUILD_ENV_BASE; i++)
		env[s->n_env + i] = vars[i];
	fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0) {
		rc = aw_errorf(err, -errno, "subject '%s': cannot create the build log '%s': %s",
		               s->name, log_path, strerror(errno));
		goto out;
	}
	dprintf(fd, "# atomwatch-agent: subject '%s' at %s (%s) in %s\n$ %s\n", s->name,
	        commit ? commit : "-", ref ? ref : "-", s->dir, s->build);
	proc.argv = argv;
	proc.env = env;
	proc.n_env = BUILD_ENV_BASE + s->n_env;
	proc.dir = s->dir;
	proc.log_fd = fd;
	proc.timeout_ms = s->build_timeout_ms;
	proc.stop = stop;
	rc = aw_proc_run(&proc, &code, err);
	if (rc == -EINTR)
		goto out;
	(void)fsync(fd); /* the log is a help, not a result: no error if it fails */
	if (rc || code) {
		log_tail(log_path, tail, sizeof(tail));
		if (rc)
			rc = aw_errorf(
			    err, rc, "subject '%s': the build %s; the last lines of %s:\n%s",
			    s->name,
			    rc == -ETIMEDOUT ? "ran out of time and was killed" : "could not run",
			    log_path, tail);
		else
			rc = aw_errorf(err, -EIO,
			               "subject '%s': the build failed (exit status %d); the last "
			               "lines of %s:\n%s",
			               s->name, code, log_path, tail);
	}
out:
	if (fd >= 0)
		close(fd);
	for (size_t i = 0; i < BUILD_ENV_BASE; i++)
		free(vars[i]);
	free(env);
	return rc;
}

/* dlsym() returns an object pointer; a union converts it to the function pointer without a
 * cast that ISO C does not define. */
static atomwatch_subject_fn lookup(void *handle)
{
	union {
		void *object;
		atomwatch_subject_fn fn;
	} u;

	u.object = dlsym(handle, ATOMWATCH_SUBJECT_SYMBOL);
	return u.fn;
}

/* Checks the description's names: present, valid, unique. Returns the op and reader counts or
 * -EINVAL with *err. */
static int check_names(const struct aw_agent_subject *s, const struct atomwatch_subject *d,
                       size_t *n_ops, size_t *n_readers, char **err)
{
	size_t i, j;

	for (i = 0; d->ops && d->ops[i].name; i++) {
		if (i >= SUBJECT_OPS)
			return aw_errorf(err, -EINVAL, "subject '%s': more than %d ops", s->name,
			                 SUBJECT_OPS);
		if (!aw_valid_name(d->ops[i].name) || !d->ops[i].op)
			return aw_errorf(err, -EINVAL,
			                 "subject '%s': op %zu has a bad name or no function "
			                 "(names: 1 to 64 characters from [A-Za-z0-9._-])",
			                 s->name, i);
		for (j = 0; j < i; j++)
			if (!strcmp(d->ops[j].name, d->ops[i].name))
				return aw_errorf(err, -EINVAL,
				                 "subject '%s': op '%s' appears twice", s->name,
				                 d->ops[i].name);
	}
	*n_ops = i;
	for (i = 0; d->readers && d->readers[i].name; i++) {
		if (i >= SUBJECT_OPS)
			return aw_errorf(err, -EINVAL, "subject '%s': more than %d readers",
			                 s->name, SUBJECT_OPS);
		if (!aw_valid_name(d->readers[i].name) || !d->readers[i].lock ||
		    !d->readers[i].unlock)
			return aw_errorf(
			    err, -EINVAL,
			    "subject '%s': reader %zu has a bad name or lacks lock/unlock", s->name,
			    i);
		for (j = 0; j < i; j++)
			if (!strcmp(d->readers[j].name, d->readers[i].name))
				return aw_errorf(err, -EINVAL,
				                 "subject '%s': reader '%s' appears twice", s->name,
				                 d->readers[i].name);
	}
	*n_readers = i;
	if (!*n_ops && !*n_readers)
		return aw_errorf(err, -EINVAL, "subject '%s': the library exports no ops", s->name);
	return 0;
}

int aw_subject_open(const struct aw_agent_subject *s, const char *library,
                    struct aw_subject_lib *lib, char **err)
{
	atomwatch_subject_fn fn;
	int rc;

	memset(lib, 0, sizeof(*lib));
	lib->handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
	if (!lib->handle)
		return aw_errorf(err, -ENOENT, "subject '%s': cannot load '%s': %s", s->name,
		                 library, dlerror());
	fn = lookup(lib->handle);
	if (!fn) {
		rc = aw_errorf(err, -ENOENT, "subject '%s': '%s' does not export %s()", s->name,
		               library, ATOMWATCH_SUBJECT_SYMBOL);
		goto fail;
	}
	lib->d = fn();
	if (!lib->d || lib->d->abi != ATOMWATCH_SUBJECT_ABI) {
		rc = aw_errorf(err, -EPROTO,
		               "subject '%s': '%s' speaks subject ABI %u; this agent speaks %d",
		               s->name, library, lib->d ? lib->d->abi : 0, ATOMWATCH_SUBJECT_ABI);
		goto fail;
	}
	rc = check_names(s, lib->d, &lib->n_ops, &lib->n_readers, err);
	if (rc)
		goto fail;
	return 0;
fail:
	aw_subject_close(lib);
	return rc;
}

void aw_subject_close(struct aw_subject_lib *lib)
{
	if (lib->handle)
		dlclose(lib->handle);
	memset(lib, 0, sizeof(*lib));
}

int aw_subject_cpus(struct aw_runner *r, const struct aw_agent_subject *s, const char *selection,
                    int **cpus, char **err)
{
	char *why = NULL;
	int n;

	if (!selection)
		selection = s->cpus ? s->cpus : "first-per-type";
	*cpus = calloc(SUBJECT_CPUS, sizeof(**cpus));
	if (!*cpus)
		return aw_errorf(err, -ENOMEM, "out of memory");
	n = aw_runner_cpus(r, selection, *cpus, SUBJECT_CPUS, &why);
	if (n < 0) {
		aw_errorf(err, n, "subject '%s': bad cpus '%s': %s", s->name, selection,
		          why ? why : strerror(-n));
		free(why);
		free(*cpus);
		*cpus = NULL;
		return n;
	}
	free(why);
	return n > SUBJECT_CPUS ? SUBJECT_CPUS : n;
}

int aw_subject_measure(struct aw_runner *r, const struct aw_agent_subject *s, struct aw_result *res,
                       struct aw_progress *progress, volatile int *stop, char **err)
{
	const struct atomwatch_subject *d;
	struct aw_subject_lib lib;
	size_t n_ops = 0, n_readers = 0, total, done = 0;
	int *cpus = NULL, n_cpus, rc = 0;

	rc = aw_subject_open(s, s->library, &lib, err);
	if (rc)
		return rc;
	d = lib.d;
	n_ops = lib.n_ops;
	n_readers = lib.n_readers;
	n_cpus = aw_subject_cpus(r, s, NULL, &cpus, err);
	if (n_cpus < 0) {
		rc = n_cpus;
		goto out;
	}
	total = (size_t)n_cpus * (n_ops + n_readers);
	for (int ci = 0; ci < n_cpus && !rc; ci++) {
		for (size_t i = 0; i < n_ops + n_readers && !rc; i++) {
			bool is_op = i < n_ops;
			struct aw_cell *c;

			if (stop && *stop) {
				rc = aw_errorf(err, -EINTR,
				               "interrupted while measuring subject '%s'", s->name);
				break;
			}
			c = aw_result_add_cell(res);
			if (!c || aw_set_str(&c->subject, s->name) ||
			    aw_set_str(&c->op, is_op ? d->ops[i].name : s->name) ||
			    aw_set_str(&c->reader, is_op ? NULL : d->readers[i - n_ops].name)) {
				rc = aw_errorf(err, -ENOMEM, "out of memory");
				break;
			}
			c->cpu = cpus[ci];
			if (aw_cell_make_key(c)) {
				rc = aw_errorf(err, -ENOMEM, "out of memory");
				break;
			}
			if (!aw_runner_selected(r, c->key)) {
				/* a confirmation run re-measures only its suspects */
				aw_cell_release(c);
				res->n_cells--;
				continue;
			}
			if (is_op)
				rc = aw_runner_measure_call(r, d->ops[i].op, NULL, NULL, c);
			else
				rc = aw_runner_measure_call(r, NULL, d->readers[i - n_ops].lock,
				                            d->readers[i - n_ops].unlock, c);
			if (rc) {
				aw_errorf(err, rc, "subject '%s': cannot measure '%s': %s", s->name,
				          c->key, strerror(-rc));
				break;
			}
			if (progress)
				aw_progress_cb(progress, ++done, total, c);
		}
	}
out:
	free(cpus);
	aw_subject_close(&lib);
	return rc;
}
