/* atomwatch-ci's command line without a collector: every usage error is one line and exit
 * status 3, a token is never accepted on the command line (and never echoed), the token file
 * and the environment are read and checked, and the wait's polling delays double up to their
 * cap. Talking to a collector is tested by tests/cli/test_ci_cli.py and tests/e2e. */
#include <errno.h>
#include <fcntl.h>
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
#include "ci.h"

#define SHA "b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f80"

static char tmpdir[] = "/tmp/aw-ci-cli-XXXXXX";

/* Runs aw_ci_main with a NULL-terminated argument list; returns its status and what it wrote
 * on stderr (and stdout) in *out (caller frees). */
static int run_ci(char **out, ...)
{
	char *argv[64], path[256], *text = NULL, *err = NULL;
	int argc = 0, saved_err, saved_out, fd, rc;
	size_t len;
	va_list ap;

	argv[argc++] = (char *)(uintptr_t) "atomwatch-ci";
	va_start(ap, out);
	for (char *a = va_arg(ap, char *); a && argc < 63; a = va_arg(ap, char *))
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;

	snprintf(path, sizeof(path), "%s/out", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	fflush(stdout);
	fflush(stderr);
	saved_err = dup(2);
	saved_out = dup(1);
	dup2(fd, 2);
	dup2(fd, 1);
	rc = aw_ci_main(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(saved_err, 2);
	dup2(saved_out, 1);
	close(saved_err);
	close(saved_out);
	close(fd);
	assert_int_equal(aw_read_file(path, 1 << 20, &text, &len, &err), 0);
	*out = text;
	return rc;
}

static void expect(int rc, char *out, int want_rc, const char *want)
{
	if (rc != want_rc || !strstr(out, want))
		fail_msg("got %d '%s', want %d with '%s'", rc, out, want_rc, want);
	free(out);
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(tmpdir))
		return -1;
	unsetenv("ATOMWATCH_TOKEN");
	unsetenv("ATOMWATCH_COLLECTOR");
	unsetenv("GITHUB_ACTIONS");
	unsetenv("GITHUB_STEP_SUMMARY");
	return 0;
}

static int teardown(void **state)
{
	char cmd[512];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_usage_errors(void **state)
{
	char *out;
	int rc;

	(void)state;
	rc = run_ci(&out, NULL);
	expect(rc, out, 3, "a command is needed: trigger, wait, gate or compare (see --help)");
	rc = run_ci(&out, "frobnicate", NULL);
	expect(rc, out, 3, "unknown command 'frobnicate'");
	rc = run_ci(&out, "gate", "--frob", NULL);
	expect(rc, out, 3, "unknown option '--frob'");
	rc = run_ci(&out, "gate", "--project", NULL);
	expect(rc, out, 3, "option '--project' needs a value");
	rc = run_ci(&out, "gate", "--collector", "http://c:1", "--commit", SHA, NULL);
	expect(rc, out, 3, "'gate' needs --project");
	rc = run_ci(&out, "gate", "--collector", "http://c:1", "--project", "p", NULL);
	expect(rc, out, 3, "'gate' needs --commit");
	rc = run_ci(&out, "gate", "--project", "p", "--commit", SHA, NULL);
	expect(rc, out, 3, "no collector: use --collector URL or set ATOMWATCH_COLLECTOR");
	rc = run_ci(&out, "gate", "--collector", "ftp://c", NULL);
	expect(rc, out, 3,
	       "bad collector URL in --collector: it must start with http:// or https://");
	rc = run_ci(&out, "gate", "--collector", "http://c:1/?x", NULL);
	expect(rc, out, 3, "no spaces, controls, query or fragment");
	rc = run_ci(&out, "gate", "--commit", "not-hex", NULL);
	expect(rc, out, 3, "bad commit 'not-hex' in --commit (7 to 64 hex digits)");
	rc = run_ci(&out, "gate", "--project", "a b", NULL);
	expect(rc, out, 3, "bad project name 'a b'");
	rc = run_ci(&out, "gate", "--baseline-ref", "a..b", NULL);
	expect(rc, out, 3, "bad ref 'a..b'");
	rc = run_ci(&out, "gate", "--hosts", "a,,b", NULL);
	expect(rc, out, 3, "bad host name '' in --hosts");
	rc = run_ci(&out, "gate", "--hosts", "a,b<c", NULL);
	expect(rc, out, 3, "bad host name 'b<c' in --hosts");
	rc = run_ci(&out, "gate", "--hosts", "a,b,a", NULL);
	expect(rc, out, 3, "host 'a' is named twice in --hosts");
	rc = run_ci(&out, "gate", "--hosts", "a,", NULL);
	expect(rc, out, 3, "--hosts ends with a comma");
	rc = run_ci(&out, "gate", "--hosts", "all", NULL);
	expect(rc, out, 3, "--hosts all is for trigger only");
	rc = run_ci(&out, "gate", "--hosts", "a", "--hosts", "b", NULL);
	expect(rc, out, 3, "--hosts is given twice");
	rc = run_ci(&out, "gate", "--timeout", "5m", NULL);
	expect(rc, out, 3, "'gate' does not take --timeout");
	rc = run_ci(&out, "wait", "--junit", "x.xml", NULL);
	expect(rc, out, 3, "'wait' does not take --junit");
	rc = run_ci(&out, "gate", "--wait", "soon", NULL);
	expect(rc, out, 3, "bad --wait 'soon'");
	rc = run_ci(&out, "gate", "--wait", "0", NULL);
	expect(rc, out, 3, "bad --wait '0'");
	rc = run_ci(&out, "gate", "--collector", "http://c:1", "--project", "p", "--commit", SHA,
	            "--wait", "5m", NULL);
	expect(rc, out, 3, "--wait needs --hosts");
	rc = run_ci(&out, "wait", "--collector", "http://c:1", "--project", "p", "--commit", SHA,
	            NULL);
	expect(rc, out, 3, "'wait' needs --hosts");
	rc = run_ci(&out, "trigger", "--collector", "http://c:1", "--project", "p", "--commit", SHA,
	            NULL);
	expect(rc, out, 3, "'trigger' needs --ref");
	rc = run_ci(&out, "compare", "--collector", "http://c:1", "--project", "p", "--base", SHA,
	            NULL);
	expect(rc, out, 3, "'compare' needs --head");
	rc = run_ci(&out, "gate", "--collector", "http://c:1", "--project", "p", "--commit", SHA,
	            "stray", NULL);
	expect(rc, out, 3, "unexpected argument 'stray'");
	rc = run_ci(&out, "--project", "p", NULL);
	expect(rc, out, 3, "a command comes first");
	/* one line each */
	rc = run_ci(&out, "gate", "--hosts", "a,a", NULL);
	assert_int_equal(rc, 3);
	assert_non_null(strchr(out, '\n'));
	assert_string_equal(strchr(out, '\n'), "\n");
	free(out);
}

static void test_help_version(void **state)
{
	char *out;
	int rc;

	(void)state;
	rc = run_ci(&out, "--help", NULL);
	expect(rc, out, 0, "  0  pass or unconfirmed");
	rc = run_ci(&out, "--help", NULL);
	expect(rc, out, 0,
	       "  4  inconclusive: a cell of gate level fail the gate cannot vouch for");
	rc = run_ci(&out, "--help", NULL);
	expect(rc, out, 0,
	       "When several apply: a regression (1), then inconclusive (4), then incomplete (2), "
	       "then\nunconfirmed with --strict (1), else 0.");
	rc = run_ci(&out, "gate", "--help", NULL);
	expect(rc, out, 0, "usage: atomwatch-ci COMMAND");
	rc = run_ci(&out, "--version", NULL);
	expect(rc, out, 0, "atomwatch-ci ");
}

static void test_token_never_on_command_line(void **state)
{
	char *out;
	int rc;

	(void)state;
	rc = run_ci(&out, "gate", "--collector", "http://c:1", "--project", "p", "--commit", SHA,
	            "--token", "awt_s3cr3t", NULL);
	assert_int_equal(rc, 3);
	assert_non_null(strstr(out, "a token is never taken from the command line"));
	assert_non_null(strstr(out, "ATOMWATCH_TOKEN"));
	assert_null(strstr(out, "awt_s3cr3t"));
	free(out);
	rc = run_ci(&out, "trigger", "--token=awt_s3cr3t", NULL);
	assert_int_equal(rc, 3);
	assert_null(strstr(out, "awt_s3cr3t"));
	free(out);
	/* before the command as well */
	rc = run_ci(&out, "--token", "awt_s3cr3t", NULL);
	assert_int_equal(rc, 3);
	assert_null(strstr(out, "awt_s3cr3t"));
	free(out);
}

static void write_token(const char *path, const char *text)
{
	char *err = NULL;

	assert_int_equal(aw_write_file_atomic(path, text, strlen(text), &err), 0);
	chmod(path, 0600);
}

static void test_token_sources(void **state)
{
	char path[256], *out;
	int rc;

	(void)state;
	/* trigger needs a token: none given */
	rc = run_ci(&out, "trigger", "--collector", "http://127.0.0.1:1", "--project", "p",
	            "--commit", SHA, "--ref", "main", NULL);
	expect(rc, out, 3, "'trigger' needs a ci token: set ATOMWATCH_TOKEN or use --token-file");

	snprintf(path, sizeof(path), "%s/nosuch", tmpdir);
	rc = run_ci(&out, "gate", "--collector", "http://c:1", "--project", "p", "--commit", SHA,
	            "--token-file", path, NULL);
	expect(rc, out, 3, "cannot read the token: cannot open '");

	snprintf(path, sizeof(path), "%s/token", tmpdir);
	write_token(path, "awt_two words\n");
	rc = run_ci(&out, "gate", "--collector", "http://c:1", "--project", "p", "--commit", SHA,
	            "--token-file", path, NULL);
	assert_int_equal(rc, 3);
	assert_non_null(strstr(out, "holds a character a token never has"));
	assert_null(strstr(out, "awt_two"));
	free(out);

	write_token(path, " \n\n");
	rc = run_ci(&out, "gate", "--collector", "http://c:1", "--project", "p", "--commit", SHA,
	            "--token-file", path, NULL);
	expect(rc, out, 3, "is empty or too long");

	setenv("ATOMWATCH_TOKEN", "awt_\x01", 1);
	rc = run_ci(&out, "gate", "--collector", "http://c:1", "--project", "p", "--commit", SHA,
	            NULL);
	expect(rc, out, 3, "the token in ATOMWATCH_TOKEN holds a character a token never has");
	unsetenv("ATOMWATCH_TOKEN");

	/* ATOMWATCH_COLLECTOR is checked like --collector */
	setenv("ATOMWATCH_COLLECTOR", "collector:8080", 1);
	rc = run_ci(&out, "gate", "--project", "p", "--commit", SHA, NULL);
	expect(rc, out, 3, "bad collector URL in ATOMWATCH_COLLECTOR");
	unsetenv("ATOMWATCH_COLLECTOR");
}

static void test_poll_delays(void **state)
{
	struct aw_ci_wait_opts o = {0};
	const uint64_t want[] = {2000, 4000, 8000, 16000, 30000, 30000, 30000};

	(void)state;
	for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_int_equal(aw_ci_poll_delay_ms(&o, i), want[i]);
	o.poll_ms = 100;
	o.poll_max_ms = 250;
	assert_int_equal(aw_ci_poll_delay_ms(&o, 0), 100);
	assert_int_equal(aw_ci_poll_delay_ms(&o, 1), 200);
	assert_int_equal(aw_ci_poll_delay_ms(&o, 2), 250);
	assert_int_equal(aw_ci_poll_delay_ms(&o, 4000000000u), 250); /* no overflow */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_usage_errors),
	    cmocka_unit_test(test_help_version),
	    cmocka_unit_test(test_token_never_on_command_line),
	    cmocka_unit_test(test_token_sources),
	    cmocka_unit_test(test_poll_delays),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
