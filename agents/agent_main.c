/* atomwatch-agent: the command line (run, daemon, flush, fingerprint, import). It parses
 * arguments, loads the config and hands over to agent.c, daemon.c and the importers. Exit
 * status: 0 done (uploaded), 1 failure, 2 usage or config error, 3 measured but left in the
 * spool. */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ab.h"
#include "agent.h"
#include "bisect.h"
#include "atomwatch/runner.h"
#include "aw/log.h"
#include "aw/util.h"
#include "config.h"
#include "import.h"
#include "kernel.h"
#include "kmod.h"

#ifndef AW_VERSION
#define AW_VERSION "0.0.0"
#endif

static volatile int stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: blocking calls return EINTR and look */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

/* The usage text quotes the limits --rounds is checked against. */
#define XSTR_(x) #x
#define XSTR(x)  XSTR_(x)
#define AB_ROUNDS \
	XSTR(AW_AB_DEFAULT_ROUNDS) ", " XSTR(AW_AB_MIN_ROUNDS) " to " XSTR(AW_AB_MAX_ROUNDS)

static const char usage_text[] =
    "usage: atomwatch-agent COMMAND [options]\n"
    "Measure per-CPU atomics on this host and send the results to an atomwatch collector.\n"
    "\n"
    "Commands:\n"
    "  run --project P --commit SHA --ref REF [--subject NAME] [--profile NAME] [--confirm N]\n"
    "      [--confirm-budget-s S] [--confirm-gap-s S] [--quiet]\n"
    "        fingerprint this host, measure the matrix (and the subject's library, and the\n"
    "        kernel's refscale readers when configured), keep the result in the spool, upload\n"
    "        it; the run id is printed on stdout. --commit kernel files the run under the\n"
    "        running kernel's commit (the -g<sha> of uname -r or /proc/version). --confirm N:\n"
    "        then ask the collector for the run's suspect cells and re-measure those (with a\n"
    "        few anchor cells), each time a run marked as a confirmation of the first with\n"
    "        the first run's batches, asking again after each, until the collector has no\n"
    "        suspect left, N re-measurements (1 to 16) were made or --confirm-budget-s\n"
    "        seconds (default 120) were spent measuring them, so that the gate can tell a\n"
    "        regression from one unlucky run; each re-measurement starts --confirm-gap-s\n"
    "        seconds (default 30, 0 to 3600) after the last measurement ended, at another\n"
    "        moment of the machine than the run it confirms\n";

/* (apart: C99 promises string literals of 4095 bytes only) */
static const char usage_ab[] =
    "  ab --project P --subject NAME --base SHA --head SHA [--ref REF] [--aa] [--cpus LIST]\n"
    "      [--rounds N] [--layouts N] [--builds N] [--keep-loads] [--budget-s S] [--profile NAME]\n"
    "      [--quiet]\n"
    "        interleaved A/B: build the subject at both commits, load each library --layouts\n"
    "        times (default 4, at most 16), measure both in short alternating slices on one\n"
    "        CPU until a sequential test decides, within --rounds rounds per cell (default\n"
    "        " AB_ROUNDS ") and --budget-s seconds of measuring in all (default 20), and\n"
    "        upload the A/B document; its id is printed on stdout. Fresh copies of both\n"
    "        libraries replace the loads every few rounds, so that layout is sampled as\n"
    "        the rounds are; --keep-loads measures the first loads throughout. --builds N\n"
    "        (default the subject's ab_builds, else 1; at most 8 and --layouts, whose default\n"
    "        rises to N) builds each side N times, build k with $ATOMWATCH_LAYOUT_CFLAGS\n"
    "        starting every function 40k mod 64 bytes past a 64-byte line, layout k loading\n"
    "        build k mod N\n"
    "  bisect --subject NAME --good SHA --bad SHA [--cells GLOB]... [--project P] [--ref REF]\n"
    "      [--budget N] [--format text|json] [--quiet]\n"
    "        find the commit between --good and --bad (first-parent) that made the subject's\n"
    "        cells slower: each step builds the probed commit in a worktree and compares it\n"
    "        with both ends by interleaved A/B, halving the range as git bisect does and\n"
    "        measuring again where a step cannot tell, within --budget steps (default: the\n"
    "        expected log2 of the range plus 5); a commit that does not build is skipped.\n"
    "        Every commit measured is uploaded as a run (trigger bisect) under --ref (main)\n"
    "        and --project (the subject's name). Exit 0 with a culprit (or the candidates\n"
    "        that skipped commits leave), 4 when the range holds no regression or the\n"
    "        budget ran out (the output says which); bisect.step in the config bisects\n"
    "        kernels by the owner's build-boot-measure command\n"
    "  daemon\n"
    "        wait for jobs from the collector, run on the config's schedule and when the host\n"
    "        fingerprint changes, flush the spool; SIGTERM stops between cells\n"
    "  flush\n"
    "        upload every result waiting in the spool\n"
    "  fingerprint\n"
    "        print this host's fingerprint as JSON\n"
    "  kernel-build --out DIR\n"
    "        build the atomwatch kernel module (and refscale, with kernel.refscale.source)\n"
    "        against the config's kernel.build tree into DIR, for hosts that load them\n"
    "        prebuilt (kernel.module_file, kernel.refscale.modules)\n"
    "  import percpu-bench|refscale FILE --host NAME --project P --commit SHA [--ref REF]\n"
    "        [--arch ARCH] [--cpu-model MODEL] [--label KEY=VALUE]... [--out FILE] [--upload]\n"
    "        turn pasted percpu_bench output or a refscale kernel log (FILE, or - for stdin)\n"
    "        into result documents (trigger import): one JSON object, or an array when the\n"
    "        paste holds several runs; skipped lines are counted on stderr\n";

