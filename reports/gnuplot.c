/* The one file that talks to gnuplot: a long-lived gnuplot process per struct aw_gnuplot, started
 * with posix_spawn, driven over a socket, fed each chart's script through a named pipe, its answers
 * read back over a pipe with a deadline; restarted when it dies or hangs. Also the escaping of
 * every string and number put in a script. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "aw/log.h"
#include "aw/util.h"

#define GP_DEFAULT_PROGRAM    "/usr/bin/gnuplot"
#define GP_DEFAULT_TIMEOUT_MS 20000u
#define GP_LINE_MAX           4096 /* longer output lines are cut (and never a marker) */
#define GP_MSGS_MAX           8192 /* gnuplot's other output kept per exchange, for errors */
#define GP_ERRMSG_MAX         256
#define GP_STOP_GRACE_MS      1000

struct aw_gnuplot {
	char *program;
	unsigned timeout_ms;
	pid_t pid;  /* 0: not running */
	int in_fd;  /* our end of the socket that is gnuplot's stdin */
	int out_fd; /* read end of the pipe that is gnuplot's stdout and stderr */
	bool has_pngcairo;
	unsigned starts;
	unsigned long long seq; /* exchanges so far: names markers and temp files */
	char nonce[17];         /* random per process, so no stale or forged line is a marker */
	char *fifo_dir;         /* private (0700) directory holding the named pipe */
	char *fifo;             /* the named pipe gnuplot `load`s each chart's script from */

	/* output of the current exchange */
	char line[GP_LINE_MAX + 1];
	size_t line_len;
	bool line_cut;
	struct aw_buf msgs;
	char errmsg[GP_ERRMSG_MAX];
};

/* ---- script text ---- */

/* Appends the escaped form of one character of `n` bytes at p. */
static int put_escaped(struct aw_buf *b, const unsigned char *p, size_t n)
{
	char esc[4 * 4 + 1];
	size_t o = 0;

	if (n == 1 && ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == ' ')) {
		esc[o++] = (char)*p;
	} else {
		/* digits too are escaped: gnuplot reads "\0551" as one escape */
		for (size_t i = 0; i < n; i++) {
			snprintf(esc + o, 5, "\\%03o", (unsigned)p[i]);
			o += 4;
		}
	}
	return aw_buf_append(b, esc, o);
}

int aw_gp_put_text(struct aw_buf *b, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t used = 0;
	int rc = aw_buf_puts(b, "\"");

	if (max == 0 || max > AW_GP_TEXT_MAX)
		max = AW_GP_TEXT_MAX;
	while (*p && !rc) {
		size_t n = aw_utf8_seq_len(p);

		if (used + (n ? n : 1) > max) {
			rc = aw_buf_puts(b, "\\056\\056\\056"); /* "..." */
			break;
		}
		if (n == 0) /* invalid UTF-8: one '?' per bad byte */
			rc = put_escaped(b, (const unsigned char *)"?", 1);
		else if (n == 1 && (*p < 0x20 || *p == 0x7f))
			rc = put_escaped(b, (const unsigned char *)" ", 1);
		else
			rc = put_escaped(b, p, n);
		used += n ? n : 1;
		p += n ? n : 1;
	}
	return rc ? rc : aw_buf_puts(b, "\"");
}

int aw_gp_put_path(struct aw_buf *b, const char *path)
{
	const unsigned char *p = (const unsigned char *)path;
	int rc;

	for (; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			return -EINVAL;
	}
	rc = aw_buf_puts(b, "\"");
	for (p = (const unsigned char *)path; *p && !rc; p++)
		rc = put_escaped(b, p, 1);
	return rc ? rc : aw_buf_puts(b, "\"");
}

int aw_gp_put_number(struct aw_buf *b, double v)
{
	if (!isfinite(v))
		return aw_buf_puts(b, "?");
	return aw_buf_printf(b, "%.17g", v);
}

/* ---- the process ---- */

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Ends the process: EOF on its input and up to `grace_ms` to exit by itself, else (and at once
 * when grace_ms is 0) SIGKILL; always reaps it. */
