/* The atomwatch-ci command line: trigger, wait, gate and compare. It checks the arguments (a
 * usage error is one line and exit status 3), reads the token from the environment or a file
 * (never from the command line), talks to the collector through client.c and writes the
 * summaries format.c produces. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aw/http_client.h"
#include "aw/log.h"
#include "aw/util.h"
#include "ci.h"
#include "evidence.h"

#ifndef AW_VERSION
#define AW_VERSION "0.0.0"
#endif

#define MAX_HOSTS       1024
#define TOKEN_FILE_MAX  4096
#define TOKEN_MAX       512
#define URL_MAX_LEN     2048
#define OUTPUT_LIMIT    (64u << 20)
#define DEFAULT_TIMEOUT "30m"
#define MAX_CELL_GLOBS  32 /* the collector's limit (AW_ANALYSIS_MAX_GLOBS) */

static const char usage_text[] =
    "usage: atomwatch-ci COMMAND [options]\n"
    "Ask an atomwatch collector whether a commit made per-CPU atomics slower, from CI.\n"
    "\n"
    "Commands:\n"
    "  trigger --project P --commit SHA --ref REF [--hosts a,b|all] [--subject NAME]\n"
    "  trigger --ab --base SHA --head SHA --subject NAME --project P --ref REF [--hosts ...]\n"
    "        queue an interleaved A/B job: daemon agents run 'atomwatch-agent ab'\n"
    "        queue a job for the agents in daemon mode; prints the job id (needs a ci token)\n"
    "  wait --project P --commit SHA --hosts a,b [--timeout 30m]\n"
    "        return once every host has reported a run of the commit\n"
    "  gate --project P --commit SHA [--baseline-ref main] [--hosts a,b] [--wait 30m]\n"
    "       [--cells GLOB]... [--strict] [--junit FILE] [--markdown FILE]\n"
    "        wait (with --wait), then ask the gate: pass, fail, inconclusive, incomplete or\n"
    "        unconfirmed\n"
    "  compare --project P --base SHA --head SHA [--host NAME] [--cells GLOB]... [--strict]\n"
    "       [--junit FILE] [--markdown FILE]\n"
    "        compare two commits host by host, with the gate's exit statuses\n"
    "\n"
    "  --cells GLOB      judge only the cells whose key matches (e.g. 'subject=*'); repeatable;\n"
    "                    a glob that matches no cell of the commit is an error\n"
    "  --strict          unconfirmed (a suspect cell not re-measured yet) fails, exit 1\n"
    "\n"
    "Options of every command:\n"
    "  --collector URL   the collector (default: $ATOMWATCH_COLLECTOR)\n"
    "  --token-file FILE a file holding the token (default: $ATOMWATCH_TOKEN); a token is\n"
    "                    never taken from the command line\n"
    "  --poll DURATION   first delay between polls while waiting (default 2s; doubles up to 30s)\n"
    "  --quiet           no progress lines\n"
    "  --help, --version\n"
    "\n"
    "With GITHUB_ACTIONS=true, regressions and inconclusive cells are also printed as ::error\n"
    "annotations; with GITHUB_STEP_SUMMARY set, the Markdown summary is appended to that file.\n"
    "\n"
    "Exit status:\n"
    "  0  pass or unconfirmed (wait: every host reported; trigger: queued)\n"
    "  1  a regression of a cell of gate level fail (with --strict also unconfirmed)\n"
    "  2  incomplete: a host never reported (wait: timed out)\n"
    "  3  usage or infrastructure error (collector unreachable, 5xx, a bad reply, a file not\n"
    "     written)\n"
    "  4  inconclusive: a cell of gate level fail the gate cannot vouch for (its change\n"
    "     reaches its threshold, its evidence stayed split after the re-measurements); the\n"
    "     gate neither passes nor fails it\n"
    "When several apply: a regression (1), then inconclusive (4), then incomplete (2), then\n"
    "unconfirmed with --strict (1), else 0.\n";

enum {
	O_COLLECTOR = 256,
	O_PROJECT,
	O_COMMIT,
	O_REF,
	O_HOSTS,
	O_HOST,
	O_SUBJECT,
	O_TIMEOUT,
	O_WAIT,
	O_BASELINE_REF,
	O_BASE,
	O_HEAD,
	O_AB,
	O_JUNIT,
	O_MARKDOWN,
	O_TOKEN_FILE,
	O_TOKEN,
	O_POLL,
	O_QUIET,
	O_HELP,
	O_VERSION,
	O_CELLS,
	O_STRICT,
};

