/* atomwatch-collector: the command line (migrate, serve, token create|list|revoke, render,
 * export). Parses arguments and hands over to server.c, export.c and the store; bad usage is
 * one line and exit 2. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "aw/log.h"
#include "config.h"
#include "export.h"
#include "internal.h"
#include "store.h"

#define PROG "atomwatch-collector"

static const char usage[] =
    "usage: " PROG " migrate --db URL\n"
    "       " PROG " serve [--config FILE] [--listen HOST:PORT] [--db URL] [--data-dir DIR]\n"
    "       " PROG " token create --db URL --role agent --host NAME | --role ci | --role admin\n"
    "       " PROG " token list --db URL\n"
    "       " PROG " token revoke --db URL ID\n"
    "       " PROG " render --db URL --data-dir DIR --commit SHA [--project NAME] [--config FILE]\n"
    "       " PROG " export --db URL --out DIR [--config FILE]\n"
    "database URLs: sqlite:PATH or postgres://USER@HOST:PORT/DB?...\n";

static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line on stderr, exit status 2. */
static int bad_usage(const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, PROG ": %s (see '" PROG " --help')\n", msg);
	return 2;
}

struct opts {
	const char *config, *listen, *db, *data_dir, *role, *host, *commit, *project, *out;
	const char *positional[2];
	int n_positional;
};

/* Accepts "--name value" and "--name=value" for the options in `allowed`. Returns 0 or the
 * exit status of a usage error. */
static int parse_opts(int argc, char **argv, const char *const *allowed, int max_positional,
                      struct opts *o)
{
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i], *value, *eq;
		char name[32];
		size_t n;
		bool ok = false;

		if (strncmp(arg, "--", 2)) {
			if (o->n_positional >= max_positional)
				return bad_usage("unexpected argument '%s'", arg);
			o->positional[o->n_positional++] = arg;
			continue;
		}
		eq = strchr(arg, '=');
		n = eq ? (size_t)(eq - arg) : strlen(arg);
		if (n >= sizeof(name))
			return bad_usage("unknown option '%s'", arg);
		memcpy(name, arg, n);
		name[n] = '\0';
		for (int k = 0; allowed[k]; k++)
			ok = ok || !strcmp(name, allowed[k]);
		if (!ok)
			return bad_usage("unknown option '%s'", name);
		if (eq) {
			value = eq + 1;
		} else {
			if (i + 1 >= argc)
				return bad_usage("option '%s' needs a value", name);
			value = argv[++i];
		}
		if (!*value)
			return bad_usage("option '%s' needs a value", name);
		if (!strcmp(name, "--config"))
			o->config = value;
		else if (!strcmp(name, "--listen"))
			o->listen = value;
		else if (!strcmp(name, "--db"))
			o->db = value;
		else if (!strcmp(name, "--data-dir"))
			o->data_dir = value;
		else if (!strcmp(name, "--role"))
			o->role = value;
		else if (!strcmp(name, "--host"))
			o->host = value;
		else if (!strcmp(name, "--commit"))
			o->commit = value;
		else if (!strcmp(name, "--project"))
			o->project = value;
		else if (!strcmp(name, "--out"))
			o->out = value;
	}
	return 0;
}

/* Opens `url` and applies the migrations, so every command works on a fresh database. */
static int open_db(const char *url, struct store **store, struct store_conn **conn)
{
	char *err = NULL;
	int rc;

	rc = store_open(url, NULL, store, &err);
	if (!rc)
		rc = store_connect(*store, conn, &err);
	if (!rc)
		rc = store_migrate(*conn, NULL, NULL, &err);
	if (rc) {
		aw_error("%s", err ? err : strerror(-rc));
		free(err);
		store_disconnect(conn);
		store_close(store);
	}
	return rc;
}

static int cmd_migrate(int argc, char **argv)
{
	static const char *const allowed[] = {"--db", NULL};
	struct opts o = {0};
	struct store *store = NULL;
	struct store_conn *c = NULL;
	char *err = NULL;
	int from, to, rc;

	rc = parse_opts(argc, argv, allowed, 0, &o);
	if (rc)
		return rc;
	if (!o.db)
		return bad_usage("%s needs --db URL", "migrate");
	rc = store_open(o.db, NULL, &store, &err);
	if (!rc)
		rc = store_connect(store, &c, &err);
	if (!rc)
		rc = store_migrate(c, &from, &to, &err);
	if (!rc)
		printf("schema version %d (was %d)\n", to, from);
	else
		aw_error("%s", err ? err : strerror(-rc));
	free(err);
	store_disconnect(&c);
	store_close(&store);
	return rc ? 1 : 0;
}