/* (two strings: C99 promises 4095 characters to one) */
static const char usage_tail[] =
    "\n"
    "Options of every command:\n"
    "  --config FILE   agent config (default " AW_AGENT_DEFAULT_CONFIG ")\n"
    "  --help          this text\n"
    "  --version       the version\n"
    "\n"
    "Exit status: 0 done (the result is uploaded), 1 failure (measuring, a build, a rejected\n"
    "document), 2 usage or config error (nothing measured), 3 measured but left in the spool\n"
    "for a later 'flush', 4 (bisect) no culprit: no regression in the range, or the budget\n"
    "ran out.\n";

enum {
	O_CONFIG = 256,
	O_PROJECT,
	O_COMMIT,
	O_REF,
	O_SUBJECT,
	O_PROFILE,
	O_QUIET,
	O_HOST,
	O_ARCH,
	O_CPU_MODEL,
	O_LABEL,
	O_OUT,
	O_UPLOAD,
	O_BASE,
	O_HEAD,
	O_ROUNDS,
	O_CPUS,
	O_AA,
	O_HELP,
	O_VERSION,
	O_CONFIRM,
	O_LAYOUTS,
	O_BUILDS,
	O_BUDGET_S,
	O_GOOD,
	O_BAD,
	O_CELLS,
	O_BUDGET,
	O_FORMAT,
	O_CONFIRM_BUDGET_S,
	O_CONFIRM_GAP_S,
	O_KEEP_LOADS,
};

static const struct option longopts[] = {
    {"config", required_argument, NULL, O_CONFIG},
    {"project", required_argument, NULL, O_PROJECT},
    {"commit", required_argument, NULL, O_COMMIT},
    {"ref", required_argument, NULL, O_REF},
    {"subject", required_argument, NULL, O_SUBJECT},
    {"profile", required_argument, NULL, O_PROFILE},
    {"quiet", no_argument, NULL, O_QUIET},
    {"host", required_argument, NULL, O_HOST},
    {"arch", required_argument, NULL, O_ARCH},
    {"cpu-model", required_argument, NULL, O_CPU_MODEL},
    {"label", required_argument, NULL, O_LABEL},
    {"out", required_argument, NULL, O_OUT},
    {"upload", no_argument, NULL, O_UPLOAD},
    {"base", required_argument, NULL, O_BASE},
    {"head", required_argument, NULL, O_HEAD},
    {"rounds", required_argument, NULL, O_ROUNDS},
    {"cpus", required_argument, NULL, O_CPUS},
    {"aa", no_argument, NULL, O_AA},
    {"help", no_argument, NULL, O_HELP},
    {"version", no_argument, NULL, O_VERSION},
    {"confirm", required_argument, NULL, O_CONFIRM},
    {"layouts", required_argument, NULL, O_LAYOUTS},
    {"builds", required_argument, NULL, O_BUILDS},
    {"keep-loads", no_argument, NULL, O_KEEP_LOADS},
    {"budget-s", required_argument, NULL, O_BUDGET_S},
    {"good", required_argument, NULL, O_GOOD},
    {"bad", required_argument, NULL, O_BAD},
    {"cells", required_argument, NULL, O_CELLS},
    {"budget", required_argument, NULL, O_BUDGET},
    {"format", required_argument, NULL, O_FORMAT},
    {"confirm-budget-s", required_argument, NULL, O_CONFIRM_BUDGET_S},
    {"confirm-gap-s", required_argument, NULL, O_CONFIRM_GAP_S},
    {NULL, 0, NULL, 0},
};

struct args {
	const char *command, *config, *project, *commit, *ref, *subject, *profile;
	const char *host, *arch, *cpu_model, *out, *format, *file;
	const char *base, *head, *cpus;
	const char *good, *bad, *output_format; /* bisect */
	const char *cells[AW_BISECT_MAX_GLOBS];
	size_t n_cells;
	unsigned budget;
	bool budget_given;
	unsigned rounds, layouts, builds; /* ab: 0 for the defaults */
	double budget_s;
	json_t *labels;
	bool quiet, upload, config_given, aa, keep_loads;
	unsigned confirm;        /* --confirm N; 0: none */
	double confirm_budget_s; /* --confirm-budget-s S; 0: not given */
	double confirm_gap_s;    /* --confirm-gap-s S, when confirm_gap_given */
	bool confirm_gap_given;
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
	return AW_EXIT_USAGE;
}