static const struct option longopts[] = {
    {"collector", required_argument, NULL, O_COLLECTOR},
    {"project", required_argument, NULL, O_PROJECT},
    {"commit", required_argument, NULL, O_COMMIT},
    {"ref", required_argument, NULL, O_REF},
    {"hosts", required_argument, NULL, O_HOSTS},
    {"host", required_argument, NULL, O_HOST},
    {"subject", required_argument, NULL, O_SUBJECT},
    {"timeout", required_argument, NULL, O_TIMEOUT},
    {"wait", required_argument, NULL, O_WAIT},
    {"baseline-ref", required_argument, NULL, O_BASELINE_REF},
    {"base", required_argument, NULL, O_BASE},
    {"ab", no_argument, NULL, O_AB},
    {"head", required_argument, NULL, O_HEAD},
    {"junit", required_argument, NULL, O_JUNIT},
    {"markdown", required_argument, NULL, O_MARKDOWN},
    {"token-file", required_argument, NULL, O_TOKEN_FILE},
    {"token", optional_argument, NULL, O_TOKEN},
    {"poll", required_argument, NULL, O_POLL},
    {"quiet", no_argument, NULL, O_QUIET},
    {"help", no_argument, NULL, O_HELP},
    {"version", no_argument, NULL, O_VERSION},
    {"cells", required_argument, NULL, O_CELLS},
    {"strict", no_argument, NULL, O_STRICT},
    {NULL, 0, NULL, 0},
};

/* "--name" of an option, for messages (argv[optind - 1] may be its value). */
static const char *opt_name(int opt)
{
	static char buf[32];

	for (const struct option *o = longopts; o->name; o++) {
		if (o->val == opt) {
			snprintf(buf, sizeof(buf), "--%s", o->name);
			return buf;
		}
	}
	return "?";
}

struct args {
	const char *command;
	char *collector; /* without trailing '/' */
	const char *project, *commit, *ref, *subject, *host, *baseline_ref, *base, *head;
	bool ab; /* trigger --ab */
	const char *junit, *markdown, *token_file;
	char **hosts; /* NULL: none given */
	size_t n_hosts;
	bool all_hosts;
	uint64_t timeout_ms, wait_ms, poll_ms;
	bool wait_given, quiet, strict;
	char *token;
	const char *cells[MAX_CELL_GLOBS]; /* --cells, in argv */
	size_t n_cells;
};

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	aw_error("%s (see --help)", msg);
	return AW_CI_EXIT_ERROR;
}

static void args_release(struct args *a)
{
	for (size_t i = 0; a->hosts && i < a->n_hosts; i++)
		free(a->hosts[i]);
	free(a->hosts);
	free(a->collector);
	if (a->token) {
		memset(a->token, 0, strlen(a->token));
		free(a->token);
	}
	memset(a, 0, sizeof(*a));
}

/* "a,b,c" into a->hosts, each a valid name, no repeats; "all" when allow_all. */
static int parse_hosts(struct args *a, const char *list, bool allow_all)
{
	const char *p = list;

	if (allow_all && !strcmp(list, "all")) {
		a->all_hosts = true;
		return 0;
	}
	if (!*list)
		return usage_error("--hosts is empty");
	while (*p) {
		size_t len = strcspn(p, ",");
		char name[AW_NAME_MAX + 1];
		char **hosts;

		if (!len || len > AW_NAME_MAX)
			return usage_error("bad host name '%.*s' in --hosts ([A-Za-z0-9._-]{1,64})",
			                   (int)(len > 80 ? 80 : len), p);
		memcpy(name, p, len);
		name[len] = '\0';
		if (!aw_valid_name(name))
			return usage_error("bad host name '%s' in --hosts ([A-Za-z0-9._-]{1,64})",
			                   name);
		if (!strcmp(name, "all"))
			return usage_error("--hosts all is for trigger only; name the hosts");
		for (size_t i = 0; i < a->n_hosts; i++)
			if (!strcmp(a->hosts[i], name))
				return usage_error("host '%s' is named twice in --hosts", name);
		if (a->n_hosts >= MAX_HOSTS)
			return usage_error("more than %d hosts in --hosts", MAX_HOSTS);
		hosts = realloc(a->hosts, (a->n_hosts + 1) * sizeof(*hosts));
		if (!hosts)
			return usage_error("out of memory");
		a->hosts = hosts;
		a->hosts[a->n_hosts] = strdup(name);
		if (!a->hosts[a->n_hosts])
			return usage_error("out of memory");
		a->n_hosts++;
		p += len;
		if (*p == ',') {
			p++;
			if (!*p)
				return usage_error("--hosts ends with a comma");
		}
	}
	return 0;
}

