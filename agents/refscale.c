/* The refscale log parser (shared by `import refscale` and the agent's own kernel runs) and
 * the kernel run itself: modprobe, /dev/kmsg, rmmod. See refscale.h and import.h. */
#include "refscale.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aw/log.h"
#include "aw/util.h"
#include "kmod.h"
#include "proc.h"

#define LINE_MAX_LEN 4096
#define KMSG_RECORD  8192
#define OUTPUT_LIMIT 4096

enum {
	S_IDLE,    /* between runs */
	S_STARTED, /* "Start of test" seen */
	S_ENDED,   /* "END OF TEST" seen, the table is next */
	S_TABLE,   /* reading "<run>\t<ns>" lines */
};

void aw_refscale_parser_init(struct aw_refscale_parser *p, struct aw_import *imp)
{
	memset(p, 0, sizeof(*p));
	p->imp = imp;
}

static bool type_char(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '_';
}

/* "key=123" anywhere in s. */
static int64_t param(const char *s, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = strstr(s, key); p; p = strstr(p + 1, key)) {
		int64_t v = 0;
		const char *q = p + n;

		if ((p > s && type_char(p[-1])) || *q != '=' || !isdigit((unsigned char)q[1]))
			continue;
		for (q++; isdigit((unsigned char)*q) && v < (INT64_C(1) << 40); q++)
			v = v * 10 + (*q - '0');
		return v;
	}
	return -1;
}

static struct aw_import_cell *start_run(struct aw_refscale_parser *p, const char *type,
                                        const char *rest)
{
	struct aw_import_cell id;

	memset(&id, 0, sizeof(id));
	snprintf(id.op, sizeof(id.op), "refscale");
	snprintf(id.kernel, sizeof(id.kernel), "%s", type);
	id.cpu = AW_NONE;
	id.c = AW_NONE;
	id.loops = rest ? param(rest, "loops") : -1;
	id.nruns = rest ? param(rest, "nruns") : -1;
	id.line = p->line;
	return aw_import_add(p->imp, &id);
}

/* "<run>\t<ns>" with ns like 9.852. */
static bool parse_sample(const char *s, double *v)
{
	const char *p = s;
	char *end;

	if (!isdigit((unsigned char)*p))
		return false;
	while (isdigit((unsigned char)*p))
		p++;
	if (*p != '\t' && *p != ' ')
		return false;
	while (*p == '\t' || *p == ' ')
		p++;
	if (!isdigit((unsigned char)*p))
		return false;
	*v = strtod(p, &end);
	while (*end == ' ' || *end == '\t')
		end++;
	return !*end || !strcmp(end, "ns");
}

int aw_refscale_feed(struct aw_refscale_parser *p, char *line)
{
	const char *s = aw_import_clean_line(line), *tag, *rest;
	char type[AW_NAME_MAX + 1];
	double v;
	size_t n;

	p->line++;
	p->imp->lines++;
	if (!*s)
		return 0;
	tag = strstr(s, "-ref-scale:");
	if (tag) {
		const char *t = tag;

		while (t > s && type_char(t[-1]))
			t--;
		n = (size_t)(tag - t);
		rest = tag + strlen("-ref-scale:");
		if (!n || n >= sizeof(type)) {
			p->imp->skipped++;
			return 0;
		}
		memcpy(type, t, n);
		type[n] = '\0';
		if (strstr(rest, "Start of test")) {
			p->cur = start_run(p, type, rest);
			if (!p->cur)
				return -ENOMEM;
			p->state = S_STARTED;
		} else if (strstr(rest, "END OF TEST")) {
			if (!p->cur || strcmp(p->cur->kernel, type) || p->cur->ended ||
			    p->cur->n_samples) {
				p->cur = start_run(p, type, NULL);
				if (!p->cur)
					return -ENOMEM;
			}
			p->cur->ended = true;
			p->state = S_ENDED;
		}
		return 0; /* refscale's other chatter */
	}
	if (!strncmp(s, "Runs", 4) && strstr(s, "Time(ns)")) {
		if (p->cur && p->state >= S_STARTED)
			p->state = S_TABLE;
		else
			p->imp->skipped++;
		return 0;
	}
	if (p->state == S_TABLE && p->cur && parse_sample(s, &v)) {
		int rc = aw_import_add_sample(p->cur, v);

		if (rc)
			return rc;
		if (p->cur->nruns > 0 && (int64_t)p->cur->n_samples >= p->cur->nruns)
			p->state = S_IDLE;
		return 0;
	}
	p->imp->skipped++;
	return 0;
}