static void gp_stop(struct aw_gnuplot *gp, unsigned grace_ms)
{
	uint64_t deadline = aw_monotonic_ns() + (uint64_t)grace_ms * 1000000u;
	bool reaped = false;

	close_fd(&gp->in_fd);
	if (gp->pid > 0) {
		if (grace_ms == 0)
			kill(gp->pid, SIGKILL);
		while (grace_ms) {
			pid_t r = waitpid(gp->pid, NULL, WNOHANG);

			if (r == gp->pid || (r < 0 && errno == ECHILD)) {
				reaped = true;
				break;
			}
			if ((r < 0 && errno != EINTR) || aw_monotonic_ns() >= deadline) {
				kill(gp->pid, SIGKILL);
				break;
			}
			struct timespec ts = {0, 5 * 1000000};
			nanosleep(&ts, NULL);
		}
		while (!reaped && waitpid(gp->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	gp->pid = 0;
	close_fd(&gp->out_fd);
}

/* Whether the process is still there; reaps it and closes its pipes when it exited. When
 * SIGCHLD is ignored (ECHILD) this cannot tell, and the pipes will. */
static bool gp_alive(struct aw_gnuplot *gp)
{
	pid_t r;

	if (gp->pid <= 0)
		return false;
	do {
		r = waitpid(gp->pid, NULL, WNOHANG);
	} while (r < 0 && errno == EINTR);
	if (r != gp->pid)
		return true;
	gp->pid = 0;
	close_fd(&gp->in_fd);
	close_fd(&gp->out_fd);
	return false;
}

/* One complete output line: the marker ends the exchange; anything else is kept (bounded) as
 * gnuplot's messages. */
static void gp_line(struct aw_gnuplot *gp, const char *marker, bool *done, int *status)
{
	size_t mlen = strlen(marker);
	char *end;
	long v;

	gp->line[gp->line_len] = '\0';
	if (!gp->line_cut && strncmp(gp->line, marker, mlen) == 0 && gp->line[mlen] == ' ') {
		errno = 0;
		v = strtol(gp->line + mlen + 1, &end, 10);
		if (errno == 0 && end != gp->line + mlen + 1 && (*end == ' ' || *end == '\0')) {
			*status = (int)(v > 1000 ? 1000 : v < -1000 ? -1000 : v);
			while (*end == ' ')
				end++;
			snprintf(gp->errmsg, sizeof(gp->errmsg), "%s", end);
			*done = true;
			return;
		}
	}
	if (strncmp(gp->line, "AW-TERMS-", 9) == 0 && strncmp(gp->line + 9, gp->nonce, 16) == 0)
		gp->has_pngcairo = strstr(gp->line, " pngcairo ") != NULL;
	/* kept for the error message; once full, later lines are dropped */
	if (gp->line_len && aw_buf_append(&gp->msgs, gp->line, gp->line_len) == 0)
		aw_buf_append(&gp->msgs, "\n", 1);
}

/* write() to the named pipe without SIGPIPE when gnuplot closed it (it does when a loaded script
 * fails): the signal is blocked in this thread for the call and a SIGPIPE it raised consumed. */
static ssize_t write_nosigpipe(int fd, const void *data, size_t len)
{
	sigset_t pipe_set, pending, old;
	bool was_pending;
	ssize_t n;
	int saved;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE);
	n = write(fd, data, len);
	saved = errno;
	if (n < 0 && saved == EPIPE && !was_pending) {
		struct timespec zero = {0, 0};

		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = saved;
	return n;
}

/* Sends `cmd` over gnuplot's stdin and, when `payload` is not NULL, writes it into the named pipe
 * once gnuplot opened it (cmd's `load`), then closes the pipe; reads gnuplot's output meanwhile
 * until the line "<marker> <status> [message]". gnuplot reads its stdin one byte per system
 * call, a loaded file in blocks: bulk data goes through the named pipe.
 * Returns 0 with *status (gnuplot's GPVAL_ERRNO) and gp->errmsg set, -ETIMEDOUT (the process
 * was killed), -EPIPE (it died; reaped), or another negative errno. */
static int gp_exchange(struct aw_gnuplot *gp, const char *cmd, size_t cmd_len, const char *payload,
                       size_t payload_len, const char *marker, int *status)
{
	uint64_t deadline = aw_monotonic_ns() + (uint64_t)gp->timeout_ms * 1000000u;
	size_t cmd_off = 0, payload_off = payload ? 0 : payload_len;
	int fifo_fd = -1, rc = 0;
	bool done = false;
	char chunk[4096];

	gp->line_len = 0;
	gp->line_cut = false;
	gp->errmsg[0] = '\0';
	aw_buf_reset(&gp->msgs);
	while (!done) {
		struct pollfd pfd[3] = {{.fd = gp->out_fd, .events = POLLIN},
		                        {.fd = -1, .events = POLLOUT},
		                        {.fd = -1, .events = POLLOUT}};
		uint64_t now = aw_monotonic_ns();
		int wait_ms, n;

		if (now >= deadline) {
			rc = -ETIMEDOUT;
			goto out;
		}
		wait_ms = (int)((deadline - now) / 1000000u) + 1;
		if (cmd_off < cmd_len)
			pfd[1].fd = gp->in_fd;
		if (cmd_off == cmd_len && payload_off < payload_len && fifo_fd < 0) {
			/* gnuplot opens the pipe when it reaches the `load`; until then there is no
			 * reader and a non-blocking open fails with ENXIO */
			fifo_fd = open(gp->fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
			if (fifo_fd < 0 && errno != ENXIO && errno != EINTR) {
				rc = -errno;
				goto out;
			}
			if (fifo_fd < 0)
				wait_ms = 1;
		}
		if (fifo_fd >= 0)
			pfd[2].fd = fifo_fd;
		n = poll(pfd, 3, wait_ms);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto out;
		}
		if (pfd[1].revents & (POLLOUT | POLLERR | POLLHUP)) {
			ssize_t w = send(gp->in_fd, cmd + cmd_off, cmd_len - cmd_off,
			                 MSG_NOSIGNAL | MSG_DONTWAIT);

			if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				rc = -EPIPE;
				goto out;
			}
			if (w > 0)
				cmd_off += (size_t)w;
		}
		if (pfd[2].revents & (POLLOUT | POLLERR | POLLHUP)) {
			ssize_t w = write_nosigpipe(fifo_fd, payload + payload_off,
			                            payload_len - payload_off);

			if (w < 0 && errno == EPIPE)
				payload_off =
				    payload_len; /* it stopped reading: the status tells why */
			else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				payload_off = payload_len;
			else if (w > 0)
				payload_off += (size_t)w;
			if (payload_off == payload_len) {
				close(fifo_fd); /* end of file: the `load` ends */
				fifo_fd = -1;
			}
		}
		if (pfd[0].revents & (POLLIN | POLLERR | POLLHUP)) {
			ssize_t r = read(gp->out_fd, chunk, sizeof(chunk));

			if (r == 0) {
				rc = -EPIPE;
				goto out;
			}
			if (r < 0) {
				if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
					continue;
				rc = -EPIPE;
				goto out;
			}
			for (ssize_t i = 0; i < r && !done; i++) {
				if (chunk[i] == '\n') {
					gp_line(gp, marker, &done, status);
					gp->line_len = 0;
					gp->line_cut = false;
				} else if (gp->line_len < GP_LINE_MAX) {
					gp->line[gp->line_len++] = chunk[i];
				} else {
					gp->line_cut = true;
				}
			}
		}
	}
out:
	if (fifo_fd >= 0)
		close(fifo_fd);
	if (rc == -ETIMEDOUT || rc == -EPIPE)
		gp_stop(gp, 0);
	return rc;
}

static int gp_start(struct aw_gnuplot *gp, char **err)
{
	static char arg_defaults[] = "-d"; /* no gnuplotrc, no ~/.gnuplot */
	static char env_path[] = "PATH=/usr/bin:/bin";
	static char env_locale[] = "LC_ALL=C.UTF-8";
	static char env_home[] = "HOME=/nonexistent";
	char *argv[] = {gp->program, arg_defaults, NULL};
	char *envp[] = {env_path, env_locale, env_home, NULL};
	int sock[2] = {-1, -1}, pipefd[2] = {-1, -1};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	bool fa_ok = false, attr_ok = false;
	sigset_t all, none;
	char marker[64], script[256];
	unsigned char rnd[8];
	int status = 0, rc;

	gp_stop(gp, 0);
	rc = aw_random_bytes(rnd, sizeof(rnd));
	if (rc < 0)
		goto out_err;
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(gp->nonce + 2 * i, 3, "%02x", rnd[i]);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sock) < 0 ||
	    pipe2(pipefd, O_CLOEXEC) < 0) {
		rc = -errno;
		goto out_err;
	}
	rc = -posix_spawn_file_actions_init(&fa);
	if (rc)
		goto out_err;
	fa_ok = true;
	rc = -posix_spawnattr_init(&attr);
	if (rc)
		goto out_err;
	attr_ok = true;
	/* gnuplot gets the socket as stdin, the pipe as stdout and stderr, nothing else of ours,
	 * default signal dispositions (the collector may ignore SIGPIPE) and its own session (a
	 * terminal's ^C goes to the collector, which ends its gnuplots itself) */
	sigfillset(&all);
	sigemptyset(&none);
	if ((rc = -posix_spawn_file_actions_adddup2(&fa, sock[1], 0)) ||
	    (rc = -posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1)) ||
	    (rc = -posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2)) ||
	    (rc = -posix_spawn_file_actions_addclosefrom_np(&fa, 3)) ||
	    (rc = -posix_spawn_file_actions_addchdir_np(&fa, "/")) ||
	    (rc = -posix_spawnattr_setsigdefault(&attr, &all)) ||
	    (rc = -posix_spawnattr_setsigmask(&attr, &none)) ||
	    (rc = -posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK |
	                                               POSIX_SPAWN_SETSID)))
		goto out_err;
	rc = -posix_spawn(&gp->pid, gp->program, &fa, &attr, argv, envp);
	if (rc) {
		gp->pid = 0;
		goto out_err;
	}
	close_fd(&sock[1]);
	close_fd(&pipefd[1]);
	gp->in_fd = sock[0];
	gp->out_fd = pipefd[0];
	sock[0] = pipefd[0] = -1;
	if (fcntl(gp->out_fd, F_SETFL, O_NONBLOCK) < 0) {
		rc = -errno;
		goto out_err;
	}
	gp->starts++;

	/* a first exchange proves it runs and tells which PNG terminal it has */
	snprintf(marker, sizeof(marker), "AW-DONE-%s-%llu", gp->nonce, ++gp->seq);
	snprintf(script, sizeof(script),
	         "set print\nprint \"AW-TERMS-%s \" . GPVAL_TERMINALS . \" \"\n"
	         "print sprintf(\"%s %%d %%s\", GPVAL_ERRNO, GPVAL_ERRMSG)\n",
	         gp->nonce, marker);
	rc = gp_exchange(gp, script, strlen(script), NULL, 0, marker, &status);
	if (rc == 0 && status != 0)
		rc = -EIO;
	if (rc < 0)
		goto out_err;
	goto out;