static int set_collector(struct args *a, const char *url, const char *from)
{
	size_t len = strlen(url);

	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
		return usage_error(
		    "bad collector URL in %s: it must start with http:// or https://", from);
	while (len > 8 && url[len - 1] == '/')
		len--;
	if (len >= URL_MAX_LEN)
		return usage_error("the collector URL in %s is too long", from);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)url[i] <= ' ' || url[i] == 0x7f || url[i] == '?' ||
		    url[i] == '#')
			return usage_error("bad collector URL in %s: no spaces, controls, query or "
			                   "fragment",
			                   from);
	free(a->collector);
	a->collector = strndup(url, len);
	return a->collector ? 0 : usage_error("out of memory");
}

static int parse_duration(const char *opt, const char *v, uint64_t *ms)
{
	if (aw_parse_duration_ms(v, ms) || !*ms)
		return usage_error("bad %s '%s' (e.g. 90s, 30m, 2h)", opt, v);
	return 0;
}

/* Which options each command takes. */
static bool option_allowed(const char *cmd, int opt)
{
	bool trigger = !strcmp(cmd, "trigger"), wait = !strcmp(cmd, "wait"),
	     gate = !strcmp(cmd, "gate"), compare = !strcmp(cmd, "compare");

	switch (opt) {
	case O_COLLECTOR:
	case O_PROJECT:
	case O_TOKEN_FILE:
	case O_TOKEN:
	case O_QUIET:
	case O_HELP:
	case O_VERSION:
		return true;
	case O_COMMIT:
		return trigger || wait || gate;
	case O_HOSTS:
		return trigger || wait || gate;
	case O_REF:
	case O_SUBJECT:
		return trigger;
	case O_TIMEOUT:
		return wait;
	case O_POLL:
		return wait || gate;
	case O_WAIT:
	case O_BASELINE_REF:
		return gate;
	case O_JUNIT:
	case O_MARKDOWN:
	case O_CELLS:
	case O_STRICT:
		return gate || compare;
	case O_BASE:
	case O_HEAD:
		return compare || trigger;
	case O_AB:
		return trigger;
	case O_HOST:
		return compare;
	default:
		return false;
	}
}