/* A count option from 1 to max into *out; else the usage error "bad --NAME 'ARG': WHAT, 1 to
 * MAX" (its exit status returned). */
static int count_option(const char *name, const char *arg, unsigned max, const char *what,
                        unsigned *out)
{
	uint64_t n;

	if (aw_parse_u64(arg, max, &n) || n < 1)
		return usage_error("bad --%s '%s': %s, 1 to %u", name, arg, what, max);
	*out = (unsigned)n;
	return 0;
}

static int add_label(json_t *labels, const char *kv)
{
	const char *eq = strchr(kv, '=');
	char key[AW_NAME_MAX + 1];

	if (!eq || eq == kv || (size_t)(eq - kv) > AW_NAME_MAX)
		return usage_error("bad label '%s' (expected KEY=VALUE)", kv);
	memcpy(key, kv, (size_t)(eq - kv));
	key[eq - kv] = '\0';
	if (!aw_valid_name(key))
		return usage_error("bad label name '%s' ([A-Za-z0-9._-]{1,64})", key);
	if (json_object_set_new(labels, key, json_string(eq + 1)))
		return usage_error("bad label value in '%s' (must be UTF-8)", kv);
	return 0;
}

/* Which options each command takes. */
static bool option_allowed(const char *cmd, int opt)
{
	switch (opt) {
	case O_CONFIG:
	case O_HELP:
	case O_VERSION:
		return true;
	case O_PROJECT:
	case O_REF:
		return !strcmp(cmd, "run") || !strcmp(cmd, "import") || !strcmp(cmd, "ab") ||
		       !strcmp(cmd, "bisect");
	case O_COMMIT:
		return !strcmp(cmd, "run") || !strcmp(cmd, "import");
	case O_SUBJECT:
	case O_QUIET:
		return !strcmp(cmd, "run") || !strcmp(cmd, "ab") || !strcmp(cmd, "bisect");
	case O_PROFILE:
		return !strcmp(cmd, "run") || !strcmp(cmd, "ab");
	case O_GOOD:
	case O_BAD:
	case O_CELLS:
	case O_BUDGET:
	case O_FORMAT:
		return !strcmp(cmd, "bisect");
	case O_CONFIRM:
	case O_CONFIRM_BUDGET_S:
	case O_CONFIRM_GAP_S:
		return !strcmp(cmd, "run");
	case O_BASE:
	case O_HEAD:
	case O_ROUNDS:
	case O_CPUS:
	case O_AA:
	case O_LAYOUTS:
	case O_BUILDS:
	case O_KEEP_LOADS:
	case O_BUDGET_S:
		return !strcmp(cmd, "ab");
	case O_OUT:
		return !strcmp(cmd, "import") || !strcmp(cmd, "kernel-build");
	default:
		return !strcmp(cmd, "import");
	}
}

/* The long name of option `opt` (argv[optind - 1] is its value when it takes one). */
static const char *option_name(int opt)
{
	for (size_t i = 0; longopts[i].name; i++)
		if (longopts[i].val == opt)
			return longopts[i].name;
	return "?";
}