out_err:
	aw_errorf(err, rc, "cannot start gnuplot '%s': %s", gp->program, strerror(-rc));
	gp_stop(gp, 0);
out:
	if (attr_ok)
		posix_spawnattr_destroy(&attr);
	if (fa_ok)
		posix_spawn_file_actions_destroy(&fa);
	close_fd(&sock[0]);
	close_fd(&sock[1]);
	close_fd(&pipefd[0]);
	close_fd(&pipefd[1]);
	return rc;
}

struct aw_gnuplot *aw_gnuplot_new(const struct aw_gnuplot_opts *opts, char **err)
{
	struct aw_gnuplot *gp = calloc(1, sizeof(*gp));
	const char *tmp;

	if (!gp) {
		aw_errorf(err, -ENOMEM, "cannot start gnuplot: out of memory");
		return NULL;
	}
	gp->in_fd = gp->out_fd = -1;
	gp->timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms : GP_DEFAULT_TIMEOUT_MS;
	gp->program = strdup(opts && opts->program ? opts->program : GP_DEFAULT_PROGRAM);
	if (!gp->program)
		goto out_nomem;
	aw_buf_init(&gp->msgs, GP_MSGS_MAX);
	tmp = getenv("TMPDIR");
	gp->fifo_dir = aw_asprintf("%s/aw-gnuplot-XXXXXX", tmp && *tmp == '/' ? tmp : "/tmp");
	if (!gp->fifo_dir)
		goto out_nomem;
	if (!mkdtemp(gp->fifo_dir)) {
		aw_errorf(err, -errno, "cannot create a directory for gnuplot in '%s': %s",
		          gp->fifo_dir, strerror(errno));
		aw_freep(&gp->fifo_dir);
		goto out_free;
	}
	gp->fifo = aw_asprintf("%s/script", gp->fifo_dir);
	if (!gp->fifo)
		goto out_nomem;
	if (mkfifo(gp->fifo, 0600) < 0) {
		aw_errorf(err, -errno, "cannot create the pipe '%s': %s", gp->fifo,
		          strerror(errno));
		aw_freep(&gp->fifo);
		goto out_free;
	}
	if (gp_start(gp, err) < 0)
		goto out_free;
	return gp;
out_nomem:
	aw_errorf(err, -ENOMEM, "cannot start gnuplot: out of memory");
out_free:
	aw_gnuplot_free(&gp);
	return NULL;
}

