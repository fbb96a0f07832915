/* stderr logger; one write per line so lines from threads do not interleave. */
#include "aw/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static const char *log_prog = "atomwatch";
static enum aw_log_level log_level = AW_LOG_INFO;

void aw_log_init(const char *prog, enum aw_log_level level)
{
	log_prog = prog;
	log_level = level;
}

void aw_log(enum aw_log_level level, const char *fmt, ...)
{
	static const char *names[] = {"error", "warning", "info", "debug"};
	char line[2048];
	va_list ap;
	int n, m;

	if (level > log_level)
		return;
	n = snprintf(line, sizeof(line), "%s: %s: ", log_prog, names[level]);
	if (n < 0)
		return;
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	n += m;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}
