/* Building, loading and reading the atomwatch kernel module, and building refscale out of
 * tree; see kmod.h. The module's file formats are runner/kmod/README.md's. */
#include "kmod.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "aw/log.h"
#include "aw/stats.h"
#include "aw/util.h"
#include "proc.h"

/* agents/CMakeLists.txt defines both: the installed sources and the source tree's. */
#ifndef AW_KMOD_SOURCE
#define AW_KMOD_SOURCE "/usr/local/share/atomwatch/kmod"
#endif
#ifndef AW_KMOD_SOURCE_TREE
#define AW_KMOD_SOURCE_TREE ""
#endif

#define DEBUGFS_MAGIC_NR 0x64626720
#define RESULTS_LIMIT    (1u << 20)
#define SAMPLES_LIMIT    (256u << 20)
#define SOURCE_LIMIT     (16u << 20)
#define TAIL_BYTES       2048
#define TAIL_LINES       15
#define KMSG_LINES       6
#define LINE_MAX_LEN     4096

const char *const aw_kmod_prims[] = {
    "this_cpu_inc",        "this_cpu_add",           "this_cpu_add_return", "this_cpu_inc_dec",
    "this_cpu_cmpxchg",    "this_cpu_cmpxchg128",    "atomic_long_inc",     "srcu_read_lock",
    "srcu_read_lock_fast", "srcu_read_lock_nmisafe", "local_irq_save_inc",  "preempt_disable_inc",
};
const size_t aw_kmod_n_prims = sizeof(aw_kmod_prims) / sizeof(aw_kmod_prims[0]);

/* ---- building ---- */

char *aw_kmod_tree(const struct aw_agent_config *cfg)
{
	struct utsname uts;

	if (cfg->kmod_tree)
		return strdup(cfg->kmod_tree);
	if (uname(&uts) < 0)
		return NULL;
	return aw_asprintf("/lib/modules/%s/build", uts.release);
}

static const char *kmod_source(const struct aw_agent_config *cfg)
{
	if (cfg->kmod_source)
		return cfg->kmod_source;
	static const char tree[] = AW_KMOD_SOURCE_TREE;

	if (access(AW_KMOD_SOURCE "/atomwatch.c", R_OK) && tree[0] &&
	    !access(AW_KMOD_SOURCE_TREE "/atomwatch.c", R_OK))
		return AW_KMOD_SOURCE_TREE; /* an agent run from its build tree */
	return AW_KMOD_SOURCE;
}

/* The last lines of a log file, for an error message (empty when unreadable). */
static void log_tail(const char *path, char *out, size_t len)
{
	char *text = NULL, *why = NULL;
	size_t n = 0;

	out[0] = '\0';
	if (!aw_read_file(path, 64u << 20, &text, &n, &why))
		snprintf(out, len, "%s", aw_text_tail(text, n, TAIL_LINES, TAIL_BYTES));
	for (size_t l = strlen(out); l && out[l - 1] == '\n'; l--)
		out[l - 1] = '\0';
	free(text);
	free(why);
}

static int copy_file(const char *from, const char *to, char **err)
{
	char *data = NULL;
	size_t len;
	int rc;

	rc = aw_read_file(from, SOURCE_LIMIT, &data, &len, err);
	if (!rc)
		rc = aw_write_file_atomic(to, data, len, err);
	free(data);
	return rc;
}

struct copy {
	const char *from; /* relative to the source folder */
	const char *to;   /* relative to the build folder */
};

/* Copies the sources into out_dir, writes its Kbuild (when kbuild is not NULL) and runs
 * make -C tree M=out_dir VARS... modules. */