void aw_gnuplot_free(struct aw_gnuplot **gpp)
{
	struct aw_gnuplot *gp = *gpp;

	if (!gp)
		return;
	gp_stop(gp, GP_STOP_GRACE_MS);
	if (gp->fifo)
		unlink(gp->fifo);
	if (gp->fifo_dir)
		rmdir(gp->fifo_dir);
	free(gp->fifo);
	free(gp->fifo_dir);
	aw_buf_release(&gp->msgs);
	free(gp->program);
	free(gp);
	*gpp = NULL;
}

int aw_gnuplot_pid(const struct aw_gnuplot *gp)
{
	return gp->pid;
}

unsigned aw_gnuplot_starts(const struct aw_gnuplot *gp)
{
	return gp->starts;
}

bool aw_gnuplot_has_pngcairo(const struct aw_gnuplot *gp)
{
	return gp->has_pngcairo;
}

/* ---- drawing ---- */

/* Bytes of one chart gnuplot wrote, at most. */
#define GP_OUTPUT_MAX (32u << 20)

/* "<private dir>/out-<seq>.<ext>": where gnuplot writes a chart before it is copied under the
 * data dir (nobody else can plant anything in the private dir). */
static char *temp_path(const struct aw_gnuplot *gp, const char *ext)
{
	return aw_asprintf("%s/out-%llu.%s", gp->fifo_dir, gp->seq, ext);
}

