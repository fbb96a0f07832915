/* The agent config reader: a full file with every section, defaults, relative paths, and every
 * kind of mistake reported as "file:line:col: message"; the token file. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "aw/util.h"
#include "config.h"

static const char full[] = "collector:\n"
                           "  url: https://collector.example:8443/\n"
                           "  token_file: secrets/agent.token\n"
                           "  ca_file: /etc/ca.pem\n"
                           "  connect_timeout: 5s\n"
                           "  timeout: 2m\n"
                           "  retries: 7\n"
                           "  backoff: 250ms\n"
                           "  backoff_max: 1m\n"
                           "  poll_wait: 30\n"
                           "host:\n"
                           "  name: graviton4-a\n"
                           "  labels: {cloud: aws, rack: \"b 7\"}\n"
                           "spool:\n"
                           "  dir: spool\n"
                           "  flush_every: 90s\n"
                           "matrix:\n"
                           "  profile: quick\n"
                           "  cpus: 0,2-3\n"
                           "  ops: [llsc, stadd]\n"
                           "  samples: 50\n"
                           "schedule:\n"
                           "  every: 24h\n"
                           "  on_change: no\n"
                           "  check_every: 1m\n"
                           "  confirm_gap: 45s\n"
                           "  project: plat\n"
                           "  ref: refs/heads/sched\n"
                           "  commit: 0123abcd\n"
                           "subjects:\n"
                           "  mylib:\n"
                           "    build: make lib\n"
                           "    dir: src\n"
                           "    library: src/libmy.so\n"
                           "    env: {CC: gcc, OPT_LEVEL: \"2\"}\n"
                           "    cpus: first\n"
                           "    timeout: 10m\n"
                           "    ab_builds: 4\n"
                           "  other:\n"
                           "    library: /opt/libother.so\n"
                           "kernel:\n"
                           "  refscale:\n"
                           "    types: [srcu-fast, srcu]\n"
                           "    loops: 500\n"
                           "    nruns: 7\n"
                           "    timeout: 30s\n"
                           "    kmsg: fake.kmsg\n"
                           "    modprobe: /sbin/modprobe\n";

static void test_full(void **state)
{
	struct aw_agent_config cfg;
	const struct aw_agent_subject *s;
	char *err = NULL, names[64];

	(void)state;
	assert_int_equal(
	    aw_agent_config_parse(full, strlen(full), "agent.yaml", "/base", &cfg, &err), 0);
	assert_null(err);
	assert_string_equal(cfg.url, "https://collector.example:8443");
	assert_string_equal(cfg.token_file, "/base/secrets/agent.token");
	assert_string_equal(cfg.ca_file, "/etc/ca.pem");
	assert_int_equal(cfg.connect_timeout_ms, 5000);
	assert_int_equal(cfg.timeout_ms, 120000);
	assert_int_equal(cfg.retries, 7);
	assert_int_equal(cfg.backoff_ms, 250);
	assert_int_equal(cfg.backoff_max_ms, 60000);
	assert_int_equal(cfg.poll_wait_ms, 30000);
	assert_string_equal(cfg.host_name, "graviton4-a");
	assert_string_equal(json_string_value(json_object_get(cfg.labels, "rack")), "b 7");
	assert_int_equal(json_object_size(cfg.labels), 2);
	assert_string_equal(cfg.spool_dir, "/base/spool");
	assert_int_equal(cfg.flush_every_ms, 90000);
	assert_string_equal(cfg.profile, "quick");
	assert_string_equal(cfg.cpus, "0,2-3");
	assert_string_equal(cfg.ops, "llsc,stadd");
	assert_int_equal(cfg.samples, 50);
	assert_int_equal(cfg.schedule_every_ms, 24 * 3600 * 1000);
	assert_int_equal(cfg.confirm_gap_ms, 45000);
	assert_false(cfg.on_change);
	assert_string_equal(cfg.schedule_ref, "refs/heads/sched");
	assert_string_equal(cfg.schedule_commit, "0123abcd");
	assert_int_equal(cfg.n_subjects, 2);
	s = aw_agent_config_subject(&cfg, "mylib");
	assert_non_null(s);
	assert_string_equal(s->build, "make lib");
	assert_string_equal(s->dir, "/base/src");
	assert_string_equal(s->library, "/base/src/libmy.so");
	assert_int_equal(s->n_env, 2);
	assert_string_equal(s->env[0], "CC=gcc");
	assert_string_equal(s->env[1], "OPT_LEVEL=2");
	assert_int_equal(s->build_timeout_ms, 600000);
	assert_int_equal(s->ab_builds, 4);
	s = aw_agent_config_subject(&cfg, "other");
	assert_non_null(s);
	assert_null(s->build);
	assert_string_equal(s->dir, "/base"); /* the config's directory */
	assert_int_equal(s->build_timeout_ms, 1800000);
	assert_int_equal(s->ab_builds, 1);
	assert_null(aw_agent_config_subject(&cfg, "nosuch"));
	aw_agent_config_subject_names(&cfg, names, sizeof(names));
	assert_string_equal(names, "mylib, other");
	assert_int_equal(cfg.n_refscale_types, 2);
	assert_string_equal(cfg.refscale_types[1], "srcu");
	assert_int_equal(cfg.refscale_loops, 500);
	assert_int_equal(cfg.refscale_nruns, 7);
	assert_string_equal(cfg.kmsg_path, "/base/fake.kmsg");
	assert_string_equal(cfg.modprobe, "/sbin/modprobe");
	assert_string_equal(cfg.rmmod, "rmmod");
	aw_agent_config_release(&cfg);
}