static int parse_args(int argc, char **argv, struct args *a)
{
	int opt, rc;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt == '?') {
			if (optopt)
				return usage_error("option '%s' needs a value", argv[optind - 1]);
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
		if (opt == O_HELP) {
			fputs(usage_text, stdout);
			fputs(usage_ab, stdout);
			fputs(usage_tail, stdout);
			return -1;
		}
		if (opt == O_VERSION) {
			printf(AW_AGENT_PROG " %s (runner %s)\n", AW_VERSION, aw_runner_version());
			return -1;
		}
		if (!a->command)
			return usage_error("a command comes first: run, ab, bisect, daemon, flush, "
			                   "fingerprint, kernel-build or import");
		if (!option_allowed(a->command, opt))
			return usage_error("'%s' does not take --%s", a->command, option_name(opt));
		switch (opt) {
		case O_CONFIG:
			a->config = optarg;
			a->config_given = true;
			break;
		case O_PROJECT:
			if (!aw_valid_name(optarg))
				return usage_error("bad project name '%s' ([A-Za-z0-9._-]{1,64})",
				                   optarg);
			a->project = optarg;
			break;
		case O_COMMIT:
			if (!aw_valid_commit(optarg) && strcmp(optarg, AW_KERNEL_COMMIT))
				return usage_error("bad commit '%s' (7 to 64 hex digits, or "
				                   "'kernel')",
				                   optarg);
			if (!strcmp(optarg, AW_KERNEL_COMMIT) && strcmp(a->command, "run"))
				return usage_error("--commit kernel is for 'run' only");
			a->commit = optarg;
			break;
		case O_REF:
			if (!aw_valid_ref(optarg))
				return usage_error("bad ref '%s'", optarg);
			a->ref = optarg;
			break;
		case O_SUBJECT:
			if (!aw_valid_name(optarg))
				return usage_error("bad subject name '%s'", optarg);
			a->subject = optarg;
			break;
		case O_PROFILE:
			a->profile = optarg;
			break;
		case O_QUIET:
			a->quiet = true;
			break;
		case O_HOST:
			if (!aw_valid_name(optarg))
				return usage_error("bad host name '%s' ([A-Za-z0-9._-]{1,64})",
				                   optarg);
			a->host = optarg;
			break;
		case O_ARCH:
			if (!aw_valid_name(optarg))
				return usage_error("bad arch '%s'", optarg);
			a->arch = optarg;
			break;
		case O_CPU_MODEL:
			if (!*optarg || strlen(optarg) > 200)
				return usage_error("bad --cpu-model (1 to 200 characters)");
			a->cpu_model = optarg;
			break;
		case O_LABEL:
			rc = add_label(a->labels, optarg);
			if (rc)
				return rc;
			break;
		case O_OUT:
			a->out = optarg;
			break;
		case O_UPLOAD:
			a->upload = true;
			break;
		case O_CONFIRM:
			rc = count_option("confirm", optarg, AW_RESULT_MAX_CONFIRM,
			                  "the number of re-measurements of the suspect cells",
			                  &a->confirm);
			if (rc)
				return rc;
			break;
		case O_CONFIRM_BUDGET_S: {
			char *end = NULL;
			double v;

			errno = 0;
			v = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(v > 0) ||
			    v > AW_CONFIRM_MAX_BUDGET_S)
				return usage_error(
				    "bad --confirm-budget-s '%s': the seconds of "
				    "measuring the confirmations may take in all, more "
				    "than 0 and at most %d",
				    optarg, AW_CONFIRM_MAX_BUDGET_S);
			a->confirm_budget_s = v;
			break;
		}
		case O_CONFIRM_GAP_S: {
			char *end = NULL;
			double v;

			errno = 0;
			v = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(v >= 0) || v > AW_CONFIRM_MAX_GAP_S)
				return usage_error("bad --confirm-gap-s '%s': the seconds between "
				                   "one measurement's end and the next "
				                   "re-measurement, 0 to %d",
				                   optarg, AW_CONFIRM_MAX_GAP_S);
			a->confirm_gap_s = v;
			a->confirm_gap_given = true;
			break;
		}
		case O_BASE:
		case O_HEAD:
			if (!aw_valid_commit(optarg))
				return usage_error("bad %s '%s' (7 to 64 hex digits)",
				                   opt == O_BASE ? "--base" : "--head", optarg);
			*(opt == O_BASE ? &a->base : &a->head) = optarg;
			break;
		case O_ROUNDS: {
			uint64_t n;

			if (aw_parse_u64(optarg, AW_AB_MAX_ROUNDS, &n) || n < AW_AB_MIN_ROUNDS)
				return usage_error(
				    "bad --rounds '%s': %d to %d (fewer than %d rounds cannot give "
				    "a Wilcoxon signed-rank interval at 95%% over the three "
				    "estimands)",
				    optarg, AW_AB_MIN_ROUNDS, AW_AB_MAX_ROUNDS, AW_AB_MIN_ROUNDS);
			a->rounds = (unsigned)n;
			break;
		}
		case O_LAYOUTS:
			rc = count_option("layouts", optarg, AW_AB_MAX_LAYOUTS,
			                  "the loads of each side", &a->layouts);
			if (rc)
				return rc;
			break;
		case O_BUILDS:
			rc = count_option("builds", optarg, AW_AB_MAX_BUILDS,
			                  "the code layouts of each side", &a->builds);
			if (rc)
				return rc;
			break;
		case O_BUDGET_S: {
			char *end = NULL;
			double v;

			errno = 0;
			v = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(v > 0) || v > AW_AB_MAX_BUDGET_S)
				return usage_error("bad --budget-s '%s': the seconds of measuring, "
				                   "more than 0 and at most %d",
				                   optarg, AW_AB_MAX_BUDGET_S);
			a->budget_s = v;
			break;
		}
		case O_GOOD:
		case O_BAD:
			if (!aw_valid_commit(optarg))
				return usage_error("bad %s '%s' (7 to 64 hex digits)",
				                   opt == O_GOOD ? "--good" : "--bad", optarg);
			*(opt == O_GOOD ? &a->good : &a->bad) = optarg;
			break;
		case O_CELLS:
			if (a->n_cells >= AW_BISECT_MAX_GLOBS)
				return usage_error("at most %d --cells", AW_BISECT_MAX_GLOBS);
			if (!*optarg || strlen(optarg) > 256)
				return usage_error(
				    "bad --cells '%s' (a glob of 1 to 256 characters)", optarg);
			a->cells[a->n_cells++] = optarg;
			break;
		case O_BUDGET: {
			uint64_t n;

			if (aw_parse_u64(optarg, AW_BISECT_MAX_BUDGET, &n) || n < 1)
				return usage_error(
				    "bad --budget '%s': the most steps the bisection may take, 1 to %d "
				    "(a budget of 0 could measure nothing)",
				    optarg, AW_BISECT_MAX_BUDGET);
			a->budget = (unsigned)n;
			break;
		}
		case O_FORMAT:
			if (strcmp(optarg, "text") && strcmp(optarg, "json"))
				return usage_error("bad --format '%s' (text or json)", optarg);
			a->output_format = optarg;
			break;
		case O_CPUS:
			a->cpus = optarg;
			break;
		case O_AA:
			a->aa = true;
			break;
		case O_KEEP_LOADS:
			a->keep_loads = true;
			break;
		}
	}
	return 0;
}