int aw_refscale_parse(const char *text, size_t len, struct aw_import *imp)
{
	struct aw_refscale_parser p;
	char line[LINE_MAX_LEN];
	size_t pos = 0;
	int rc = 0;

	aw_refscale_parser_init(&p, imp);
	while (pos < len && !rc) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;

		if (n >= sizeof(line)) {
			imp->lines++;
			imp->skipped++;
		} else {
			memcpy(line, text + pos, n);
			line[n] = '\0';
			rc = aw_refscale_feed(&p, line);
		}
		pos += n + 1;
	}
	return rc;
}

int aw_kmsg_feed(struct aw_refscale_parser *p, char *record)
{
	char *text = record, *semi, *w, *line;
	int rc = 0;

	if (*record == ' ')
		return 0; /* a dictionary line ("SUBSYSTEM=...") */
	semi = strchr(record, ';');
	if (semi && isdigit((unsigned char)*record)) {
		const char *q = record;

		while (isdigit((unsigned char)*q) || *q == ',' || *q == '-' ||
		       isalpha((unsigned char)*q))
			q++;
		if (q == semi)
			text = semi + 1;
	}
	/* \xHH escapes, in place (the text only shrinks) */
	w = text;
	for (char *r = text; *r; r++) {
		if (r[0] == '\\' && r[1] == 'x' && aw_hex_value(r[2]) >= 0 &&
		    aw_hex_value(r[3]) >= 0) {
			*w++ = (char)(aw_hex_value(r[2]) * 16 + aw_hex_value(r[3]));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
	line = text;
	while (line && !rc) {
		char *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		rc = aw_refscale_feed(p, line);
		line = nl ? nl + 1 : NULL;
		if (line && !*line)
			break;
	}
	return rc;
}

/* ---- running refscale ---- */

static int run_helper(const char *const *argv, struct aw_buf *out, volatile int *stop, int *code,
                      char **err)
{
	struct aw_proc proc = {
	    .argv = argv, .log_fd = -1, .output = out, .timeout_ms = 120000, .stop = stop};

	aw_buf_reset(out);
	return aw_proc_run(&proc, code, err);
}

/* A one-line summary of a helper's output for a skip reason. */
static const char *output_tail(struct aw_buf *out)
{
	char *t;

	if (!out->data || !out->len)
		return "(no output)";
	for (char *c = out->data; *c; c++)
		if (*c == '\n' || *c == '\t')
			*c = ' ';
	t = out->data;
	while (*t == ' ')
		t++;
	for (size_t n = strlen(t); n && t[n - 1] == ' '; n--)
		t[n - 1] = '\0';
	return aw_text_tail(t, strlen(t), 1, 300);
}

struct kmsg {
	int fd;
	bool plain_file;
	char buf[KMSG_RECORD];
	size_t len;
};

/* Reads what the log holds now (a record at a time from /dev/kmsg; any chunk from a plain
 * file), feeding complete lines. Returns 0, -EAGAIN when nothing new came, or -ENOMEM. */
static int kmsg_read(struct kmsg *k, struct aw_refscale_parser *p)
{
	bool any = false;

	for (;;) {
		ssize_t n = read(k->fd, k->buf + k->len, sizeof(k->buf) - 1 - k->len);
		char *start, *nl;
		int rc;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EPIPE) /* records were overwritten; read on */
				continue;
			return any ? 0 : -EAGAIN;
		}
		if (n == 0)
			return any ? 0 : -EAGAIN;
		any = true;
		k->len += (size_t)n;
		k->buf[k->len] = '\0';
		start = k->buf;
		/* /dev/kmsg records end with '\n'; continuation lines of one record start with a
		 * blank and are dropped by aw_kmsg_feed(). */
		while ((nl = memchr(start, '\n', k->len - (size_t)(start - k->buf)))) {
			*nl = '\0';
			rc = aw_kmsg_feed(p, start);
			if (rc)
				return rc;
			start = nl + 1;
		}
		k->len -= (size_t)(start - k->buf);
		memmove(k->buf, start, k->len);
		if (k->len >= sizeof(k->buf) - 1)
			k->len = 0; /* an endless line: drop it */
	}
}