static int cmd_serve(int argc, char **argv)
{
	static const char *const allowed[] = {"--config", "--listen", "--db", "--data-dir", NULL};
	struct aw_collector_config cfg;
	struct opts o = {0};
	char *err = NULL, host[256];
	unsigned port;
	int rc;

	rc = parse_opts(argc, argv, allowed, 0, &o);
	if (rc)
		return rc;
	aw_config_defaults(&cfg);
	if (o.config && aw_config_load(&cfg, o.config, &err)) {
		aw_error("%s", err);
		free(err);
		aw_config_release(&cfg);
		return 1;
	}
	rc = 0;
	if (o.listen) {
		if (aw_parse_listen(o.listen, host, sizeof(host), &port, &err)) {
			fprintf(stderr, PROG ": %s (see '" PROG " --help')\n", err);
			free(err);
			aw_config_release(&cfg);
			return 2;
		}
		free(cfg.listen);
		rc = (cfg.listen = strdup(o.listen)) ? 0 : -ENOMEM;
	}
	if (!rc && o.db) {
		free(cfg.db);
		rc = (cfg.db = strdup(o.db)) ? 0 : -ENOMEM;
	}
	if (!rc && o.data_dir) {
		free(cfg.data_dir);
		rc = (cfg.data_dir = strdup(o.data_dir)) ? 0 : -ENOMEM;
	}
	if (!rc)
		rc = aw_config_finish(&cfg);
	if (rc) {
		aw_error("out of memory");
		aw_config_release(&cfg);
		return 1;
	}
	aw_log_init(PROG, cfg.log_level);
	rc = aw_collector_serve(&cfg);
	aw_config_release(&cfg);
	return rc;
}

static int print_token(const struct store_token *t, void *cls)
{
	(void)cls;
	printf("%-6lld %-6s %-24s %-28s %-28s %s\n", (long long)t->id, store_role_name(t->role),
	       t->host ? t->host : "-", t->created_at, t->last_used_at ? t->last_used_at : "-",
	       t->revoked_at ? t->revoked_at : "-");
	return 0;
}

static int cmd_token(int argc, char **argv)
{
	static const char *const allowed[] = {"--db", "--role", "--host", NULL};
	struct store *store = NULL;
	struct store_conn *c = NULL;
	struct opts o = {0};
	const char *what;
	int rc;

	if (argc < 1)
		return bad_usage("%s needs create, list or revoke", "token");
	what = argv[0];
	if (strcmp(what, "create") && strcmp(what, "list") && strcmp(what, "revoke"))
		return bad_usage("unknown token command '%s'", what);
	rc = parse_opts(argc - 1, argv + 1, allowed, !strcmp(what, "revoke") ? 1 : 0, &o);
	if (rc)
		return rc;
	if (!o.db)
		return bad_usage("token %s needs --db URL", what);
	if (strcmp(what, "create") && (o.role || o.host))
		return bad_usage("token %s takes no --role or --host", what);

	if (!strcmp(what, "create")) {
		char token[AW_TOKEN_LEN + 1];
		enum store_role role;
		int64_t id;

		if (!o.role || store_role_parse(o.role, &role))
			return bad_usage("token create needs --role agent, ci or admin");
		if (role == STORE_ROLE_AGENT && !o.host)
			return bad_usage("an agent token needs --host NAME");
		if (role != STORE_ROLE_AGENT && o.host)
			return bad_usage("only agent tokens take --host (not '%s')", o.role);
		if (o.host && !aw_valid_name(o.host))
			return bad_usage("bad host name '%s' (1 to 64 of [A-Za-z0-9._-])", o.host);
		if (open_db(o.db, &store, &c))
			return 1;
		rc = aw_token_create(c, role, o.host, token, &id);
		if (rc) {
			aw_error("cannot create a token: %s", strerror(-rc));
		} else {
			printf("created token %lld (role %s%s%s); it is shown only once:\n",
			       (long long)id, o.role, o.host ? ", host " : "",
			       o.host ? o.host : "");
			printf("%s\n", token);
		}
	} else if (!strcmp(what, "list")) {
		if (open_db(o.db, &store, &c))
			return 1;
		printf("%-6s %-6s %-24s %-28s %-28s %s\n", "ID", "ROLE", "HOST", "CREATED",
		       "LAST USED", "REVOKED");
		rc = store_token_list(c, print_token, NULL);
		if (rc)
			aw_error("cannot list tokens: %s", strerror(-rc));
	} else {
		int64_t id;

		if (o.n_positional != 1 || aw_parse_id(o.positional[0], &id))
			return bad_usage("token revoke needs a token ID");
		if (open_db(o.db, &store, &c))
			return 1;
		rc = store_token_revoke(c, id);
		if (rc == -ENOENT)
			aw_error("no token %lld", (long long)id);
		else if (rc)
			aw_error("cannot revoke token %lld: %s", (long long)id, strerror(-rc));
		else
			printf("revoked token %lld\n", (long long)id);
	}
	store_disconnect(&c);
	store_close(&store);
	return rc ? 1 : 0;
}