/* Copies gnuplot's temp `tmp` to <dir>/<rel>, never through a link (aw_write_beneath()). */
static int install(const char *tmp, const char *dir, const char *rel, char **err)
{
	char *data = NULL;
	size_t len = 0;
	int rc = aw_read_file(tmp, GP_OUTPUT_MAX, &data, &len, err);

	if (!rc && !len)
		rc = aw_errorf(err, -EIO, "gnuplot wrote nothing for '%s'", rel);
	if (!rc)
		rc = aw_write_beneath(dir, rel, data, len, false, err);
	free(data);
	return rc;
}

static int put_output(struct aw_buf *s, const struct aw_gnuplot *gp, const struct aw_gp_job *job,
                      bool png, const char *tmp)
{
	int rc;

	if (png && gp->has_pngcairo)
		rc = aw_buf_printf(s,
		                   "set terminal pngcairo size %u,%u noenhanced "
		                   "font \"sans-serif,10\" background \"#ffffff\"\n",
		                   job->width, job->height);
	else if (png)
		rc = aw_buf_printf(
		    s, "set terminal png size %u,%u noenhanced background \"#ffffff\"\n",
		    job->width, job->height);
	else
		rc = aw_buf_printf(s,
		                   "set terminal svg size %u,%u fixed noenhanced "
		                   "font \"sans-serif,10\" background \"#ffffff\"\n",
		                   job->width, job->height);
	if (rc || (rc = aw_buf_puts(s, "set output ")) || (rc = aw_gp_put_path(s, tmp)) ||
	    (rc = aw_buf_puts(s, "\nreset\nset datafile missing \"?\"\n")) ||
	    (rc = aw_buf_append(s, job->script, job->script_len)) ||
	    (rc = aw_buf_puts(s, "\nunset output\n")))
		return rc;
	return 0;
}

