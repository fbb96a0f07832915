/* Helper processes for the agent (see proc.h): fork + execvpe into a new process group, the
 * child's output read through a pipe so that one poll() serves output, timeout and stop flag. */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "aw/util.h"

extern char **environ;

#define ENV_MAX 4096

/* The child's environment: ours with p->env set on top. Built before fork (no malloc after). */
static char **make_env(const struct aw_proc *p)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n] && n < ENV_MAX)
		n++;
	env = calloc(n + p->n_env + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		bool replaced = false;

		for (size_t j = 0; j < p->n_env && !replaced; j++) {
			size_t klen = strcspn(p->env[j], "=");

			replaced = !strncmp(environ[i], p->env[j], klen) && environ[i][klen] == '=';
		}
		if (!replaced)
			env[k++] = environ[i];
	}
	for (size_t j = 0; j < p->n_env; j++)
		env[k++] = (char *)p->env[j];
	env[k] = NULL;
	return env;
}

static void child(const struct aw_proc *p, int out_fd, char **env)
{
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

	setpgid(0, 0);
	if (devnull >= 0)
		dup2(devnull, STDIN_FILENO);
	dup2(out_fd, STDOUT_FILENO);
	dup2(out_fd, STDERR_FILENO);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	if (p->dir && chdir(p->dir) < 0) {
		dprintf(STDERR_FILENO, "cannot change to '%s': %s\n", p->dir, strerror(errno));
		_exit(127);
	}
	execvpe(p->argv[0], (char *const *)p->argv, env);
	dprintf(STDERR_FILENO, "cannot run '%s': %s\n", p->argv[0], strerror(errno));
	_exit(127);
}

static void copy_out(const struct aw_proc *p, const char *data, size_t n)
{
	if (p->log_fd >= 0) {
		while (n) {
			ssize_t w = write(p->log_fd, data, n);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return;
			data += w;
			n -= (size_t)w;
		}
	} else if (p->output) {
		size_t room = p->output->limit - p->output->len;

		aw_buf_append(p->output, data, n < room ? n : room);
	}
}

int aw_proc_run(const struct aw_proc *p, int *code, char **err)
{
	uint64_t deadline = p->timeout_ms ? aw_monotonic_ns() + p->timeout_ms * 1000000 : 0;
	char **env = NULL, buf[4096];
	int fds[2] = {-1, -1}, rc = 0, status = 0;
	bool open_pipe = true;
	pid_t pid;

	*code = -1;
	env = make_env(p);
	if (!env)
		return aw_errorf(err, -ENOMEM, "out of memory");
	if (pipe2(fds, O_CLOEXEC) < 0) {
		rc = aw_errorf(err, -errno, "cannot run '%s': pipe: %s", p->argv[0],
		               strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		rc = aw_errorf(err, -errno, "cannot run '%s': fork: %s", p->argv[0],
		               strerror(errno));
		goto out;
	}
	if (pid == 0)
		child(p, fds[1], env);
	setpgid(pid, pid); /* also in the parent, so that the kill below cannot miss the group */
	close(fds[1]);
	fds[1] = -1;
	while (open_pipe) {
		struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
		int wait_ms = 1000, r;

		if (p->stop && *p->stop) {
			rc = -EINTR;
			break;
		}
		if (deadline) {
			uint64_t now = aw_monotonic_ns();

			if (now >= deadline) {
				rc = -ETIMEDOUT;
				break;
			}
			if ((deadline - now) / 1000000 < (uint64_t)wait_ms)
				wait_ms = (int)((deadline - now) / 1000000) + 1;
		}
		r = poll(&pfd, 1, wait_ms);
		if (r < 0 && errno != EINTR) {
			rc = aw_errorf(err, -errno, "poll: %s", strerror(errno));
			break;
		}
		if (r > 0) {
			ssize_t n = read(fds[0], buf, sizeof(buf));

			if (n > 0)
				copy_out(p, buf, (size_t)n);
			else if (n == 0 || (errno != EINTR && errno != EAGAIN))
				open_pipe = false;
		}
	}
	/* The output is closed; the process may still linger (it closed its stdout). */
	for (;;) {
		pid_t w;

		if (rc)
			kill(-pid, SIGKILL);
		w = waitpid(pid, &status, rc ? 0 : WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			if (!rc)
				rc = aw_errorf(err, -errno, "waitpid: %s", strerror(errno));
			goto out;
		}
		if (w == 0) {
			if (p->stop && *p->stop)
				rc = -EINTR;
			else if (deadline && aw_monotonic_ns() >= deadline)
				rc = -ETIMEDOUT;
			else
				aw_sleep_ns(20000000, p->stop);
		}
	}
	if (rc == -EINTR || rc == -ETIMEDOUT) {
		aw_errorf(err, rc, "'%s' %s", p->argv[0],
		          rc == -EINTR ? "was stopped" : "ran out of time and was killed");
		goto out;
	}
	if (!rc)
		*code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
out:
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	free(env);
	return rc;
}

const char *aw_text_tail(const char *text, size_t len, unsigned max_lines, size_t max_bytes)
{
	size_t start = len;
	unsigned lines = 0;

	while (start > 0 && text[start - 1] == '\n')
		start--;
	len = start;
	while (start > 0 && len - start < max_bytes) {
		if (text[start - 1] == '\n' && ++lines >= max_lines)
			break;
		start--;
	}
	return text + start;
}