/* Loads the config; with `optional`, a missing default file is no error (*loaded false). */
static int load_config(const struct args *a, struct aw_agent_config *cfg, bool optional,
                       bool *loaded)
{
	const char *path = a->config ? a->config : AW_AGENT_DEFAULT_CONFIG;
	char *err = NULL;
	int rc;

	*loaded = false;
	if (optional && !a->config_given && access(path, F_OK) < 0)
		return 0;
	rc = aw_agent_config_load(path, cfg, &err);
	if (rc) {
		aw_error("%s", err);
		free(err);
		return AW_EXIT_USAGE;
	}
	*loaded = true;
	return 0;
}

static int open_agent(struct aw_agent *agent, const struct aw_agent_config *cfg)
{
	char *err = NULL;

	if (aw_http_client_global_init()) {
		aw_error("cannot initialise libcurl");
		return AW_EXIT_FAILURE;
	}
	if (aw_agent_open(agent, cfg, &stop_requested, &err)) {
		aw_error("%s", err);
		free(err);
		return AW_EXIT_USAGE;
	}
	return 0;
}

static int exit_for(enum aw_upload_outcome o)
{
	switch (o) {
	case AW_UPLOAD_STORED:
		return AW_EXIT_OK;
	case AW_UPLOAD_DEFERRED:
		return AW_EXIT_SPOOLED;
	default:
		return AW_EXIT_FAILURE;
	}
}

static int cmd_run(const struct args *a, struct aw_agent_config *cfg)
{
	struct aw_agent_run run = {.project = a->project,
	                           .commit = a->commit,
	                           .ref = a->ref,
	                           .subject = a->subject,
	                           .profile = a->profile,
	                           .trigger = AW_TRIGGER_CI,
	                           .confirm = a->confirm};
	struct aw_agent agent;
	struct aw_result *res = NULL;
	struct aw_runner *kept = NULL;
	struct aw_kernel_id kid;
	enum aw_upload_outcome outcome;
	json_t *meta = NULL;
	char *err = NULL;
	bool loaded;
	int status, rc;

	if (!a->project || !a->commit || !a->ref)
		return usage_error("run needs --project, --commit and --ref");
	if (a->confirm_budget_s > 0 && !a->confirm)
		return usage_error("--confirm-budget-s goes with --confirm N");
	if (a->confirm_gap_given && !a->confirm)
		return usage_error("--confirm-gap-s goes with --confirm N");
	if (!strcmp(a->commit, AW_KERNEL_COMMIT)) {
		/* before the config and the spool: a kernel that names no commit measures nothing
		 */
		if (aw_kernel_commit(&kid, &err)) {
			aw_error("--commit kernel: %s", err);
			free(err);
			return AW_EXIT_USAGE;
		}
		if (kid.dirty)
			aw_warn(
			    "the running kernel was built from a tree with local changes; filed "
			    "under its commit %s all the same",
			    kid.commit);
		run.commit = kid.commit;
		meta = json_pack("{s:{s:s, s:s, s:b}}", "kernel_commit", "commit", kid.commit,
		                 "from", kid.from, "dirty", kid.dirty);
		if (!meta) {
			aw_error("out of memory");
			return AW_EXIT_FAILURE;
		}
		run.meta = meta;
	}
	status = load_config(a, cfg, false, &loaded);
	if (status)
		return status;
	status = open_agent(&agent, cfg);
	if (status)
		return status;
	agent.progress = !a->quiet;
	/* with --confirm the runner stays for the confirmations: calibrated once */
	rc = aw_agent_measure_keep(&agent, &run, &res, a->confirm ? &kept : NULL, &err);
	if (rc) {
		if (rc == -EINTR)
			aw_error("interrupted: nothing was kept");
		else
			aw_error("%s", err);
		status = rc == -EINVAL ? AW_EXIT_USAGE : AW_EXIT_FAILURE;
		goto out;
	}
	rc = aw_agent_submit(&agent, res, &outcome, &err);
	if (rc) {
		aw_error("%s", err);
		status = AW_EXIT_FAILURE;
		goto out;
	}
	printf("%s\n", res->run_id);
	fflush(stdout);
	status = exit_for(outcome);
	if (a->confirm && outcome == AW_UPLOAD_STORED) {
		struct aw_confirm_opts co = {
		    .max_runs = a->confirm,
		    .budget_s =
		        a->confirm_budget_s > 0 ? a->confirm_budget_s : AW_CONFIRM_DEFAULT_BUDGET_S,
		    .gap_s = a->confirm_gap_given ? a->confirm_gap_s : AW_CONFIRM_DEFAULT_GAP_S};
		struct aw_confirm_report rep;

		/* only once the first run is stored can the collector say what is suspect */
		run.reuse = kept;
		rc = aw_agent_confirm(&agent, &run, res, &co, &rep, &err);
		if (rc == -EINTR) {
			aw_error("interrupted during the confirmation");
			status = AW_EXIT_FAILURE;
		} else if (rc) {
			aw_error("%s", err);
			status = AW_EXIT_FAILURE;
		} else if (rep.deferred) {
			status = AW_EXIT_SPOOLED;
		}
	} else if (a->confirm) {
		aw_warn("the run is not uploaded yet: its suspects cannot be confirmed now");
	}
out:
	aw_runner_free(&kept);
	aw_result_free(&res);
	aw_agent_close(&agent);
	json_decref(meta);
	free(err);
	return status;
}