static void test_defaults(void **state)
{
	static const char minimal[] = "collector: {url: 'http://127.0.0.1:1', token_file: /t}\n"
	                              "spool: {dir: /var/spool/aw}\n";
	struct aw_agent_config cfg;
	char *err = NULL;

	(void)state;
	assert_int_equal(
	    aw_agent_config_parse(minimal, strlen(minimal), "m.yaml", "/b", &cfg, &err), 0);
	assert_int_equal(cfg.retries, 5);
	assert_int_equal(cfg.connect_timeout_ms, 10000);
	assert_null(cfg.host_name);
	assert_int_equal(json_object_size(cfg.labels), 0);
	assert_null(cfg.ca_file);
	assert_null(cfg.profile);
	assert_int_equal(cfg.schedule_every_ms, 0);
	assert_int_equal(cfg.confirm_gap_ms, 30000); /* AW_CONFIRM_DEFAULT_GAP_S */
	assert_true(cfg.on_change);
	assert_string_equal(cfg.schedule_project, "platform");
	assert_string_equal(cfg.schedule_ref, "schedule");
	assert_null(cfg.schedule_commit);
	assert_int_equal(cfg.n_subjects, 0);
	assert_int_equal(cfg.n_refscale_types, 0);
	assert_string_equal(cfg.kmsg_path, "/dev/kmsg");
	assert_null(cfg.bisect_step);
	assert_string_equal(cfg.bisect_subject, "kernel");
	assert_int_equal(cfg.bisect_timeout_ms, 2 * 3600 * 1000);
	aw_agent_config_release(&cfg);
}

/* bisect: the owner's step command, the repository it lists and its names */
static void test_bisect_section(void **state)
{
	static const char text[] = "collector: {url: 'http://127.0.0.1:1', token_file: /t}\n"
	                           "spool: {dir: /var/spool/aw}\n"
	                           "bisect:\n"
	                           "  step: sh step.sh\n"
	                           "  repo: linux\n"
	                           "  subject: linux\n"
	                           "  host: vm-guest\n"
	                           "  timeout: 3h\n";
	struct aw_agent_config cfg;
	char *err = NULL;

	(void)state;
	assert_int_equal(aw_agent_config_parse(text, strlen(text), "b.yaml", "/b", &cfg, &err), 0);
	assert_string_equal(cfg.bisect_step, "sh step.sh");
	assert_string_equal(cfg.bisect_repo, "/b/linux");
	assert_string_equal(cfg.bisect_subject, "linux");
	assert_string_equal(cfg.bisect_host, "vm-guest");
	assert_int_equal(cfg.bisect_timeout_ms, 3 * 3600 * 1000);
	aw_agent_config_release(&cfg);
}