static int build(const struct aw_agent_config *cfg, const char *what, const char *src_dir,
                 const struct copy *copies, size_t n_copies, const char *kbuild, const char *tree,
                 const char *out_dir, const char *log_path, volatile int *stop, char **err)
{
	const char **argv = NULL;
	char *mk = aw_asprintf("%s/Makefile", tree), *m_arg = NULL, *path = NULL, *to = NULL;
	char tail[TAIL_BYTES + 1];
	struct aw_proc proc = {0};
	struct utsname uts;
	size_t argc = 0;
	int fd = -1, code = 0, rc = 0;

	if (!mk) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	if (access(mk, R_OK)) {
		rc = errno == ENOENT ? -ENOENT : -errno;
		if (uname(&uts) < 0)
			snprintf(uts.release, sizeof(uts.release), "$(uname -r)");
		aw_errorf(err, rc,
		          "cannot build %s: no kernel build tree at '%s' (%s); install the running "
		          "kernel's headers (on Debian: apt-get install linux-headers-%s) or set "
		          "kernel.build",
		          what, tree, strerror(-rc), uts.release);
		goto out;
	}
	if (aw_make_dirs(out_dir, 0755)) {
		rc = aw_errorf(err, -errno, "cannot create '%s': %s", out_dir, strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < n_copies; i++) {
		char *why = NULL;

		path = aw_asprintf("%s/%s", src_dir, copies[i].from);
		to = aw_asprintf("%s/%s", out_dir, copies[i].to);
		if (!path || !to) {
			rc = aw_errorf(err, -ENOMEM, "out of memory");
			goto out;
		}
		if (strchr(copies[i].to, '/')) {
			char *dir = strdup(to);

			if (dir)
				*strrchr(dir, '/') = '\0';
			if (!dir || aw_make_dirs(dir, 0755)) {
				rc = aw_errorf(err, dir ? -errno : -ENOMEM, "cannot create '%s'",
				               dir ? dir : to);
				free(dir);
				goto out;
			}
			free(dir);
		}
		rc = copy_file(path, to, &why);
		if (rc) {
			aw_errorf(err, rc, "cannot build %s: %s", what, why);
			free(why);
			goto out;
		}
		aw_freep(&path);
		aw_freep(&to);
	}
	if (kbuild) {
		char *why = NULL;

		to = aw_asprintf("%s/Kbuild", out_dir);
		rc = to ? aw_write_file_atomic(to, kbuild, strlen(kbuild), &why) : -ENOMEM;
		if (rc) {
			aw_errorf(err, rc, "cannot build %s: %s", what,
			          why ? why : "out of memory");
			free(why);
			goto out;
		}
		aw_freep(&to);
	}
	m_arg = aw_asprintf("M=%s", out_dir);
	argv = calloc(6 + cfg->n_kmod_make_vars, sizeof(*argv));
	if (!m_arg || !argv) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	argv[argc++] = cfg->kmod_make;
	argv[argc++] = "-C";
	argv[argc++] = tree;
	argv[argc++] = m_arg;
	for (size_t i = 0; i < cfg->n_kmod_make_vars; i++)
		argv[argc++] = cfg->kmod_make_vars[i];
	argv[argc++] = "modules";
	fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0) {
		rc = aw_errorf(err, -errno, "cannot create the build log '%s': %s", log_path,
		               strerror(errno));
		goto out;
	}
	dprintf(fd, "# atomwatch-agent: building %s against %s\n$", what, tree);
	for (size_t i = 0; i < argc; i++)
		dprintf(fd, " %s", argv[i]);
	dprintf(fd, "\n");
	proc.argv = argv;
	proc.log_fd = fd;
	proc.timeout_ms = cfg->kmod_build_timeout_ms;
	proc.stop = stop;
	rc = aw_proc_run(&proc, &code, err);
	if (rc == -EINTR)
		goto out;
	if (rc || code) {
		log_tail(log_path, tail, sizeof(tail));
		if (rc)
			rc = aw_errorf(
			    err, rc, "cannot build %s: make %s; the last lines of %s:\n%s", what,
			    rc == -ETIMEDOUT ? "ran out of time and was killed" : "could not run",
			    log_path, tail);
		else
			rc = aw_errorf(err, -EIO,
			               "cannot build %s: make failed (exit status %d); the last "
			               "lines of %s:\n%s",
			               what, code, log_path, tail);
	}
out:
	if (fd >= 0)
		close(fd);
	free(argv);
	free(m_arg);
	free(path);
	free(to);
	free(mk);
	return rc;
}

int aw_kmod_build(const struct aw_agent_config *cfg, const char *tree, const char *out_dir,
                  const char *log_path, volatile int *stop, char **err)
{
	static const struct copy files[] = {{"atomwatch.c", "atomwatch.c"}, {"Kbuild", "Kbuild"}};

	return build(cfg, "the atomwatch kernel module", kmod_source(cfg), files, 2, NULL, tree,
	             out_dir, log_path, stop, err);
}