/* One --cells glob: 1 to 256 printable characters (the collector's rule). */
static int add_cell_glob(struct args *a, const char *glob)
{
	size_t len = strlen(glob);

	if (!len || len > 256)
		return usage_error("--cells needs a glob of 1 to 256 characters, such as "
		                   "'subject=*'");
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)glob[i] < 0x20 || glob[i] == 0x7f)
			return usage_error("--cells glob '%.64s' holds a control character", glob);
	if (a->n_cells >= MAX_CELL_GLOBS)
		return usage_error("more than %d --cells globs", MAX_CELL_GLOBS);
	a->cells[a->n_cells++] = glob;
	return 0;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	static const char *const commands[] = {"trigger", "wait", "gate", "compare"};
	int opt, rc;

	if (argc > 1 && argv[1][0] != '-') {
		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (!strcmp(argv[1], commands[i]))
				a->command = commands[i];
		if (!a->command)
			return usage_error("unknown command '%s' (trigger, wait, gate or compare)",
			                   argv[1]);
		argv++;
		argc--;
	}
	optind = 0; /* GNU getopt: start over (aw_ci_main may run more than once) */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt == '?') {
			if (optopt)
				return usage_error("option '%s' needs a value", argv[optind - 1]);
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
		if (opt == O_HELP) {
			fputs(usage_text, stdout);
			return -1;
		}
		if (opt == O_VERSION) {
			printf(AW_CI_PROG " %s\n", AW_VERSION);
			return -1;
		}
		if (opt == O_TOKEN)
			return usage_error(
			    "a token is never taken from the command line (every user "
			    "can read it there): set ATOMWATCH_TOKEN or use "
			    "--token-file");
		if (!a->command)
			return usage_error("a command comes first: trigger, wait, gate or compare");
		if (!option_allowed(a->command, opt))
			return usage_error("'%s' does not take %s", a->command, opt_name(opt));
		switch (opt) {
		case O_COLLECTOR:
			rc = set_collector(a, optarg, "--collector");
			if (rc)
				return rc;
			break;
		case O_PROJECT:
			if (!aw_valid_name(optarg))
				return usage_error("bad project name '%s' ([A-Za-z0-9._-]{1,64})",
				                   optarg);
			a->project = optarg;
			break;
		case O_COMMIT:
		case O_BASE:
		case O_HEAD:
			if (!aw_valid_commit(optarg))
				return usage_error("bad commit '%s' in %s (7 to 64 hex digits)",
				                   optarg, opt_name(opt));
			*(opt == O_COMMIT ? &a->commit
			  : opt == O_BASE ? &a->base
			                  : &a->head) = optarg;
			break;
		case O_REF:
		case O_BASELINE_REF:
			if (!aw_valid_ref(optarg))
				return usage_error("bad ref '%s'", optarg);
			*(opt == O_REF ? &a->ref : &a->baseline_ref) = optarg;
			break;
		case O_HOSTS:
			if (a->hosts || a->all_hosts)
				return usage_error("--hosts is given twice");
			rc = parse_hosts(a, optarg, !strcmp(a->command, "trigger"));
			if (rc)
				return rc;
			break;
		case O_HOST:
		case O_SUBJECT:
			if (!aw_valid_name(optarg))
				return usage_error("bad %s name '%s' ([A-Za-z0-9._-]{1,64})",
				                   opt == O_HOST ? "host" : "subject", optarg);
			*(opt == O_HOST ? &a->host : &a->subject) = optarg;
			break;
		case O_TIMEOUT:
			rc = parse_duration("--timeout", optarg, &a->timeout_ms);
			if (rc)
				return rc;
			break;
		case O_WAIT:
			rc = parse_duration("--wait", optarg, &a->wait_ms);
			if (rc)
				return rc;
			a->wait_given = true;
			break;
		case O_POLL:
			rc = parse_duration("--poll", optarg, &a->poll_ms);
			if (rc)
				return rc;
			break;
		case O_JUNIT:
		case O_MARKDOWN:
			if (!*optarg)
				return usage_error("%s needs a file name", opt_name(opt));
			*(opt == O_JUNIT ? &a->junit : &a->markdown) = optarg;
			break;
		case O_TOKEN_FILE:
			a->token_file = optarg;
			break;
		case O_QUIET:
			a->quiet = true;
			break;
		case O_STRICT:
			a->strict = true;
			break;
		case O_CELLS:
			rc = add_cell_glob(a, optarg);
			if (rc)
				return rc;
			break;
		case O_AB:
			a->ab = true;
			break;
		}
	}
	if (!a->command)
		return usage_error("a command is needed: trigger, wait, gate or compare");
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	return 0;
}

static int need(const void *v, const char *cmd, const char *opt)
{
	return v ? 0 : usage_error("'%s' needs %s", cmd, opt);
}

/* Every check that depends on the command as a whole, and the defaults. */
static int check_args(struct args *a)
{
	const char *cmd = a->command, *env;
	int rc;

	if (!a->collector) {
		env = getenv("ATOMWATCH_COLLECTOR");
		if (!env || !*env)
			return usage_error("no collector: use --collector URL or set "
			                   "ATOMWATCH_COLLECTOR");
		rc = set_collector(a, env, "ATOMWATCH_COLLECTOR");
		if (rc)
			return rc;
	}
	if ((rc = need(a->project, cmd, "--project")))
		return rc;
	if (!strcmp(cmd, "compare"))
		return need(a->base, cmd, "--base") || need(a->head, cmd, "--head")
		           ? AW_CI_EXIT_ERROR
		           : 0;
	if (!strcmp(cmd, "trigger") && a->ab) {
		/* an A/B job names its commits with --base and --head */
		if (need(a->base, "trigger --ab", "--base") ||
		    need(a->head, "trigger --ab", "--head") ||
		    need(a->subject, "trigger --ab", "--subject"))
			return AW_CI_EXIT_ERROR;
		if (!strcmp(a->base, a->head))
			return usage_error("trigger --ab: --base and --head are the same commit");
		return need(a->ref, cmd, "--ref");
	}
	if ((rc = need(a->commit, cmd, "--commit")))
		return rc;
	if (!strcmp(cmd, "trigger"))
		return need(a->ref, cmd, "--ref");
	if (!strcmp(cmd, "wait")) {
		if (!a->hosts)
			return usage_error("'wait' needs --hosts (the hosts expected to report)");
		if (!a->timeout_ms)
			aw_parse_duration_ms(DEFAULT_TIMEOUT, &a->timeout_ms);
		return 0;
	}
	if (a->wait_given && !a->hosts)
		return usage_error("--wait needs --hosts (the hosts expected to report)");
	if (!a->baseline_ref)
		a->baseline_ref = "main";
	return 0;
}