static int draw_once(struct aw_gnuplot *gp, const struct aw_gp_job *job, char **err)
{
	const char *finals[2] = {job->svg_rel, job->png_rel};
	static const char *const ext[2] = {"svg", "png"};
	char *tmps[2] = {NULL, NULL};
	struct aw_buf script, cmd;
	char marker[64];
	int status = 0, rc = 0;

	aw_buf_init(&script, 2 * job->script_len + 4096);
	aw_buf_init(&cmd, 4096);
	gp->seq++;
	snprintf(marker, sizeof(marker), "AW-DONE-%s-%llu", gp->nonce, gp->seq);
	/* over stdin only the `load` of the named pipe and the marker; the script goes through
	 * the pipe */
	if ((rc = aw_buf_puts(&cmd, "reset errors\nload ")) ||
	    (rc = aw_gp_put_path(&cmd, gp->fifo)) ||
	    (rc = aw_buf_printf(
	         &cmd, "\nprint sprintf(\"%s %%d %%s\", GPVAL_ERRNO, GPVAL_ERRMSG)\n", marker)) ||
	    (rc = aw_buf_puts(&script, "undefine $*\nset encoding utf8\n"))) {
		aw_errorf(err, rc, "cannot build the gnuplot commands: %s", strerror(-rc));
		goto out;
	}
	for (int i = 0; i < 2 && !rc; i++) {
		if (!finals[i])
			continue;
		tmps[i] = temp_path(gp, ext[i]);
		if (!tmps[i]) {
			rc = aw_errorf(err, -ENOMEM, "cannot draw '%s': out of memory", finals[i]);
			goto out;
		}
		rc = put_output(&script, gp, job, i == 1, tmps[i]);
	}
	if (rc) {
		aw_errorf(err, rc, "cannot build the gnuplot script for '%s': %s",
		          finals[0] ? finals[0] : finals[1], strerror(-rc));
		goto out;
	}
	rc = gp_exchange(gp, cmd.data, cmd.len, script.data, script.len, marker, &status);
	if (rc == -ETIMEDOUT) {
		aw_errorf(err, rc, "gnuplot took longer than %u ms to draw '%s'; killed it",
		          gp->timeout_ms, finals[0] ? finals[0] : finals[1]);
		goto out;
	}
	if (rc < 0) {
		aw_errorf(err, rc, "gnuplot failed while drawing '%s': %s",
		          finals[0] ? finals[0] : finals[1],
		          rc == -EPIPE ? "the process died" : strerror(-rc));
		goto out;
	}
	if (status != 0) {
		rc = aw_errorf(err, -EIO, "gnuplot could not draw '%s': %s",
		               finals[0] ? finals[0] : finals[1], gp->errmsg);
		aw_debug("gnuplot said: %s", gp->msgs.data ? gp->msgs.data : "");
		goto out;
	}
	for (int i = 0; i < 2 && !rc; i++) {
		if (tmps[i])
			rc = install(tmps[i], job->dir, finals[i], err);
	}
out:
	for (int i = 0; i < 2; i++) {
		if (tmps[i])
			unlink(tmps[i]); /* (not there when gnuplot failed early) */
		free(tmps[i]);
	}
	aw_buf_release(&cmd);
	aw_buf_release(&script);
	return rc;
}

int aw_gnuplot_draw(struct aw_gnuplot *gp, const struct aw_gp_job *job, char **err)
{
	int rc;

	if (!job->dir || (!job->svg_rel && !job->png_rel))
		return aw_errorf(err, -EINVAL, "gnuplot job without an output");
	for (int attempt = 0;; attempt++) {
		bool fresh = false;

		if (!gp_alive(gp)) {
			rc = gp_start(gp, err);
			if (rc < 0)
				return rc;
			fresh = true;
		}
		rc = draw_once(gp, job, err);
		/* it may have died between two charts, unnoticed: one more try on a fresh one */
		if (rc == -EPIPE && !fresh && attempt == 0) {
			aw_warn("gnuplot died between charts; restarting it");
			if (err)
				aw_freep(err);
			continue;
		}
		return rc;
	}
}