int aw_refscale_build(const struct aw_agent_config *cfg, const char *source, const char *tree,
                      const char *out_dir, const char *log_path, volatile int *stop, char **err)
{
	/* refscale.c includes "rcu.h", torture.c "rcu/rcu.h": both resolve in the build folder */
	static const struct copy files[] = {
	    {"kernel/torture.c", "torture.c"},
	    {"kernel/rcu/refscale.c", "refscale.c"},
	    {"kernel/rcu/rcu.h", "rcu.h"},
	    {"kernel/rcu/rcu.h", "rcu/rcu.h"},
	};

	return build(cfg, "refscale and torture", source, files, 4,
	             "# written by atomwatch-agent: refscale out of tree\nobj-m += torture.o "
	             "refscale.o\n",
	             tree, out_dir, log_path, stop, err);
}

/* ---- loading ---- */

/* What the kernel logged about `name` since the log was opened (at most KMSG_LINES lines). */
static void kmsg_about(int fd, const char *name, char *out, size_t len)
{
	char rec[8192];
	size_t o = 0, lines = 0;

	out[0] = '\0';
	if (fd < 0)
		return;
	for (;;) {
		ssize_t n = read(fd, rec, sizeof(rec) - 1);
		char *line, *save = NULL;

		if (n < 0 && (errno == EINTR || errno == EPIPE))
			continue;
		if (n <= 0)
			break;
		rec[n] = '\0';
		for (line = strtok_r(rec, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char *text = line, *semi = strchr(line, ';');

			if (*line == ' ')
				continue; /* a /dev/kmsg dictionary line */
			if (semi && isdigit((unsigned char)*line))
				text = semi + 1;
			if (!strstr(text, name) || lines >= KMSG_LINES || o + 2 >= len)
				continue;
			o += (size_t)snprintf(out + o, len - o, "%s%s", o ? "; " : "", text);
			lines++;
		}
	}
	if (o >= len)
		out[len - 1] = '\0';
}

static const char *load_hint(int e)
{
	switch (e) {
	case ENOEXEC:
		return " (not a module for this kernel: another architecture or format)";
	case EEXIST:
		return " (a module of that name is loaded already)";
	case EPERM:
		return " (not permitted: not root, or module loading is locked down)";
	case EKEYREJECTED:
	case ENOKEY:
		return " (the kernel wants signed modules; sign it with the kernel's key)";
	case EINVAL:
		return " (its version magic or a parameter does not fit this kernel)";
	default:
		return "";
	}
}

int aw_kmod_load(const char *path, const char *name, const char *params, uint64_t timeout_ms,
                 volatile int *stop, const char *kmsg_path, char **err)
{
	uint64_t deadline = timeout_ms ? aw_monotonic_ns() + timeout_ms * 1000000 : 0;
	int pfd[2] = {-1, -1}, kfd = -1, child_errno = 0, status, rc = 0;
	char logged[1024];
	bool got = false;
	pid_t pid;

	if (kmsg_path) {
		kfd = open(kmsg_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (kfd >= 0)
			lseek(kfd, 0, SEEK_END);
	}
	if (pipe2(pfd, O_CLOEXEC)) {
		rc = aw_errorf(err, -errno, "pipe: %s", strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		rc = aw_errorf(err, -errno, "fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0) {
		/* only async-signal-safe calls here: the agent may have threads */
		int fd = open(path, O_RDONLY | O_CLOEXEC), e = 0;

		if (fd < 0)
			e = errno;
		else if (syscall(SYS_finit_module, fd, params ? params : "", 0))
			e = errno;
		if (write(pfd[1], &e, sizeof(e)) != sizeof(e))
			_exit(2);
		_exit(0);
	}
	close(pfd[1]);
	pfd[1] = -1;
	while (!got) {
		struct pollfd p = {.fd = pfd[0], .events = POLLIN};
		ssize_t n;

		if ((stop && *stop) || (deadline && aw_monotonic_ns() > deadline)) {
			/* the module's init waits killably: this ends it, and it unloads itself */
			kill(pid, SIGKILL);
			rc = stop && *stop ? -EINTR : -ETIMEDOUT;
			break;
		}
		if (poll(&p, 1, 200) <= 0)
			continue;
		n = read(pfd[0], &child_errno, sizeof(child_errno));
		if (n < 0 && errno == EINTR)
			continue;
		if (n != sizeof(child_errno)) {
			rc = aw_errorf(err, -EIO, "loading '%s' ended without an answer", path);
			break;
		}
		got = true;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (rc == -ETIMEDOUT)
		aw_errorf(err, rc, "loading '%s' took longer than %llu s and was killed", path,
		          (unsigned long long)(timeout_ms / 1000));
	else if (rc == -EINTR)
		aw_errorf(err, rc, "interrupted while loading '%s'", path);
	else if (!rc && child_errno) {
		kmsg_about(kfd, name, logged, sizeof(logged));
		rc = aw_errorf(err, -child_errno, "cannot load '%s': %s%s%s%s", path,
		               strerror(child_errno), load_hint(child_errno),
		               *logged ? "; the kernel said: " : "", logged);
	}
out:
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (pfd[1] >= 0)
		close(pfd[1]);
	if (kfd >= 0)
		close(kfd);
	return rc;
}

int aw_kmod_unload(const char *name, char **err)
{
	for (int tries = 0;; tries++) {
		if (!syscall(SYS_delete_module, name, O_NONBLOCK))
			return 0;
		if ((errno == EAGAIN || errno == EBUSY) && tries < 50) {
			aw_sleep_ns(100000000, NULL); /* a reader of its files is just closing */
			continue;
		}
		return aw_errorf(err, -errno, "cannot unload module '%s': %s", name,
		                 strerror(errno));
	}
}

/* ---- the module's files ---- */

struct lines {
	const char *p, *end;
	size_t no;
	char buf[LINE_MAX_LEN];
};

/* The next line into l->buf (without '\n'); false at the end. A line longer than the buffer
 * is cut (and then fails to parse). */
static bool next_line(struct lines *l)
{
	const char *nl;
	size_t n;

	if (l->p >= l->end)
		return false;
	nl = memchr(l->p, '\n', (size_t)(l->end - l->p));
	n = nl ? (size_t)(nl - l->p) : (size_t)(l->end - l->p);
	snprintf(l->buf, sizeof(l->buf), "%.*s", (int)(n < sizeof(l->buf) ? n : sizeof(l->buf) - 1),
	         l->p);
	l->p += n + (nl ? 1 : 0);
	l->no++;
	return true;
}

/* "key=value" in the blank-separated fields of s: copies value into out. */
static bool field(const char *s, const char *key, char *out, size_t len)
{
	size_t k = strlen(key);

	for (const char *p = s; (p = strstr(p, key)); p++) {
		if ((p == s || p[-1] == ' ') && p[k] == '=') {
			size_t n = strcspn(p + k + 1, " ");

			snprintf(out, len, "%.*s", (int)n, p + k + 1);
			return true;
		}
	}
	return false;
}

static bool field_u64(const char *s, const char *key, uint64_t *v)
{
	char buf[32];

	return field(s, key, buf, sizeof(buf)) && !aw_parse_u64(buf, UINT64_MAX, v);
}

static int bad_line(char **err, const char *file, const struct lines *l, const char *why)
{
	return aw_errorf(err, -EPROTO, "the module's %s file, line %zu: %s: '%.120s'", file, l->no,
	                 why, l->buf);
}

/* One cell's block in the samples file: "cell NAME cpu=N batch=B n=N", then n lines. */
struct sblock {
	char name[AW_NAME_MAX + 1];
	int cpu;
	uint64_t batch, n;
	struct lines at; /* positioned before the block's first sample line */
};

struct sindex {
	struct sblock *b;
	size_t n, cap;
};

/* Indexes the blocks of the samples file (one pass; the values are read per cell). */
static int index_samples(const char *text, size_t len, struct sindex *ix, char **err)
{
	struct lines *l = malloc(sizeof(*l));
	int rc = 0;

	if (!l)
		return aw_errorf(err, -ENOMEM, "out of memory");
	*l = (struct lines){.p = text, .end = text + len};
	while (!rc && next_line(l)) {
		struct sblock *b;
		char cpu_s[16], *end;
		long cpu;

		if (strncmp(l->buf, "cell ", 5))
			continue;
		if (aw_array_reserve(&ix->b, ix->n, &ix->cap, sizeof(*ix->b), 64)) {
			rc = aw_errorf(err, -ENOMEM, "out of memory");
			break;
		}
		b = &ix->b[ix->n];
		if (sscanf(l->buf, "cell %64s ", b->name) != 1 ||
		    !field(l->buf, "cpu", cpu_s, sizeof(cpu_s)) ||
		    !field_u64(l->buf, "batch", &b->batch) || !field_u64(l->buf, "n", &b->n) ||
		    !b->batch || !b->n || b->n > 10000000) {
			rc = bad_line(err, "samples", l, "expected 'cell NAME cpu=N batch=B n=N'");
			break;
		}
		cpu = strtol(cpu_s, &end, 10);
		if (*end || cpu < 0 || cpu > 65535) {
			rc = bad_line(err, "samples", l, "bad cpu=");
			break;
		}
		b->cpu = (int)cpu;
		b->at = *l;
		ix->n++;
	}
	free(l);
	return rc;
}

/* The samples of cell (name, cpu): its batch and n timed and empty values per op. Returns 0,
 * -ENOENT when the file has none for it, or -EPROTO/-ENOMEM. */
static int find_samples(const struct sindex *ix, const char *name, int cpu, uint64_t *batch,
                        double **timed, double **empty, size_t *n, char **err)
{
	for (size_t k = 0; k < ix->n; k++) {
		const struct sblock *b = &ix->b[k];
		struct lines *l;
		int rc = 0;

		if (b->cpu != cpu || strcmp(b->name, name))
			continue;
		*batch = b->batch;
		*timed = malloc(b->n * sizeof(**timed));
		*empty = malloc(b->n * sizeof(**empty));
		l = malloc(sizeof(*l));
		if (!*timed || !*empty || !l) {
			free(l);
			return aw_errorf(err, -ENOMEM, "out of memory");
		}
		*l = b->at;
		for (uint64_t i = 0; i < b->n && !rc; i++) {
			unsigned long long e, t;
			char extra;

			if (!next_line(l))
				rc = bad_line(err, "samples", l, "the file ends within a cell");
			else if (sscanf(l->buf, "%llu %llu%c", &e, &t, &extra) != 2)
				rc = bad_line(err, "samples", l, "expected 'EMPTY_NS TIMED_NS'");
			else {
				(*empty)[i] = (double)e / (double)b->batch;
				(*timed)[i] = (double)t / (double)b->batch;
			}
		}
		free(l);
		*n = (size_t)b->n;
		return rc;
	}
	return -ENOENT;
}

static const struct {
	const char *key;
	bool number;
} header_keys[] = {
    {"module", false},      {"release", false}, {"version", false},     {"machine", false},
    {"percpu_ops", false},  {"timer", false},   {"timer_res_ns", true}, {"samples", true},
    {"batch_min_ns", true}, {"cpus", false},    {"wall_ns", true},      {"cells", true},
};

static int header_line(const char *line, json_t *info)
{
	const char *sp = strchr(line, ' ');
	size_t k = sp ? (size_t)(sp - line) : strlen(line);
	const char *v = sp ? sp + 1 : "";
	json_t *val = NULL;

	if (k == 3 && !strncmp(line, "lse", 3)) {
		val = !strcmp(v, "yes")  ? json_true()
		      : !strcmp(v, "no") ? json_false()
		                         : json_null();
		return json_object_set_new(info, "lse", val) ? -ENOMEM : 0;
	}
	for (size_t i = 0; i < sizeof(header_keys) / sizeof(header_keys[0]); i++) {
		uint64_t u;

		if (strlen(header_keys[i].key) != k || strncmp(line, header_keys[i].key, k))
			continue;
		if (header_keys[i].number && !aw_parse_u64(v, UINT64_MAX, &u))
			val = json_integer((json_int_t)u);
		else
			val = json_string(v);
		return !val || json_object_set_new(info, header_keys[i].key, val) ? -ENOMEM : 0;
	}
	return 0; /* a newer module's extra facts: not ours to judge */
}

static int cell_line(struct lines *l, const struct sindex *ix, struct aw_result *res, json_t *info,
                     char **err)
{
	char name[AW_NAME_MAX + 1], status[16], insn[128], calls[256], cpu_s[16];
	double *timed = NULL, *empty = NULL;
	const char *reason;
	struct aw_cell *c;
	json_t *map;
	uint64_t batch = 0;
	size_t n = 0;
	long cpu;
	char *end;
	int rc = 0;

	if (sscanf(l->buf, "cell %64s ", name) != 1 || !aw_valid_name(name) ||
	    !field(l->buf, "cpu", cpu_s, sizeof(cpu_s)) ||
	    !field(l->buf, "status", status, sizeof(status)))
		return bad_line(err, "results", l, "expected 'cell NAME cpu=N status=S ...'");
	cpu = strtol(cpu_s, &end, 10);
	if (*end || cpu < 0 || cpu > 65535)
		return bad_line(err, "results", l, "bad cpu=");
	c = aw_result_add_cell(res);
	if (!c || aw_set_str(&c->op, "kmod") || aw_set_str(&c->kernel, name))
		return aw_errorf(err, -ENOMEM, "out of memory");
	c->cpu = (int)cpu;
	if (aw_cell_make_key(c))
		return aw_errorf(err, -ENOMEM, "out of memory");
	if (field(l->buf, "insn", insn, sizeof(insn)) && strcmp(insn, "unknown")) {
		map = json_object_get(info, "insn");
		if (!map && json_object_set_new(info, "insn", map = json_object()))
			return aw_errorf(err, -ENOMEM, "out of memory");
		if (!json_object_get(map, name) &&
		    json_object_set_new(map, name, json_string(insn)))
			return aw_errorf(err, -ENOMEM, "out of memory");
	}
	if (field(l->buf, "calls", calls, sizeof(calls)) && strcmp(calls, "-")) {
		map = json_object_get(info, "calls");
		if (!map && json_object_set_new(info, "calls", map = json_object()))
			return aw_errorf(err, -ENOMEM, "out of memory");
		if (!json_object_get(map, name) &&
		    json_object_set_new(map, name, json_string(calls)))
			return aw_errorf(err, -ENOMEM, "out of memory");
	}
	reason = strstr(l->buf, " reason=");
	if (!strcmp(status, "ok")) {
		rc = find_samples(ix, name, c->cpu, &batch, &timed, &empty, &n, err);
		if (rc == -ENOENT) {
			c->status = AW_CELL_FAILED;
			rc = aw_set_str(&c->reason, "the module reported no samples for this cell");
		} else if (!rc) {
			rc = aw_cell_set_stats(c, timed, empty, n, batch, NULL, NULL);
			c->status = AW_CELL_OK;
		}
		if (rc == -ENOMEM)
			aw_errorf(err, rc, "out of memory");
	} else if (!strcmp(status, "skipped") || !strcmp(status, "failed")) {
		c->status = status[0] == 's' ? AW_CELL_SKIPPED : AW_CELL_FAILED;
		rc = aw_set_str(&c->reason, reason ? reason + 8 : "the module gave no reason");
		if (rc)
			aw_errorf(err, rc, "out of memory");
	} else {
		rc = bad_line(err, "results", l, "unknown status");
	}
	free(timed);
	free(empty);
	return rc;
}

int aw_kmod_parse(const char *results, size_t results_len, const char *samples, size_t samples_len,
                  struct aw_result *res, json_t *info, char **err)
{
	struct lines *l = malloc(sizeof(*l));
	struct sindex ix = {0};
	bool ended = false;
	int rc = 0;

	if (!l)
		return aw_errorf(err, -ENOMEM, "out of memory");
	*l = (struct lines){.p = results, .end = results + results_len};

	if (!next_line(l) || strcmp(l->buf, "format 1")) {
		rc = aw_errorf(err, -EPROTO,
		               "the module's results are not in format %d (first line '%.60s'): is "
		               "the module of another atomwatch version?",
		               AW_KMOD_FORMAT, l->no ? l->buf : "");
		goto out;
	}
	if (samples_len < 9 || strncmp(samples, "format 1\n", 9)) {
		rc = aw_errorf(err, -EPROTO, "the module's samples are not in format %d",
		               AW_KMOD_FORMAT);
		goto out;
	}
	rc = index_samples(samples, samples_len, &ix, err);
	while (!rc && !ended && next_line(l)) {
		if (!strcmp(l->buf, "end"))
			ended = true;
		else if (!strncmp(l->buf, "cell ", 5))
			rc = cell_line(l, &ix, res, info, err);
		else if (header_line(l->buf, info))
			rc = aw_errorf(err, -ENOMEM, "out of memory");
	}
	if (!rc && !ended)
		rc = aw_errorf(err, -EPROTO, "the module's results end before their 'end' line");
out:
	free(ix.b);
	free(l);
	return rc;
}

/* ---- one run ---- */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Removes a build folder the agent made (never anything else: `dir` comes from mkdtemp). */
static void remove_tree(const char *dir)
{
	if (dir && nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS))
		aw_warn("cannot remove the build folder '%s': %s", dir, strerror(errno));
}

/* A folder of our own under $TMPDIR (or /tmp). Caller frees the name. */
static char *make_temp_dir(const char *what, char **err)
{
	const char *tmp = getenv("TMPDIR");
	char *dir = aw_asprintf("%s/atomwatch-%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", what);

	if (!dir) {
		aw_errorf(err, -ENOMEM, "out of memory");
		return NULL;
	}
	if (!mkdtemp(dir)) {
		aw_errorf(err, -errno, "cannot create a build folder '%s': %s", dir,
		          strerror(errno));
		free(dir);
		return NULL;
	}
	return dir;
}

static char *stamped(const char *log_dir, const char *what, const char *ext)
{
	char stamp[AW_TIME_LEN];

	aw_time_now(stamp);
	for (char *c = stamp; *c; c++)
		if (*c == ':')
			*c = '-';
	return aw_asprintf("%s/%s-%s.%s", log_dir, what, stamp, ext);
}

/* One skipped cell per primitive and CPU (the CPUs the module would have measured). */
static int skip_all(const struct aw_agent_config *cfg, struct aw_runner *runner,
                    struct aw_result *res, const char *reason, char **err)
{
	int cpus[4096], n = 0;
	char *why = NULL;

	if (runner)
		n = aw_runner_cpus(runner, cfg->kmod_cpus ? cfg->kmod_cpus : "all", cpus, 4096,
		                   &why);
	free(why);
	if (n <= 0) {
		n = 1;
		cpus[0] = AW_NONE;
	}
	if (n > 4096)
		n = 4096;
	for (int i = 0; i < n; i++)
		for (size_t p = 0; p < aw_kmod_n_prims; p++) {
			struct aw_cell *c = aw_result_add_cell(res);

			if (!c || aw_set_str(&c->op, "kmod") ||
			    aw_set_str(&c->kernel, aw_kmod_prims[p]))
				return aw_errorf(err, -ENOMEM, "out of memory");
			c->cpu = cpus[i];
			c->status = AW_CELL_SKIPPED;
			if (aw_cell_make_key(c) || aw_set_str(&c->reason, reason))
				return aw_errorf(err, -ENOMEM, "out of memory");
		}
	return 0;
}

/* Mounts debugfs at cfg->debugfs unless it is there already. */
static int ensure_debugfs(const struct aw_agent_config *cfg, char **err)
{
	struct statfs sf;

	if (!statfs(cfg->debugfs, &sf) && sf.f_type == DEBUGFS_MAGIC_NR)
		return 0;
	if (mount("debugfs", cfg->debugfs, "debugfs", 0, NULL))
		return aw_errorf(
		    err, -errno,
		    "debugfs is not mounted at '%s' and cannot be (%s); mount it or set "
		    "kernel.debugfs",
		    cfg->debugfs, strerror(errno));
	aw_info("mounted debugfs at %s", cfg->debugfs);
	return 0;
}

int aw_kmod_run(const struct aw_agent_config *cfg, struct aw_runner *runner, const char *log_dir,
                struct aw_result *res, json_t *info, volatile int *stop, char **err)
{
	char *tree = NULL, *build_dir = NULL, *ko = NULL, *log = NULL, *path = NULL, *keep = NULL;
	char *results = NULL, *samples = NULL, *why = NULL, params[256];
	size_t results_len = 0, samples_len = 0, first = res->n_cells;
	bool loaded = false;
	int rc = 0;

	if (geteuid() != 0) {
		json_object_set_new(info, "module", json_string("skipped: not root"));
		return skip_all(cfg, runner, res,
		                "not root: the atomwatch kernel module must be loaded by root",
		                err);
	}
	if (!access("/sys/module/" AW_KMOD_NAME, F_OK)) {
		json_object_set_new(info, "module", json_string("skipped: already loaded"));
		return skip_all(cfg, runner, res,
		                "the atomwatch module is loaded already (another run?); the agent "
		                "leaves it alone",
		                err);
	}
	if (cfg->kmod_file) {
		ko = strdup(cfg->kmod_file);
		if (!ko) {
			rc = aw_errorf(err, -ENOMEM, "out of memory");
			goto out;
		}
	} else {
		tree = aw_kmod_tree(cfg);
		log = stamped(log_dir, "kmod", "log");
		if (!tree || !log) {
			rc = aw_errorf(err, -ENOMEM, "out of memory");
			goto out;
		}
		build_dir = make_temp_dir("kmod", err);
		if (!build_dir) {
			rc = -EIO;
			goto out;
		}
		aw_info("building the atomwatch kernel module against %s (log: %s)", tree, log);
		rc = aw_kmod_build(cfg, tree, build_dir, log, stop, err);
		if (rc)
			goto out;
		ko = aw_asprintf("%s/atomwatch.ko", build_dir);
		if (!ko) {
			rc = aw_errorf(err, -ENOMEM, "out of memory");
			goto out;
		}
	}
	rc = ensure_debugfs(cfg, err);
	if (rc)
		goto out;
	snprintf(params, sizeof(params), "cpus=%s", cfg->kmod_cpus ? cfg->kmod_cpus : "all");
	if (cfg->kmod_samples)
		snprintf(params + strlen(params), sizeof(params) - strlen(params), " samples=%u",
		         cfg->kmod_samples);
	rc =
	    aw_kmod_load(ko, AW_KMOD_NAME, params, cfg->kmod_timeout_ms, stop, cfg->kmsg_path, err);
	if (rc)
		goto out;
	loaded = true;
	path = aw_asprintf("%s/atomwatch/results", cfg->debugfs);
	rc = path ? aw_read_file(path, RESULTS_LIMIT, &results, &results_len, err) : -ENOMEM;
	if (!rc) {
		free(path);
		path = aw_asprintf("%s/atomwatch/samples", cfg->debugfs);
		rc =
		    path ? aw_read_file(path, SAMPLES_LIMIT, &samples, &samples_len, err) : -ENOMEM;
	}
	if (rc) {
		if (rc == -ENOMEM && !path)
			aw_errorf(err, rc, "out of memory");
		goto out;
	}
	/* the module's own figures stay beside the logs (they also name what it decided) */
	keep = stamped(log_dir, "kmod", "results");
	if (keep && aw_write_file_atomic(keep, results, results_len, &why)) {
		aw_warn("%s", why);
		aw_freep(&keep);
	}
	rc = aw_kmod_unload(AW_KMOD_NAME, err);
	if (rc)
		goto out;
	loaded = false;
	rc = aw_kmod_parse(results, results_len, samples, samples_len, res, info, err);
	if (rc)
		goto out;
	if (json_object_set_new(info, "module",
	                        json_string(cfg->kmod_file ? "prebuilt" : "built")) ||
	    json_object_set_new(info, "module_file", json_string(cfg->kmod_file ? ko : "")) ||
	    (keep && json_object_set_new(info, "results_file", json_string(keep))))
		rc = aw_errorf(err, -ENOMEM, "out of memory");
out:
	if (loaded) {
		/* the run fails: do not leave the module behind */
		if (aw_kmod_unload(AW_KMOD_NAME, &why))
			aw_error("%s", why);
	}
	if (rc) {
		/* nothing half-measured goes into the document */
		for (size_t i = first; i < res->n_cells; i++)
			aw_cell_release(&res->cells[i]);
		res->n_cells = first;
	}
	remove_tree(build_dir);
	free(build_dir);
	free(tree);
	free(ko);
	free(log);
	free(path);
	free(keep);
	free(results);
	free(samples);
	free(why);
	return rc;
}

int aw_kmod_build_all(const struct aw_agent_config *cfg, const char *out_dir, volatile int *stop,
                      char **err)
{
	char *tree = aw_kmod_tree(cfg), *dir = NULL, *log = NULL;
	int rc;

	if (!tree)
		return aw_errorf(err, -ENOMEM, "out of memory");
	if (aw_make_dirs(out_dir, 0755)) {
		rc = aw_errorf(err, -errno, "cannot create '%s': %s", out_dir, strerror(errno));
		free(tree);
		return rc;
	}
	dir = aw_asprintf("%s/atomwatch", out_dir);
	log = aw_asprintf("%s/atomwatch.log", out_dir);
	rc = dir && log ? aw_kmod_build(cfg, tree, dir, log, stop, err)
	                : aw_errorf(err, -ENOMEM, "out of memory");
	if (!rc && cfg->refscale_source) {
		free(dir);
		free(log);
		dir = aw_asprintf("%s/refscale", out_dir);
		log = aw_asprintf("%s/refscale.log", out_dir);
		rc = dir && log
		         ? aw_refscale_build(cfg, cfg->refscale_source, tree, dir, log, stop, err)
		         : aw_errorf(err, -ENOMEM, "out of memory");
	}
	free(tree);
	free(dir);
	free(log);
	return rc;
}
