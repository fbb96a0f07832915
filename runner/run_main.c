/* atomwatch-run: measure the fixed matrix on this host and print a table, CSV or the result
 * document. Exit status: 0 every cell measured or skipped, 1 a cell failed or the run broke,
 * 2 a usage or configuration error (nothing is written then). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "atomwatch/runner.h"
#include "aw/buf.h"
#include "aw/log.h"
#include "aw/util.h"
#include "internal.h"

#define EXIT_USAGE 2
#define OUT_LIMIT  (256u << 20)

static volatile int stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(FILE *f)
{
	fputs(
	    "usage: atomwatch-run [options]\n"
	    "Measure per-CPU atomics and SRCU-style readers on this host.\n\n"
	    "  --profile NAME     quick, default or full (default: default)\n"
	    "  --format FMT       table, json or csv (default: table)\n"
	    "  --out FILE         write to FILE (atomically) instead of stdout\n"
	    "  --cpus LIST        'all' or a CPU list such as 0,2-3 (default: the profile's)\n"
	    "  --ops LIST         only these ops or readers, comma-separated\n"
	    "  --samples N        batches per cell (default: the profile's)\n"
	    "  --matrix FILE      matrix file (default: the built-in configs/matrix.yaml)\n"
	    "  --list             print the cells that would run, with skips and why, and exit\n"
	    "  --host NAME        host name in the result (default: this host's name)\n"
	    "  --label KEY=VALUE  host label, repeatable\n"
	    "  --project NAME     project of the result document (default: local)\n"
	    "  --commit SHA       commit measured (default: none)\n"
	    "  --ref REF          ref measured (default: local)\n"
	    "  --clock            time with CLOCK_MONOTONIC_RAW instead of the cycle counter\n"
	    "  --no-reference     do not measure the reference kernels beside each cell\n"
	    "  --quiet            no progress on stderr\n"
	    "  --help             this text\n"
	    "  --version          the version\n\n"
	    "Exit status: 0 measured, 1 a cell failed or the run broke, 2 usage or config error.\n",
	    f);
}

/* Fails early, before minutes of measuring, when --out cannot be written. */
static int check_writable(const char *path, char **err)
{
	char *copy = strdup(path), *probe = NULL;
	int fd, rc = 0;

	if (!copy)
		return -ENOMEM;
	probe = aw_asprintf("%s/.atomwatch-probe.XXXXXX", dirname(copy));
	if (!probe) {
		free(copy);
		return -ENOMEM;
	}
	fd = mkstemp(probe);
	if (fd < 0) {
		rc = aw_errorf(err, -errno, "cannot write '%s': %s", path, strerror(errno));
	} else {
		close(fd);
		unlink(probe);
	}
	free(probe);
	free(copy);
	return rc;
}

static int add_label(json_t *labels, const char *kv, char **err)
{
	const char *eq = strchr(kv, '=');
	char key[AW_NAME_MAX + 1];

	if (!eq || eq == kv || (size_t)(eq - kv) > AW_NAME_MAX)
		return aw_errorf(err, -EINVAL, "bad label '%s' (expected KEY=VALUE)", kv);
	memcpy(key, kv, (size_t)(eq - kv));
	key[eq - kv] = '\0';
	if (!aw_valid_name(key))
		return aw_errorf(err, -EINVAL, "bad label name '%s' ([A-Za-z0-9._-]{1,64})", key);
	if (json_object_set_new(labels, key, json_string(eq + 1)))
		return aw_errorf(err, -EINVAL, "bad label value in '%s' (must be UTF-8)", kv);
	return 0;
}