/* Each bad file and the message it must give (a prefix of it). */
static const struct {
	const char *text;
	const char *message;
} bad[] = {
    {"collector:\n  url: http://x\n  token_file: /t\n  tokn: abc\nspool: {dir: /s}\n",
     "bad.yaml:4:3: unknown key 'tokn' in 'collector' (expected: url, token_file"},
    {"collector: {url: http://x, token_file: /t}\nspool: {dir: /s}\nspoool: {}\n",
     "bad.yaml:3:1: unknown key 'spoool' in 'top level'"},
    {"collector:\n  url: http://x\n  url: http://y\n  token_file: /t\nspool: {dir: /s}\n",
     "bad.yaml:3:3: duplicate key 'url' in 'collector'"},
    {"collector:\n  url: http://x\n  token_file: /t\n  timeout: soon\nspool: {dir: /s}\n",
     "bad.yaml:4:12: 'timeout' must be a duration"},
    {"collector:\n  url: http://x\n  token_file: /t\n  retries: 1000\nspool: {dir: /s}\n",
     "bad.yaml:4:12: 'retries' must be a whole number from 0 to 100, got '1000'"},
    {"collector:\n  url: ftp://x\n  token_file: /t\nspool: {dir: /s}\n",
     "bad.yaml:2:8: 'url' must start with http:// or https://"},
    {"collector:\n  token_file: /t\nspool: {dir: /s}\n",
     "bad.yaml:2:3: 'url' is required in 'collector'"},
    {"spool: {dir: /s}\n", "bad.yaml:1:1: 'collector' is required in 'top level'"},
    {"collector:\n  url: [http://x]\n  token_file: /t\nspool: {dir: /s}\n",
     "bad.yaml:2:8: 'url' must be a scalar, not a list"},
    {"collector: {url: http://x, token_file: /t}\nspool: {dir: /s}\nhost:\n  labels: {\"bad "
     "label\": x}\n",
     "bad.yaml:4:12: bad label name 'bad label'"},
    {"collector: {url: http://x, token_file: /t}\nspool: {dir: /s}\nsubjects:\n  \"my lib\":\n"
     "    library: /l.so\n",
     "bad.yaml:4:3: bad subject name 'my lib'"},
    {"collector: {url: http://x, token_file: /t}\nspool: {dir: /s}\nsubjects:\n  lib:\n"
     "    build: make\n",
     "bad.yaml:5:5: 'library' is required in 'lib'"},
    {"collector: {url: http://x, token_file: /t}\nspool: {dir: /s}\nsubjects:\n  lib:\n"
     "    library: /l.so\n    env: {1BAD: x}\n",
     "bad.yaml:6:11: bad environment variable name '1BAD'"},
    {"collector: {url: http://x, token_file: /t}\nspool: {dir: /s}\nsubjects:\n  lib:\n"
     "    library: /l.so\n    ab_builds: 0\n",
     "bad.yaml:6:16: 'ab_builds' must be a whole number from 1 to 8, got '0'"},
    {"collector: {url: http://x, token_file: /t}\nspool: {dir: /s}\nsubjects:\n  lib:\n"
     "    library: /l.so\n    ab_builds: many\n",
     "bad.yaml:6:16: 'ab_builds' must be a whole number from 1 to 8, got 'many'"},
    {"collector: {url: http://x, token_file: /t}\nspool: {dir: /s}\nkernel:\n  refscale:\n"
     "    types: [srcu, srcu]\n",
     "bad.yaml:5:19: 'srcu' is listed twice in 'types'"},
    {"collector: {url: http://x, token_file: /t}\nspool: {dir: /s}\nschedule: {commit: xyz}\n",
     "bad.yaml:3:20: 'commit' must be a commit id of 7 to 64 hex digits, got 'xyz'"},
    {"collector: {url: http://x, token_file: /t}\nspool: {dir: /s}\nschedule: {on_change: maybe}\n",
     "bad.yaml:3:23: expected true or false, got 'maybe'"},
    {"collector: {url: http://x, token_file: /t}\nspool: {dir: /s}\nschedule: {confirm_gap: 2h}\n",
     "bad.yaml:3:25: 'confirm_gap' must be between 0 ms and 3600000 ms, got '2h'"},
    {"collector: {url: http://x, token_file: /t}\nspool: {dir: /s}\nschedule: {confirm_gap: -1}\n",
     "bad.yaml:3:25: 'confirm_gap' must be a duration"},
    {"collector: {url: http://x, token_file: /t\nspool: {dir: /s}\n", "bad.yaml:2:"},
    {"- just\n- a list\n", "bad.yaml:1:1: the top level must be a mapping, not a list"},
    {"", "bad.yaml:1:1: the file is empty"},
    {"collector: {url: http://x, token_file: /t}\nspool: {dir: /s}\nsubjects:\n"
     "  atomwatch-control:\n    library: /l.so\n",
     "bad.yaml:4:3: subject name 'atomwatch-control' is reserved"},
    {"collector: {url: http://x, token_file: /t}\nspool: {dir: /s}\nbisect: {stepp: x}\n",
     "bad.yaml:3:10: unknown key 'stepp' in 'bisect'"},
    {"collector: {url: http://x, token_file: }\nspool: {dir: /s}\n",
     "bad.yaml:1:40: 'token_file' needs a value"},
};