static int cmd_ab(const struct args *a, struct aw_agent_config *cfg)
{
	struct aw_agent_ab ab = {
	    .project = a->project,
	    .ref = a->ref,
	    .subject = a->subject,
	    .base = a->base,
	    .head = a->head,
	    .cpus = a->cpus,
	    .rounds = a->rounds ? a->rounds : AW_AB_DEFAULT_ROUNDS,
	    .layouts = a->layouts, /* 0: the default, at least the builds */
	    .builds = a->builds,
	    .budget_s = a->budget_s > 0 ? a->budget_s : AW_AB_DEFAULT_BUDGET_S,
	    .aa = a->aa,
	    .keep_loads = a->keep_loads,
	    .profile = a->profile,
	};
	enum aw_upload_outcome outcome;
	struct aw_agent agent;
	json_t *doc = NULL;
	char *err = NULL;
	bool loaded;
	int status, rc;

	if (!a->project || !a->subject || !a->base || !a->head)
		return usage_error("ab needs --project, --subject, --base and --head");
	if (!strcmp(a->base, a->head) && !a->aa)
		return usage_error("--base and --head are the same commit: nothing to compare (add "
		                   "--aa for an A/A measurement of two builds of one commit)");
	status = load_config(a, cfg, false, &loaded);
	if (status)
		return status;
	status = open_agent(&agent, cfg);
	if (status)
		return status;
	agent.progress = !a->quiet;
	rc = aw_agent_ab(&agent, &ab, &doc, &err);
	if (rc) {
		if (rc == -EINTR)
			aw_error("interrupted: nothing was kept");
		else
			aw_error("%s", err);
		status = rc == -EINVAL ? AW_EXIT_USAGE : AW_EXIT_FAILURE;
		goto out;
	}
	rc = aw_agent_submit_json(&agent, json_string_value(json_object_get(doc, "ab_id")), doc,
	                          &outcome, &err);
	if (rc) {
		aw_error("%s", err);
		status = AW_EXIT_FAILURE;
		goto out;
	}
	printf("%s\n", json_string_value(json_object_get(doc, "ab_id")));
	fflush(stdout);
	status = exit_for(outcome);
out:
	json_decref(doc);
	aw_agent_close(&agent);
	free(err);
	return status;
}