int main(int argc, char **argv)
{
	enum {
		O_PROFILE = 256,
		O_FORMAT,
		O_OUT,
		O_CPUS,
		O_OPS,
		O_SAMPLES,
		O_MATRIX,
		O_LIST,
		O_HOST,
		O_LABEL,
		O_PROJECT,
		O_COMMIT,
		O_REF,
		O_CLOCK,
		O_NO_REFERENCE,
		O_QUIET,
		O_HELP,
		O_VERSION
	};
	static const struct option longopts[] = {
	    {"profile", required_argument, NULL, O_PROFILE},
	    {"format", required_argument, NULL, O_FORMAT},
	    {"out", required_argument, NULL, O_OUT},
	    {"cpus", required_argument, NULL, O_CPUS},
	    {"ops", required_argument, NULL, O_OPS},
	    {"samples", required_argument, NULL, O_SAMPLES},
	    {"matrix", required_argument, NULL, O_MATRIX},
	    {"list", no_argument, NULL, O_LIST},
	    {"host", required_argument, NULL, O_HOST},
	    {"label", required_argument, NULL, O_LABEL},
	    {"project", required_argument, NULL, O_PROJECT},
	    {"commit", required_argument, NULL, O_COMMIT},
	    {"ref", required_argument, NULL, O_REF},
	    {"clock", no_argument, NULL, O_CLOCK},
	    {"no-reference", no_argument, NULL, O_NO_REFERENCE},
	    {"quiet", no_argument, NULL, O_QUIET},
	    {"help", no_argument, NULL, O_HELP},
	    {"version", no_argument, NULL, O_VERSION},
	    {NULL, 0, NULL, 0},
	};
	struct aw_runner_opts opts = {0};
	struct aw_runner *runner = NULL;
	struct aw_result *res = NULL;
	struct aw_progress prog = {0};
	struct aw_buf out;
	const char *format = "table", *out_path = NULL, *project = "local", *commit = NULL;
	const char *ref = "local";
	json_t *labels = json_object(), *doc = NULL;
	char *err = NULL;
	int list = 0, quiet = 0, opt, status = EXIT_USAGE;
	uint64_t samples;

	aw_log_init("atomwatch-run", AW_LOG_INFO);
	aw_buf_init(&out, OUT_LIMIT);
	if (!labels)
		goto oom;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case O_PROFILE:
			opts.profile = optarg;
			break;
		case O_FORMAT:
			format = optarg;
			if (strcmp(format, "table") && strcmp(format, "json") &&
			    strcmp(format, "csv")) {
				aw_error("unknown format '%s' (table, json or csv)", format);
				goto out;
			}
			break;
		case O_OUT:
			out_path = optarg;
			break;
		case O_CPUS:
			opts.cpus = optarg;
			break;
		case O_OPS:
			opts.ops = optarg;
			break;
		case O_SAMPLES:
			if (aw_parse_u64(optarg, 1000000, &samples) || samples == 0) {
				aw_error("bad --samples '%s' (an integer from 1 to 1000000)",
				         optarg);
				goto out;
			}
			opts.samples = (uint32_t)samples;
			break;
		case O_MATRIX:
			opts.matrix_path = optarg;
			break;
		case O_LIST:
			list = 1;
			break;
		case O_HOST:
			opts.host_name = optarg;
			break;
		case O_LABEL:
			if (add_label(labels, optarg, &err)) {
				aw_error("%s", err);
				goto out;
			}
			break;
		case O_PROJECT:
			if (!aw_valid_name(optarg)) {
				aw_error("bad project name '%s' ([A-Za-z0-9._-]{1,64})", optarg);
				goto out;
			}
			project = optarg;
			break;
		case O_COMMIT:
			if (!aw_valid_commit(optarg)) {
				aw_error("bad commit '%s' (7 to 64 hex digits)", optarg);
				goto out;
			}
			commit = optarg;
			break;
		case O_REF:
			if (!aw_valid_ref(optarg)) {
				aw_error("bad ref '%s'", optarg);
				goto out;
			}
			ref = optarg;
			break;
		case O_CLOCK:
			opts.force_clock = true;
			break;
		case O_NO_REFERENCE:
			opts.no_reference = true;
			break;
		case O_QUIET:
			quiet = 1;
			break;
		case O_HELP:
			usage(stdout);
			status = 0;
			goto out;
		case O_VERSION:
			printf("atomwatch-run %s\n", aw_runner_version());
			status = 0;
			goto out;
		default:
			if (optopt)
				aw_error("option '%s' needs a value (see --help)",
				         argv[optind - 1]);
			else
				aw_error("unknown option '%s' (see --help)", argv[optind - 1]);
			goto out;
		}
	}
	if (optind < argc) {
		aw_error("unexpected argument '%s' (see --help)", argv[optind]);
		goto out;
	}
	if (out_path && check_writable(out_path, &err)) {
		aw_error("%s", err);
		goto out;
	}
	opts.labels = labels;
	opts.stop = &stop_requested;
	if (!quiet) {
		opts.progress = aw_progress_cb;
		opts.progress_arg = &prog;
	}
	runner = aw_runner_new(&opts, &err);
	if (!runner) {
		aw_error("%s", err);
		goto out;
	}
	if (list) {
		struct aw_plan_info info;

		for (size_t i = 0; aw_runner_plan(runner, i, &info); i++)
			printf("%-11s %-48s %s%s\n", info.section, info.key,
			       info.skipped ? "skipped: " : "supported",
			       info.skipped ? info.reason : "");
		status = 0;
		goto out;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	aw_progress_init(&prog, "atomwatch-run", runner);
	status = 1;
	res = aw_runner_run(runner, &err);
	if (!res) {
		aw_error("%s", err);
		goto out;
	}
	if (aw_set_str(&res->project, project) || aw_set_str(&res->commit, commit) ||
	    aw_set_str(&res->ref, ref))
		goto oom;
	if (!strcmp(format, "json")) {
		char *text;

		doc = aw_result_to_json(res);
		text = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) : NULL;
		if (!text || aw_buf_puts(&out, text) || aw_buf_puts(&out, "\n")) {
			free(text);
			goto oom;
		}
		free(text);
	} else if (!strcmp(format, "csv")) {
		if (aw_output_csv(res, &out))
			goto oom;
	} else if (aw_output_table(res, &out)) {
		goto oom;
	}
	if (out_path) {
		if (aw_write_file_atomic(out_path, out.data, out.len, &err)) {
			aw_error("%s", err);
			goto out;
		}
	} else if (fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout)) {
		aw_error("cannot write the output: %s", strerror(errno));
		goto out;
	}
	status = 0;
	for (size_t i = 0; i < res->n_cells; i++) {
		if (res->cells[i].status == AW_CELL_FAILED) {
			aw_error("cell '%s' failed: %s", res->cells[i].key, res->cells[i].reason);
			status = 1;
		}
	}
	goto out;
oom:
	aw_error("out of memory");
	status = 1;
out:
	json_decref(doc);
	json_decref(labels);
	aw_result_free(&res);
	aw_runner_free(&runner);
	aw_buf_release(&out);
	free(err);
	return status;
}