static void test_errors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct aw_agent_config cfg;
		char *err = NULL;
		int rc = aw_agent_config_parse(bad[i].text, strlen(bad[i].text), "bad.yaml", "/b",
		                               &cfg, &err);

		if (rc == 0 || !err || strncmp(err, bad[i].message, strlen(bad[i].message)))
			fail_msg("case %zu: rc %d, got '%s', want '%s...'", i, rc,
			         err ? err : "(none)", bad[i].message);
		free(err);
		aw_agent_config_release(&cfg);
	}
}

static void test_load_file_and_token(void **state)
{
	char dir[] = "/tmp/aw-agent-config-XXXXXX", path[256], tok[256];
	struct aw_agent_config cfg;
	char *err = NULL, *token = NULL;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/agent.yaml", dir);
	snprintf(tok, sizeof(tok), "%s/agent.token", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("collector: {url: http://x, token_file: agent.token}\nspool: {dir: sp}\n", f);
	fclose(f);
	assert_int_equal(aw_agent_config_load(path, &cfg, &err), 0);
	assert_string_equal(cfg.token_file, tok);

	/* missing file: the error names it, never a content */
	assert_int_equal(aw_agent_read_token(&cfg, &token, &err), -ENOENT);
	assert_non_null(strstr(err, "agent.token"));
	aw_freep(&err);
	f = fopen(tok, "w");
	fputs("  s3cr3t-token_value  \n", f);
	fclose(f);
	chmod(tok, 0600);
	assert_int_equal(aw_agent_read_token(&cfg, &token, &err), 0);
	assert_string_equal(token, "s3cr3t-token_value");
	aw_freep(&token);
	f = fopen(tok, "w");
	fputs("two words\n", f);
	fclose(f);
	assert_int_equal(aw_agent_read_token(&cfg, &token, &err), -EINVAL);
	assert_null(strstr(err, "two"));
	aw_freep(&err);
	f = fopen(tok, "w");
	fclose(f);
	assert_int_equal(aw_agent_read_token(&cfg, &token, &err), -EINVAL);
	assert_non_null(strstr(err, "empty"));
	aw_freep(&err);
	aw_agent_config_release(&cfg);

	/* a missing config file */
	snprintf(path, sizeof(path), "%s/nosuch.yaml", dir);
	assert_int_equal(aw_agent_config_load(path, &cfg, &err), -ENOENT);
	assert_non_null(strstr(err, "nosuch.yaml"));
	aw_freep(&err);
	aw_agent_config_release(&cfg);
	unlink(tok);
	snprintf(path, sizeof(path), "%s/agent.yaml", dir);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_full),
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_bisect_section),
	    cmocka_unit_test(test_load_file_and_token),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
