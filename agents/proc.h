/* Running a helper command (a subject's build, modprobe, rmmod, modinfo) in its own process
 * group, with its output copied to a log file or captured (bounded), a timeout and the agent's
 * stop flag; the whole group is killed when either fires. */
#ifndef AW_AGENT_PROC_H
#define AW_AGENT_PROC_H

#include <stddef.h>
#include <stdint.h>

#include "aw/buf.h"

struct aw_proc {
	const char *const *argv; /* argv[0] is looked up in PATH */
	const char *const *env;  /* "KEY=VALUE" set on top of the agent's environment, or NULL */
	size_t n_env;
	const char *dir;       /* working directory, or NULL */
	int log_fd;            /* >= 0: stdout and stderr are appended here */
	struct aw_buf *output; /* else, when not NULL: captured here (to its limit; rest dropped) */
	uint64_t timeout_ms;   /* 0: none */
	volatile int *stop;    /* killed when *stop becomes non-zero; NULL: never */
};

/* Runs the command to its end. Returns 0 with *code = its exit status (128 + N when killed by
 * signal N; 127 when it could not be started: no such program or directory), -ETIMEDOUT or
 * -EINTR when killed for the timeout or the stop flag, or another negative errno (fork, pipe)
 * with *err. */
int aw_proc_run(const struct aw_proc *p, int *code, char **err);

/* The last `max_lines` lines (at most `max_bytes` bytes) of a text, for error messages.
 * Returns a pointer into `text`. */
const char *aw_text_tail(const char *text, size_t len, unsigned max_lines, size_t max_bytes);

#endif