/* The token from --token-file or ATOMWATCH_TOKEN (NULL when neither is set); a token of
 * printable ASCII without spaces, surrounding whitespace trimmed. Returns 0 or exit status 3. */
static int load_token(struct args *a)
{
	const char *env = getenv("ATOMWATCH_TOKEN");
	char *data = NULL, *err = NULL, *start, *end;
	size_t len;
	struct stat st;
	int rc;

	if (a->token_file) {
		rc = aw_read_file(a->token_file, TOKEN_FILE_MAX, &data, &len, &err);
		if (rc) {
			aw_error("cannot read the token: %s", err);
			free(err);
			return AW_CI_EXIT_ERROR;
		}
		if (!stat(a->token_file, &st) && (st.st_mode & 0077))
			aw_warn("token file '%s' is readable by others (chmod 600 it)",
			        a->token_file);
	} else if (env && *env) {
		data = strdup(env);
		if (!data)
			return usage_error("out of memory");
	} else {
		return 0;
	}
	start = data;
	while (*start == ' ' || *start == '\t' || *start == '\n' || *start == '\r')
		start++;
	end = start + strlen(start);
	while (end > start &&
	       (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
		end--;
	*end = '\0';
	rc = 0;
	if (!*start || end - start > TOKEN_MAX) {
		aw_error("the token in %s is empty or too long",
		         a->token_file ? a->token_file : "ATOMWATCH_TOKEN");
		rc = AW_CI_EXIT_ERROR;
	}
	for (const char *p = start; !rc && *p; p++) {
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f) {
			aw_error("the token in %s holds a character a token never has",
			         a->token_file ? a->token_file : "ATOMWATCH_TOKEN");
			rc = AW_CI_EXIT_ERROR;
		}
	}
	if (!rc) {
		a->token = strdup(start);
		if (!a->token)
			rc = usage_error("out of memory");
	}
	memset(data, 0, strlen(data));
	free(data);
	return rc;
}

static int cmd_trigger(struct args *a, struct aw_ci_client *c)
{
	struct aw_ci_job job = {
	    .project = a->project,
	    .commit = a->commit,
	    .ref = a->ref,
	    .subject = a->subject,
	    .hosts = a->all_hosts ? NULL : (const char *const *)a->hosts,
	    .n_hosts = a->n_hosts,
	};
	char *err = NULL;
	int64_t id;

	if (!a->token) {
		aw_error("'trigger' needs a ci token: set ATOMWATCH_TOKEN or use --token-file");
		return AW_CI_EXIT_ERROR;
	}
	if (!a->hosts && !a->all_hosts)
		job.hosts = NULL; /* every host */
	if (a->ab) {
		/* an A/B job: the head is the job's commit, measured against the base */
		if (!a->base || !a->head || !a->subject) {
			aw_error("trigger --ab needs --base, --head and --subject");
			return AW_CI_EXIT_ERROR;
		}
		if (a->commit && strcmp(a->commit, a->head)) {
			aw_error("trigger --ab: --commit %s is not --head %s", a->commit, a->head);
			return AW_CI_EXIT_ERROR;
		}
		job.commit = a->head;
		job.ab_base = a->base;
	} else if (a->base || a->head) {
		aw_error("--base and --head are for 'compare' and 'trigger --ab'");
		return AW_CI_EXIT_ERROR;
	}
	if (aw_ci_trigger(c, &job, &id, &err)) {
		aw_error("%s", err);
		free(err);
		return AW_CI_EXIT_ERROR;
	}
	printf("%lld\n", (long long)id);
	return AW_CI_EXIT_PASS;
}

/* Waits for a->hosts; returns 0 (all reported), AW_CI_EXIT_INCOMPLETE or AW_CI_EXIT_ERROR. */
static int do_wait(struct args *a, struct aw_ci_client *c, uint64_t timeout_ms)
{
	struct aw_ci_wait_opts o = {
	    .timeout_ms = timeout_ms,
	    .poll_ms = a->poll_ms,
	    .quiet = a->quiet,
	};
	bool *reported = calloc(a->n_hosts, sizeof(*reported));
	char *err = NULL, names[1024];
	size_t used = 0;
	int rc;

	if (!reported)
		return usage_error("out of memory");
	rc = aw_ci_wait(c, a->project, a->commit, (const char *const *)a->hosts, a->n_hosts, &o,
	                reported, &err);
	if (rc == -ETIMEDOUT) {
		names[0] = '\0';
		for (size_t i = 0; i < a->n_hosts && used < sizeof(names); i++) {
			int w;

			if (reported[i])
				continue;
			w = snprintf(names + used, sizeof(names) - used, "%s%s", used ? ", " : "",
			             a->hosts[i]);
			if (w > 0)
				used += (size_t)w;
		}
		aw_error("timed out after %llu s waiting for commit %.12s: no run from %s",
		         (unsigned long long)(timeout_ms / 1000), a->commit, names);
		rc = AW_CI_EXIT_INCOMPLETE;
	} else if (rc) {
		aw_error("%s", err);
		rc = AW_CI_EXIT_ERROR;
	}
	free(err);
	free(reported);
	return rc;
}

/* Appends to GitHub's job summary file (it may hold other steps' summaries). */
static int append_file(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	int rc = 0;

	if (fd < 0) {
		aw_error("cannot open '%s': %s", path, strerror(errno));
		return -errno;
	}
	while (len) {
		ssize_t n = write(fd, data, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			aw_error("cannot write '%s': %s", path, strerror(errno));
			break;
		}
		data += n;
		len -= (size_t)n;
	}
	if (close(fd) && !rc) {
		rc = -errno;
		aw_error("cannot write '%s': %s", path, strerror(errno));
	}
	return rc;
}

/* Formats with fn into a fresh buffer and writes it to `path` atomically. Returns 0 or -1. */
static int write_formatted(const struct aw_ci_report *r, const char *base_url, const char *path,
                           int (*fn)(const struct aw_ci_report *, const char *, struct aw_buf *))
{
	struct aw_buf b;
	char *err = NULL;
	int rc;

	aw_buf_init(&b, OUTPUT_LIMIT);
	rc = fn(r, base_url, &b);
	if (rc)
		aw_error("cannot format '%s': %s", path, strerror(-rc));
	else if ((rc = aw_write_file_atomic(path, b.data ? b.data : "", b.len, &err)))
		aw_error("%s", err);
	free(err);
	aw_buf_release(&b);
	return rc ? -1 : 0;
}

/* Everything a report is shown as; returns the exit status. */
static int present(struct args *a, struct aw_ci_report *r)
{
	const char *gha = getenv("GITHUB_ACTIONS"), *summary = getenv("GITHUB_STEP_SUMMARY");
	int status = aw_ci_exit_for(r), failed = 0;
	struct aw_buf b;

	aw_buf_init(&b, OUTPUT_LIMIT);
	if (!aw_ci_format_text(r, a->collector, &b))
		fwrite(b.data, 1, b.len, stdout);
	if (gha && !strcmp(gha, "true")) {
		aw_buf_reset(&b);
		if (!aw_ci_format_annotations(r, a->collector, &b))
			fwrite(b.data, 1, b.len, stdout);
	}
	fflush(stdout);
	if (a->junit && write_formatted(r, a->collector, a->junit, aw_ci_format_junit))
		failed = 1;
	if (a->markdown && write_formatted(r, a->collector, a->markdown, aw_ci_format_markdown))
		failed = 1;
	if (summary && *summary) {
		aw_buf_reset(&b);
		if (aw_ci_format_markdown(r, a->collector, &b) ||
		    append_file(summary, b.data ? b.data : "", b.len))
			failed = 1;
	}
	aw_buf_release(&b);
	return failed ? AW_CI_EXIT_ERROR : status;
}

/* The commit's A/B document decides when there is one (evidence.h); the line says which
 * evidence did. A collector without A/B documents leaves the history's verdict. */
static int decide_by_evidence(struct args *a, struct aw_ci_client *c, enum aw_ci_exit history)
{
	struct aw_ci_evidence ev;
	char *err = NULL;
	int rc;

	if (aw_ci_fetch_evidence(c, a->project, a->commit, &ev, &err)) {
		aw_warn("no A/B evidence (%s); the history-based verdict decides", err);
		free(err);
		return history;
	}
	aw_ci_evidence_print(stdout, &ev, history, a->collector);
	fflush(stdout);
	rc = aw_ci_evidence_exit(&ev, history);
	aw_ci_evidence_release(&ev);
	return rc;
}

static int cmd_gate(struct args *a, struct aw_ci_client *c)
{
	struct aw_ci_gate_query q = {
	    .project = a->project,
	    .commit = a->commit,
	    .baseline_ref = a->baseline_ref,
	    .hosts = (const char *const *)a->hosts,
	    .n_hosts = a->n_hosts,
	    .all_cells = a->junit != NULL,
	    .cells = a->n_cells ? a->cells : NULL,
	    .n_cells = a->n_cells,
	};
	struct aw_ci_report r;
	char *err = NULL;
	int rc;

	if (a->wait_given) {
		rc = do_wait(a, c, a->wait_ms);
		if (rc == AW_CI_EXIT_ERROR)
			return rc;
		/* on a timeout the gate still answers, naming the hosts without a run */
	}
	if (aw_ci_fetch_gate(c, &q, &r, &err)) {
		aw_error("%s", err);
		free(err);
		return AW_CI_EXIT_ERROR;
	}
	r.strict = a->strict;
	for (size_t i = 0; i < a->n_hosts; i++) {
		bool found = false;

		for (size_t j = 0; j < r.n_hosts && !found; j++)
			found = !strcmp(r.hosts[j].name, a->hosts[i]);
		if (!found && aw_ci_report_add_missing(&r, a->hosts[i],
		                                       "the collector's reply does not name it")) {
			aw_error("out of memory");
			aw_ci_report_release(&r);
			return AW_CI_EXIT_ERROR;
		}
	}
	rc = present(a, &r);
	aw_ci_report_release(&r);
	return rc == AW_CI_EXIT_ERROR ? rc : decide_by_evidence(a, c, (enum aw_ci_exit)rc);
}

static int cmd_compare(struct args *a, struct aw_ci_client *c)
{
	struct aw_ci_gate_query q = {
	    .project = a->project,
	    .commit = a->head,
	    .all_cells = a->junit != NULL,
	    .cells = a->n_cells ? a->cells : NULL,
	    .n_cells = a->n_cells,
	};
	struct aw_ci_report r;
	char *err = NULL;
	int rc;

	if (aw_ci_fetch_compare(c, &q, a->base, a->host, &r, &err)) {
		aw_error("%s", err);
		free(err);
		return AW_CI_EXIT_ERROR;
	}
	r.strict = a->strict;
	rc = present(a, &r);
	aw_ci_report_release(&r);
	return rc;
}

int aw_ci_main(int argc, char **argv)
{
	struct args a = {0};
	struct aw_ci_client *c = NULL;
	char *err = NULL;
	int rc;

	aw_log_init(AW_CI_PROG, AW_LOG_INFO);
	rc = parse_args(argc, argv, &a);
	if (rc < 0) { /* --help, --version */
		rc = 0;
		goto out;
	}
	if (rc || (rc = check_args(&a)) || (rc = load_token(&a)))
		goto out;
	if (a.quiet)
		aw_log_init(AW_CI_PROG, AW_LOG_WARN);
	if (aw_http_client_global_init()) {
		aw_error("cannot initialise libcurl");
		rc = AW_CI_EXIT_ERROR;
		goto out;
	}
	c = aw_ci_client_new(a.collector, a.token, &err);
	if (!c) {
		aw_error("%s", err);
		rc = AW_CI_EXIT_ERROR;
	} else if (!strcmp(a.command, "trigger")) {
		rc = cmd_trigger(&a, c);
	} else if (!strcmp(a.command, "wait")) {
		rc = do_wait(&a, c, a.timeout_ms);
	} else if (!strcmp(a.command, "gate")) {
		rc = cmd_gate(&a, c);
	} else {
		rc = cmd_compare(&a, c);
	}
	aw_ci_client_free(&c);
	aw_http_client_global_cleanup();
out:
	free(err);
	args_release(&a);
	return rc;
}