/* The run of `type` in imp that has all its samples, or NULL. */
static const struct aw_import_cell *finished_run(const struct aw_import *imp, const char *type,
                                                 int64_t nruns)
{
	for (size_t i = imp->n_runs; i-- > 0;) {
		const struct aw_import_run *r = &imp->runs[i];

		for (size_t j = r->n_cells; j-- > 0;)
			if (!strcmp(r->cells[j].kernel, type) && r->cells[j].ended &&
			    (int64_t)r->cells[j].n_samples >= nruns)
				return &r->cells[j];
	}
	return NULL;
}

static int set_reason(struct aw_cell *c, enum aw_cell_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int set_reason(struct aw_cell *c, enum aw_cell_status st, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->status = st;
	return aw_set_str(&c->reason, msg);
}

/* One scale_type: fills `cell` (identity already set). `ko_dir`: where refscale.ko built out of
 * tree is (torture is loaded), or NULL to modprobe the kernel's own. Returns 0, -EINTR or
 * -ENOMEM. */
static int run_type(const struct aw_agent_config *cfg, const char *type, const char *ko_dir,
                    struct aw_cell *cell, struct aw_buf *out, volatile int *stop)
{
	char arg_type[AW_NAME_MAX + 16], arg_loops[48], arg_nruns[48];
	const char *modinfo[] = {cfg->modinfo, "refscale", NULL};
	const char *modprobe[] = {cfg->modprobe, "refscale", arg_type, arg_loops, arg_nruns, NULL};
	const char *rmmod[] = {cfg->rmmod, "refscale", NULL};
	struct aw_refscale_parser parser;
	const struct aw_import_cell *done = NULL;
	struct aw_import imp;
	struct kmsg k = {.fd = -1};
	char *err = NULL;
	struct stat st;
	uint64_t deadline;
	int code = 0, rc = 0;

	aw_import_init(&imp, "refscale");
	aw_refscale_parser_init(&parser, &imp);
	if (geteuid() != 0) {
		rc = set_reason(cell, AW_CELL_SKIPPED,
		                "not root: refscale is a kernel module the agent must load");
		goto out;
	}
	if (!access("/sys/module/refscale", F_OK)) {
		rc = set_reason(cell, AW_CELL_SKIPPED,
		                "the refscale module is already loaded; the agent leaves it alone");
		goto out;
	}
	rc = ko_dir ? 0 : run_helper(modinfo, out, stop, &code, &err);
	if (rc == -EINTR)
		goto out;
	if (!ko_dir && (rc || code)) {
		rc = set_reason(cell, AW_CELL_SKIPPED, "module missing: %s refscale: %s",
		                cfg->modinfo, rc ? err : output_tail(out));
		goto out;
	}
	k.fd = open(cfg->kmsg_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (k.fd < 0) {
		rc = set_reason(cell, AW_CELL_SKIPPED, "cannot read the kernel log '%s': %s",
		                cfg->kmsg_path, strerror(errno));
		goto out;
	}
	if (!fstat(k.fd, &st))
		k.plain_file = S_ISREG(st.st_mode);
	lseek(k.fd, 0, SEEK_END); /* only what refscale prints from now on */
	snprintf(arg_type, sizeof(arg_type), "scale_type=%s", type);
	snprintf(arg_loops, sizeof(arg_loops), "loops=%llu",
	         (unsigned long long)cfg->refscale_loops);
	snprintf(arg_nruns, sizeof(arg_nruns), "nruns=%llu",
	         (unsigned long long)cfg->refscale_nruns);
	if (ko_dir) {
		char *ko = aw_asprintf("%s/refscale.ko", ko_dir), params[sizeof(arg_type) + 100];

		snprintf(params, sizeof(params), "%s %s %s", arg_type, arg_loops, arg_nruns);
		rc = ko ? aw_kmod_load(ko, "refscale", params, 0, stop, NULL, &err) : -ENOMEM;
		free(ko);
		if (rc == -EINTR || rc == -ENOMEM)
			goto out;
		if (rc) {
			rc = set_reason(cell, AW_CELL_SKIPPED, "insmod failed: %s", err);
			goto out;
		}
	} else {
		rc = run_helper(modprobe, out, stop, &code, &err);
		if (rc == -EINTR)
			goto out;
		if (rc || code) {
			rc = set_reason(cell, AW_CELL_SKIPPED, "modprobe failed: %s",
			                rc ? err : output_tail(out));
			goto out;
		}
	}
	deadline = aw_monotonic_ns() + cfg->refscale_timeout_ms * 1000000;
	while (!done && !(stop && *stop) && aw_monotonic_ns() < deadline) {
		struct pollfd pfd = {.fd = k.fd, .events = POLLIN};

		rc = kmsg_read(&k, &parser);
		if (rc == -ENOMEM)
			break;
		done = finished_run(&imp, type, (int64_t)cfg->refscale_nruns);
		if (!done && rc == -EAGAIN) {
			/* /dev/kmsg wakes poll(); a plain file (tests) is always "readable" */
			if (k.plain_file)
				aw_sleep_ns(100000000, stop);
			else
				poll(&pfd, 1, 1000);
		}
		rc = 0;
	}
	if (rc)
		goto unload;
	if (done) {
		rc = aw_import_fill_cell(done, cell);
	} else if (stop && *stop) {
		rc = -EINTR;
	} else {
		rc = set_reason(cell, AW_CELL_FAILED, "refscale printed no results within %llu s",
		                (unsigned long long)(cfg->refscale_timeout_ms / 1000));
	}
unload : {
	int urc =
	    ko_dir ? aw_kmod_unload("refscale", &err) : run_helper(rmmod, out, NULL, &code, &err);

	if (!rc && (urc || (!ko_dir && code)) && cell->status == AW_CELL_OK)
		rc = set_reason(cell, AW_CELL_FAILED, "measured, but rmmod refscale failed: %s",
		                urc ? err : output_tail(out));
}
out:
	if (k.fd >= 0)
		close(k.fd);
	aw_import_release(&imp);
	free(err);
	return rc;
}

/* Whether the running kernel has refscale of its own (modinfo finds it). */
static bool in_kernel(const struct aw_agent_config *cfg, struct aw_buf *out, volatile int *stop)
{
	const char *modinfo[] = {cfg->modinfo, "refscale", NULL};
	char *err = NULL;
	int code = 0, rc = run_helper(modinfo, out, stop, &code, &err);

	free(err);
	return !rc && !code;
}

/* refscale out of tree: prebuilt (kernel.refscale.modules) or built now from the source tree
 * into *build_dir; torture is loaded (*torture set when by us). Returns 0 with *ko_dir, or a
 * negative errno with *err (the run fails: a module that does not build is no skipped cell). */
static int prepare_out_of_tree(const struct aw_agent_config *cfg, const char *log_dir,
                               char **ko_dir, char **build_dir, bool *torture, volatile int *stop,
                               char **err)
{
	const char *tmp = getenv("TMPDIR");
	char *tree = NULL, *log = NULL, *ko = NULL, stamp[AW_TIME_LEN];
	int rc = 0;

	if (cfg->refscale_modules) {
		*ko_dir = strdup(cfg->refscale_modules);
		if (!*ko_dir)
			return aw_errorf(err, -ENOMEM, "out of memory");
	} else {
		aw_time_now(stamp);
		for (char *c = stamp; *c; c++)
			if (*c == ':')
				*c = '-';
		tree = aw_kmod_tree(cfg);
		log = aw_asprintf("%s/refscale-%s.log", log_dir, stamp);
		*build_dir =
		    aw_asprintf("%s/atomwatch-refscale.XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!tree || !log || !*build_dir) {
			rc = aw_errorf(err, -ENOMEM, "out of memory");
			goto out;
		}
		if (!mkdtemp(*build_dir)) {
			rc = aw_errorf(err, -errno, "cannot create '%s': %s", *build_dir,
			               strerror(errno));
			aw_freep(build_dir);
			goto out;
		}
		aw_info("building refscale and torture from %s against %s (log: %s)",
		        cfg->refscale_source, tree, log);
		rc = aw_refscale_build(cfg, cfg->refscale_source, tree, *build_dir, log, stop, err);
		if (rc)
			goto out;
		*ko_dir = strdup(*build_dir);
		if (!*ko_dir) {
			rc = aw_errorf(err, -ENOMEM, "out of memory");
			goto out;
		}
	}
	if (access("/sys/module/torture", F_OK)) {
		ko = aw_asprintf("%s/torture.ko", *ko_dir);
		rc = ko ? aw_kmod_load(ko, "torture", "", 0, stop, cfg->kmsg_path, err)
		        : aw_errorf(err, -ENOMEM, "out of memory");
		*torture = !rc;
	}
out:
	free(tree);
	free(log);
	free(ko);
	return rc;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int aw_refscale_run(const struct aw_agent_config *cfg, const char *log_dir, struct aw_result *res,
                    volatile int *stop, char **err)
{
	char *ko_dir = NULL, *build_dir = NULL, *why = NULL;
	bool torture = false;
	struct aw_buf out;
	int rc = 0;

	aw_buf_init(&out, OUTPUT_LIMIT);
	if ((cfg->refscale_source || cfg->refscale_modules) && geteuid() == 0 &&
	    access("/sys/module/refscale", F_OK) && !in_kernel(cfg, &out, stop)) {
		rc = prepare_out_of_tree(cfg, log_dir, &ko_dir, &build_dir, &torture, stop, err);
		if (rc)
			goto out;
	}
	for (size_t i = 0; i < cfg->n_refscale_types && !rc; i++) {
		struct aw_cell *c = aw_result_add_cell(res);

		if (!c || aw_set_str(&c->op, "refscale") ||
		    aw_set_str(&c->kernel, cfg->refscale_types[i]) || aw_cell_make_key(c)) {
			rc = aw_errorf(err, -ENOMEM, "out of memory");
			break;
		}
		rc = run_type(cfg, cfg->refscale_types[i], ko_dir, c, &out, stop);
		if (rc == -EINTR)
			aw_errorf(err, rc, "interrupted while refscale ran");
		else if (rc)
			aw_errorf(err, rc, "refscale: %s", strerror(-rc));
	}
out:
	if (torture && aw_kmod_unload("torture", &why))
		aw_error("%s", why);
	if (build_dir && nftw(build_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS))
		aw_warn("cannot remove '%s': %s", build_dir, strerror(errno));
	free(build_dir);
	free(ko_dir);
	free(why);
	aw_buf_release(&out);
	return rc;
}
