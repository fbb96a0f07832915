/* The agent's configuration (configs/agent.yaml): where the collector is and how to reach it,
 * who this host is, where results wait (the spool), what to measure and when, the subjects
 * (local builds of a library under test), the in-kernel refscale readers and the atomwatch
 * kernel module. */
#ifndef AW_AGENT_CONFIG_H
#define AW_AGENT_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AW_AGENT_DEFAULT_CONFIG "/etc/atomwatch/agent.yaml"

/* Subject names starting so are the agent's own (its control and macro cells, control.h):
 * a config may not name a subject so. */
#define AW_RESERVED_SUBJECT_PREFIX "atomwatch-"

/* A subject: a library under test that this agent builds and measures when a run names it.
 * The collector only ever sends the name; everything else is the agent owner's. */
struct aw_agent_subject {
	char *name;
	char *build;   /* shell command run with sh -c; NULL: nothing to build */
	char *dir;     /* working directory of the build (absolute) */
	char *library; /* shared object to dlopen (absolute) */
	char **env;    /* "KEY=VALUE" added to the build's environment */
	size_t n_env;
	char *cpus;                /* CPU selection; NULL: first-per-type */
	uint64_t build_timeout_ms; /* the build is killed after this */
	uint32_t ab_builds;        /* an A/B's code layouts per side (1 ... AW_AB_MAX_BUILDS) */
};

struct aw_agent_config {
	char *path; /* the file read (for messages) */

	/* collector */
	char *url;        /* base URL without the trailing slash, http:// or https:// */
	char *token_file; /* absolute; the token is read from it when needed, never stored here */
	char *ca_file;    /* absolute, or NULL: the system's CA store */
	uint64_t connect_timeout_ms, timeout_ms;
	uint32_t retries; /* attempts after the first one */
	uint64_t backoff_ms, backoff_max_ms;
	uint64_t poll_wait_ms; /* long-poll wait of GET /api/v1/jobs/next */

	/* host */
	char *host_name; /* NULL: this host's name, sanitised */
	json_t *labels;  /* object of strings, never NULL after a load */

	/* spool */
	char *spool_dir; /* absolute */
	uint64_t flush_every_ms;

	/* matrix */
	char *matrix_file; /* NULL: the built-in matrix */
	char *profile;     /* NULL: "default" */
	char *cpus;        /* NULL: the profile's */
	char *ops;         /* comma list, NULL: every op */
	uint32_t samples;  /* 0: the profile's */

	/* schedule (daemon) */
	uint64_t schedule_every_ms; /* 0: no periodic runs */
	bool on_change;             /* run when the fingerprint's changing fields differ */
	uint64_t check_every_ms;    /* how often the fingerprint is compared */
	uint64_t confirm_gap_ms;    /* a confirmation job's wait before each re-measurement */
	char *schedule_project, *schedule_ref;
	char *schedule_commit; /* NULL: derived from the fingerprint (see agents/daemon.c) */

	/* subjects */
	struct aw_agent_subject *subjects;
	size_t n_subjects;

	/* kernel readers (refscale) */
	char **refscale_types;
	size_t n_refscale_types;
	uint64_t refscale_loops, refscale_nruns, refscale_timeout_ms;
	char *kmsg_path, *modprobe, *rmmod, *modinfo;
	char *refscale_source;  /* a kernel source tree to build refscale and torture from when
	                         * the running kernel lacks them; NULL: modprobe only */
	char *refscale_modules; /* a folder with prebuilt torture.ko and refscale.ko, or NULL */

	/* the atomwatch kernel module (agents/kmod.c) */
	bool kmod;             /* kernel.module: measure the kernel's own ops */
	char *kmod_tree;       /* build tree; NULL: /lib/modules/$(uname -r)/build */
	char *kmod_source;     /* runner/kmod sources; NULL: the installed ones */
	char *kmod_file;       /* a prebuilt atomwatch.ko (nothing is built), or NULL */
	char *kmod_make;       /* the make program */
	char **kmod_make_vars; /* "KEY=VALUE" make variables (ARCH, CROSS_COMPILE...) */
	size_t n_kmod_make_vars;
	char *kmod_cpus;       /* the module's cpus= (NULL: every online CPU) */
	uint32_t kmod_samples; /* the module's samples= (0: its default, 200) */
	uint64_t kmod_build_timeout_ms, kmod_timeout_ms;
	char *debugfs; /* where debugfs is (mounted there when it is not) */

	/* bisection by the owner's step command (agents/bisect_step.c): for ranges the agent
	 * cannot build itself (a kernel's) */
	char *bisect_step;    /* sh -c command run per probed commit, or NULL: none */
	char *bisect_repo;    /* the git repository whose commits are listed (absolute) */
	char *bisect_subject; /* the name `bisect --subject` and jobs use for it ("kernel") */
	char *bisect_host;    /* the host its runs are filed under; NULL: this agent's */
	uint64_t bisect_timeout_ms;
};

/* Reads and validates a config file. Relative paths in it are resolved against the file's
 * directory. Returns 0, or a negative errno with *err = "path:line:col: what is wrong" (an
 * unknown key, a wrong type, a bad value, a duplicate key, a missing required key). Release
 * with aw_agent_config_release(), also after a failure. */
int aw_agent_config_load(const char *path, struct aw_agent_config *cfg, char **err);

/* The same from memory: `label` stands for the path in messages, `base_dir` resolves relative
 * paths. */
int aw_agent_config_parse(const char *text, size_t len, const char *label, const char *base_dir,
                          struct aw_agent_config *cfg, char **err);

void aw_agent_config_release(struct aw_agent_config *cfg);

/* The subject called `name`, or NULL. */
const struct aw_agent_subject *aw_agent_config_subject(const struct aw_agent_config *cfg,
                                                       const char *name);

/* The subject names, comma-separated, into buf (always terminated; "none" when there are none). */
void aw_agent_config_subject_names(const struct aw_agent_config *cfg, char *buf, size_t len);

/* Reads the bearer token from cfg->token_file (surrounding whitespace removed; at most 4 KiB,
 * printable ASCII). Returns 0 with *token (caller frees; never log it) or a negative errno with
 * *err naming the file, never its content. */
int aw_agent_read_token(const struct aw_agent_config *cfg, char **token, char **err);

#endif