static int cmd_bisect(const struct args *a, struct aw_agent_config *cfg)
{
	struct aw_bisect_req req = {
	    .subject = a->subject,
	    .good = a->good,
	    .bad = a->bad,
	    .project = a->project,
	    .ref = a->ref,
	    .cells = a->cells,
	    .n_cells = a->n_cells,
	    .budget = a->budget,
	};
	struct aw_agent agent;
	json_t *answer = NULL;
	char *err = NULL, *text = NULL;
	bool loaded;
	int status, rc;

	if (!a->subject || !a->good || !a->bad)
		return usage_error("bisect needs --subject, --good and --bad");
	status = load_config(a, cfg, false, &loaded);
	if (status)
		return status;
	status = open_agent(&agent, cfg);
	if (status)
		return status;
	agent.progress = !a->quiet;
	rc = aw_agent_bisect(&agent, &req, &answer, &err);
	if (rc) {
		if (rc == -EINTR)
			aw_error("interrupted: the steps measured so far are uploaded");
		else
			aw_error("%s", err);
		status = rc == -EINVAL ? AW_EXIT_USAGE : AW_EXIT_FAILURE;
		goto out;
	}
	if (a->output_format && !strcmp(a->output_format, "json"))
		text = json_dumps(answer, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
	else
		text = aw_bisect_text(answer);
	if (!text ||
	    printf("%s%s", text,
	           a->output_format && !strcmp(a->output_format, "json") ? "\n" : "") < 0 ||
	    fflush(stdout)) {
		aw_error("cannot write the answer");
		status = AW_EXIT_FAILURE;
		goto out;
	}
	status = aw_bisect_exit_status(answer);
out:
	free(text);
	json_decref(answer);
	aw_agent_close(&agent);
	free(err);
	return status;
}

static int cmd_kernel_build(const struct args *a, struct aw_agent_config *cfg)
{
	char *err = NULL, *out = NULL;
	bool loaded;
	int status;

	if (!a->out)
		return usage_error("kernel-build needs --out DIR");
	status = load_config(a, cfg, false, &loaded);
	if (status)
		return status;
	if (aw_make_dirs(a->out, 0755) || !(out = realpath(a->out, NULL))) {
		aw_error("cannot create '%s': %s", a->out, strerror(errno));
		return AW_EXIT_FAILURE;
	}
	if (aw_kmod_build_all(cfg, out, &stop_requested, &err)) {
		aw_error("%s", err);
		status = AW_EXIT_FAILURE;
	} else {
		aw_info("built %s/atomwatch/atomwatch.ko%s", out,
		        cfg->refscale_source ? " and refscale/{torture,refscale}.ko" : "");
	}
	free(out);
	free(err);
	return status;
}

static int cmd_daemon(const struct args *a, struct aw_agent_config *cfg)
{
	struct aw_agent agent;
	char *err = NULL;
	bool loaded;
	int status;

	status = load_config(a, cfg, false, &loaded);
	if (status)
		return status;
	status = open_agent(&agent, cfg);
	if (status)
		return status;
	if (aw_agent_daemon(&agent, &err)) {
		aw_error("%s", err);
		status = AW_EXIT_FAILURE;
	}
	aw_agent_close(&agent);
	free(err);
	return status;
}

static int cmd_flush(const struct args *a, struct aw_agent_config *cfg)
{
	struct aw_agent agent;
	size_t stored = 0, rejected = 0, left = 0;
	char *err = NULL;
	bool loaded;
	int status;

	status = load_config(a, cfg, false, &loaded);
	if (status)
		return status;
	status = open_agent(&agent, cfg);
	if (status)
		return status;
	if (aw_agent_flush(&agent, &stored, &rejected, &left, &err)) {
		aw_error("%s", err);
		status = AW_EXIT_FAILURE;
	} else {
		aw_info("%zu uploaded, %zu rejected, %zu left in the spool", stored, rejected,
		        left);
		status = left ? AW_EXIT_SPOOLED : rejected ? AW_EXIT_FAILURE : AW_EXIT_OK;
	}
	aw_agent_close(&agent);
	free(err);
	return status;
}

static int cmd_fingerprint(const struct args *a, struct aw_agent_config *cfg)
{
	struct aw_runner_opts opts = {0};
	json_t *host;
	char *err = NULL, *text;
	bool loaded;
	int status;

	status = load_config(a, cfg, true, &loaded);
	if (status)
		return status;
	if (loaded) {
		opts.host_name = cfg->host_name;
		opts.labels = cfg->labels;
	}
	host = aw_runner_fingerprint(&opts, &err);
	if (!host) {
		aw_error("%s", err);
		free(err);
		return AW_EXIT_FAILURE;
	}
	text = json_dumps(host, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
	json_decref(host);
	if (!text || printf("%s\n", text) < 0 || fflush(stdout)) {
		free(text);
		aw_error("cannot write the fingerprint: %s", strerror(errno));
		return AW_EXIT_FAILURE;
	}
	free(text);
	return AW_EXIT_OK;
}

static int import_upload(struct aw_agent *agent, struct aw_result **docs, size_t n)
{
	char *err = NULL;
	int worst = AW_EXIT_OK;

	for (size_t i = 0; i < n; i++) {
		enum aw_upload_outcome outcome;
		int s;

		if (aw_agent_submit(agent, docs[i], &outcome, &err)) {
			aw_error("%s", err);
			aw_freep(&err);
			s = AW_EXIT_FAILURE;
		} else {
			s = exit_for(outcome);
		}
		if (s == AW_EXIT_FAILURE || (s == AW_EXIT_SPOOLED && worst == AW_EXIT_OK))
			worst = s;
	}
	return worst;
}

static int cmd_import(const struct args *a, struct aw_agent_config *cfg)
{
	struct aw_import_opts io = {0};
	struct aw_import imp;
	struct aw_result **docs = NULL;
	size_t n = 0, cells = 0, len;
	json_t *out = NULL;
	char *text = NULL, *err = NULL, *copy = NULL, *dump = NULL;
	struct aw_agent agent;
	const char *path;
	bool percpu, loaded, opened = false;
	int status = AW_EXIT_FAILURE, rc;

	if (!a->format || !a->file)
		return usage_error("import needs a format (percpu-bench or refscale) and a FILE");
	percpu = !strcmp(a->format, "percpu-bench") || !strcmp(a->format, "percpu_bench");
	if (!percpu && strcmp(a->format, "refscale"))
		return usage_error("unknown import format '%s' (percpu-bench or refscale)",
		                   a->format);
	if (!a->host || !a->project || !a->commit)
		return usage_error("import needs --host, --project and --commit");
	aw_import_init(&imp, percpu ? "percpu_bench" : "refscale");
	if (a->upload) {
		/* a config problem is found before anything is written */
		status = load_config(a, cfg, false, &loaded);
		if (!status)
			status = open_agent(&agent, cfg);
		if (status)
			goto out;
		opened = true;
		status = AW_EXIT_FAILURE;
	}
	path = strcmp(a->file, "-") ? a->file : "/dev/stdin";
	if (aw_read_file(path, AW_IMPORT_LIMIT, &text, &len, &err)) {
		aw_error("%s", err);
		goto out;
	}
	rc = percpu ? aw_percpu_bench_parse(text, len, &imp) : aw_refscale_parse(text, len, &imp);
	if (rc) {
		aw_error("cannot parse '%s': %s", a->file, strerror(-rc));
		goto out;
	}
	copy = strdup(a->file);
	io.host = a->host;
	io.project = a->project;
	io.commit = a->commit;
	io.ref = a->ref ? a->ref : "import";
	io.arch = a->arch ? a->arch : percpu ? "aarch64" : "unknown";
	io.cpu_model = a->cpu_model ? a->cpu_model : "unknown";
	io.labels = json_object_size(a->labels) ? a->labels : NULL;
	io.source = copy ? basename(copy) : NULL;
	rc = aw_import_documents(&imp, &io, &docs, &n, &err);
	for (size_t i = 0; i < n; i++)
		cells += docs[i]->n_cells;
	fprintf(stderr,
	        AW_AGENT_PROG ": %s: %llu lines read, %llu skipped, %zu cells in %zu document%s\n",
	        a->file, (unsigned long long)imp.lines, (unsigned long long)imp.skipped, cells, n,
	        n == 1 ? "" : "s");
	if (rc) {
		aw_error("%s: %s", a->file, err);
		goto out;
	}
	if (n == 1) {
		out = aw_result_to_json(docs[0]);
	} else {
		out = json_array();
		for (size_t i = 0; out && i < n; i++)
			if (json_array_append_new(out, aw_result_to_json(docs[i]))) {
				json_decref(out);
				out = NULL;
			}
	}
	dump = out ? json_dumps(out, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) : NULL;
	if (!dump) {
		aw_error("out of memory");
		goto out;
	}
	if (a->out) {
		char *with_nl = aw_asprintf("%s\n", dump);

		if (!with_nl || aw_write_file_atomic(a->out, with_nl, strlen(with_nl), &err)) {
			aw_error("%s", with_nl ? err : "out of memory");
			free(with_nl);
			goto out;
		}
		free(with_nl);
	} else if (printf("%s\n", dump) < 0 || fflush(stdout)) {
		aw_error("cannot write the output: %s", strerror(errno));
		goto out;
	}
	status = a->upload ? import_upload(&agent, docs, n) : AW_EXIT_OK;
out:
	if (opened)
		aw_agent_close(&agent);
	for (size_t i = 0; i < n; i++)
		aw_result_free(&docs[i]);
	free(docs);
	json_decref(out);
	aw_import_release(&imp);
	free(dump);
	free(copy);
	free(text);
	free(err);
	return status;
}

int main(int argc, char **argv)
{
	struct aw_agent_config cfg;
	struct args a = {0};
	int status;

	memset(&cfg, 0, sizeof(cfg));
	aw_log_init(AW_AGENT_PROG, AW_LOG_INFO);
	install_signals();
	a.labels = json_object();
	if (!a.labels) {
		aw_error("out of memory");
		return AW_EXIT_FAILURE;
	}
	if (argc > 1 && argv[1][0] != '-') {
		a.command = argv[1];
		argv[1] = argv[0];
		argc--;
		argv++;
	}
	status = parse_args(argc, argv, &a);
	if (status) {
		status = status < 0 ? AW_EXIT_OK : status;
		goto out;
	}
	if (!a.command) {
		status = usage_error("no command given");
		goto out;
	}
	if (!strcmp(a.command, "import")) {
		if (optind < argc)
			a.format = argv[optind++];
		if (optind < argc)
			a.file = argv[optind++];
	}
	if (optind < argc) {
		status = usage_error("unexpected argument '%s'", argv[optind]);
		goto out;
	}
	if (!strcmp(a.command, "run"))
		status = cmd_run(&a, &cfg);
	else if (!strcmp(a.command, "ab"))
		status = cmd_ab(&a, &cfg);
	else if (!strcmp(a.command, "bisect"))
		status = cmd_bisect(&a, &cfg);
	else if (!strcmp(a.command, "daemon"))
		status = cmd_daemon(&a, &cfg);
	else if (!strcmp(a.command, "flush"))
		status = cmd_flush(&a, &cfg);
	else if (!strcmp(a.command, "fingerprint"))
		status = cmd_fingerprint(&a, &cfg);
	else if (!strcmp(a.command, "import"))
		status = cmd_import(&a, &cfg);
	else if (!strcmp(a.command, "kernel-build"))
		status = cmd_kernel_build(&a, &cfg);
	else
		status = usage_error("unknown command '%s' (run, ab, bisect, daemon, flush, "
		                     "fingerprint, kernel-build or import)",
		                     a.command);
out:
	aw_agent_config_release(&cfg);
	json_decref(a.labels);
	aw_http_client_global_cleanup();
	return status;
}