/* render and export: draw charts from the database, with the configuration's gnuplot. */
static int cmd_reports(const char *what, int argc, char **argv)
{
	static const char *const render_opts[] = {"--db",      "--data-dir", "--commit",
	                                          "--project", "--config",   NULL};
	static const char *const export_opts[] = {"--db", "--out", "--config", NULL};
	bool render = !strcmp(what, "render");
	struct aw_collector_config cfg;
	struct aw_collector col = {.cfg = &cfg};
	struct aw_export_stats st;
	struct aw_gnuplot *gp = NULL;
	struct store *store = NULL;
	struct store_conn *c = NULL;
	struct opts o = {0};
	char *err = NULL;
	int rc;

	rc = parse_opts(argc, argv, render ? render_opts : export_opts, 0, &o);
	if (rc)
		return rc;
	if (!o.db)
		return bad_usage("%s needs --db URL", what);
	if (render && (!o.data_dir || !o.commit))
		return bad_usage("render needs --data-dir DIR and --commit SHA");
	if (render && !aw_valid_commit(o.commit))
		return bad_usage("bad commit '%s' (7 to 64 hex digits)", o.commit);
	if (render && o.project && !aw_valid_name(o.project))
		return bad_usage("bad project name '%s'", o.project);
	if (!render && !o.out)
		return bad_usage("export needs --out DIR");
	aw_config_defaults(&cfg);
	/* the detection settings of the configuration, as the service judges with them */
	if ((o.config && aw_config_load(&cfg, o.config, &err)) ||
	    aw_collector_analysis_setup(&col, &err))
		goto out;
	gp = aw_gnuplot_new(&(struct aw_gnuplot_opts){cfg.gnuplot, (unsigned)cfg.chart_timeout_ms},
	                    &err);
	if (!gp && !render) {
		/* the export takes the charts the workers stored; only the others need gnuplot */
		aw_warn("%s; charts missing from the database are shown as pending", err);
		aw_freep(&err);
	}
	if ((!gp && render) || open_db(o.db, &store, &c)) {
		rc = -EIO;
		goto out;
	}
	if (render && (rc = aw_make_dirs(o.data_dir, 0750))) {
		aw_errorf(&err, rc, "cannot create '%s': %s", o.data_dir, strerror(-rc));
	} else if (render) {
		rc = aw_export_commit(c, gp, o.data_dir, &col.analysis, o.project, o.commit, &st,
		                      &err);
		printf("commit %s: %u host(s), %u chart(s) drawn, %u unchanged, %u failed\n",
		       o.commit, st.hosts, st.drawn, st.cached, st.failed);
	} else {
		rc = aw_export_site(c, gp, o.out, col.analysis.baseline_ref, &st, &err);
		printf("exported %u page(s) of %u host(s) to %s: %u chart(s) from the database, %u "
		       "drawn, %u unchanged, %u failed\n",
		       st.pages, st.hosts, o.out, st.fetched, st.drawn, st.cached, st.failed);
	}
out:
	if (err)
		aw_error("%s", err);
	free(err);
	aw_gnuplot_free(&gp);
	store_disconnect(&c);
	store_close(&store);
	aw_collector_analysis_release(&col);
	aw_config_release(&cfg);
	return rc || err ? 1 : 0;
}

int main(int argc, char **argv)
{
	aw_log_init(PROG, AW_LOG_INFO);
	if (argc < 2)
		return bad_usage("a command is required");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		fputs(usage, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf(PROG " %s (schema %d)\n", AW_VERSION, store_schema_version());
		return 0;
	}
	if (!strcmp(argv[1], "migrate"))
		return cmd_migrate(argc - 2, argv + 2);
	if (!strcmp(argv[1], "serve"))
		return cmd_serve(argc - 2, argv + 2);
	if (!strcmp(argv[1], "token"))
		return cmd_token(argc - 2, argv + 2);
	if (!strcmp(argv[1], "render") || !strcmp(argv[1], "export"))
		return cmd_reports(argv[1], argc - 2, argv + 2);
	return bad_usage("unknown command '%s'", argv[1]);
}
