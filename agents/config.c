/* Reads configs/agent.yaml with libyaml (the agent's only libyaml adapter): a table of keys per
 * section, every value checked where it is read, errors as "file:line:col: message", unknown
 * and duplicate keys rejected. See config.h for the meaning of each setting. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "aw/ab.h"
#include "aw/log.h"
#include "aw/result.h"
#include "aw/util.h"

#define CONFIG_LIMIT  (1u << 20)
#define VALUE_MAX     4096
#define TOKEN_LIMIT   4096
#define SUBJECTS_MAX  64
#define LABELS_MAX    64
#define LABEL_VAL_MAX 512
#define LIST_MAX      64

enum kind {
	K_STR,      /* char * */
	K_PATH,     /* char *, made absolute */
	K_URL,      /* char *, http(s)://, trailing '/' removed */
	K_NAME,     /* char *, [A-Za-z0-9._-]{1,64} */
	K_REF,      /* char *, a git ref */
	K_COMMIT,   /* char *, 7..64 hex digits */
	K_OPS,      /* char *, a list or a comma string, stored comma-separated */
	K_DURATION, /* uint64_t milliseconds */
	K_U64,      /* uint64_t */
	K_U32,      /* uint32_t */
	K_BOOL,     /* bool */
	K_LABELS,   /* json_t * object of strings */
	K_ENV,      /* char ** "KEY=VALUE" + size_t count at off2 */
	K_NAMES,    /* char ** names + size_t count at off2 */
	K_SECTION,  /* a nested mapping read with `sub` into the same object */
	K_SUBJECTS, /* the subjects mapping */
};

struct key {
	const char *name;
	enum kind kind;
	size_t off, off2;
	uint64_t min, max;
	const struct key *sub;
	bool required;
};

#define CF(field) offsetof(struct aw_agent_config, field)
#define SF(field) offsetof(struct aw_agent_subject, field)
#define MS(s)     ((uint64_t)(s)*1000)
#define DAY_MS    MS(86400)
#define KEY_END                                      \
	{                                            \
		NULL, K_STR, 0, 0, 0, 0, NULL, false \
	}
#define STR(n, f)                                     \
	{                                             \
		n, K_STR, CF(f), 0, 0, 0, NULL, false \
	}
#define PATH(n, f)                                     \
	{                                              \
		n, K_PATH, CF(f), 0, 0, 0, NULL, false \
	}

static const struct key collector_keys[] = {
    {"url", K_URL, CF(url), 0, 0, 0, NULL, true},
    {"token_file", K_PATH, CF(token_file), 0, 0, 0, NULL, true},
    PATH("ca_file", ca_file),
    {"connect_timeout", K_DURATION, CF(connect_timeout_ms), 0, 100, MS(600), NULL, false},
    {"timeout", K_DURATION, CF(timeout_ms), 0, 100, MS(3600), NULL, false},
    {"retries", K_U32, CF(retries), 0, 0, 100, NULL, false},
    {"backoff", K_DURATION, CF(backoff_ms), 0, 1, MS(3600), NULL, false},
    {"backoff_max", K_DURATION, CF(backoff_max_ms), 0, 1, DAY_MS, NULL, false},
    {"poll_wait", K_DURATION, CF(poll_wait_ms), 0, MS(1), MS(3600), NULL, false},
    KEY_END,
};

static const struct key host_keys[] = {
    {"name", K_NAME, CF(host_name), 0, 0, 0, NULL, false},
    {"labels", K_LABELS, CF(labels), 0, 0, 0, NULL, false},
    KEY_END,
};

static const struct key spool_keys[] = {
    {"dir", K_PATH, CF(spool_dir), 0, 0, 0, NULL, true},
    {"flush_every", K_DURATION, CF(flush_every_ms), 0, MS(1), DAY_MS, NULL, false},
    KEY_END,
};

static const struct key matrix_keys[] = {
    PATH("file", matrix_file),
    {"profile", K_NAME, CF(profile), 0, 0, 0, NULL, false},
    STR("cpus", cpus),
    {"ops", K_OPS, CF(ops), 0, 0, 0, NULL, false},
    {"samples", K_U32, CF(samples), 0, 1, 1000000, NULL, false},
    KEY_END,
};

static const struct key schedule_keys[] = {
    {"every", K_DURATION, CF(schedule_every_ms), 0, 0, 365 * DAY_MS, NULL, false},
    {"on_change", K_BOOL, CF(on_change), 0, 0, 0, NULL, false},
    {"check_every", K_DURATION, CF(check_every_ms), 0, MS(1), DAY_MS, NULL, false},
    {"confirm_gap", K_DURATION, CF(confirm_gap_ms), 0, 0, MS(3600), NULL, false},
    {"project", K_NAME, CF(schedule_project), 0, 0, 0, NULL, false},
    {"ref", K_REF, CF(schedule_ref), 0, 0, 0, NULL, false},
    {"commit", K_COMMIT, CF(schedule_commit), 0, 0, 0, NULL, false},
    KEY_END,
};

static const struct key refscale_keys[] = {
    {"types", K_NAMES, CF(refscale_types), CF(n_refscale_types), 0, 0, NULL, true},
    {"loops", K_U64, CF(refscale_loops), 0, 1, UINT64_C(1000000000), NULL, false},
    {"nruns", K_U64, CF(refscale_nruns), 0, 1, 1000, NULL, false},
    {"timeout", K_DURATION, CF(refscale_timeout_ms), 0, MS(1), DAY_MS, NULL, false},
    PATH("kmsg", kmsg_path),
    STR("modprobe", modprobe),
    STR("rmmod", rmmod),
    STR("modinfo", modinfo),
    PATH("source", refscale_source),
    PATH("modules", refscale_modules),
    KEY_END,
};

static const struct key kernel_keys[] = {
    {"refscale", K_SECTION, 0, 0, 0, 0, refscale_keys, false},
    {"module", K_BOOL, CF(kmod), 0, 0, 0, NULL, false},
    PATH("build", kmod_tree),
    PATH("source", kmod_source),
    PATH("module_file", kmod_file),
    STR("make", kmod_make),
    {"make_vars", K_ENV, CF(kmod_make_vars), CF(n_kmod_make_vars), 0, 0, NULL, false},
    STR("cpus", kmod_cpus),
    {"samples", K_U32, CF(kmod_samples), 0, 1, 100000, NULL, false},
    {"build_timeout", K_DURATION, CF(kmod_build_timeout_ms), 0, MS(1), DAY_MS, NULL, false},
    {"timeout", K_DURATION, CF(kmod_timeout_ms), 0, MS(1), DAY_MS, NULL, false},
    PATH("debugfs", debugfs),
    KEY_END,
};

static const struct key bisect_keys[] = {
    STR("step", bisect_step),
    PATH("repo", bisect_repo),
    {"subject", K_NAME, CF(bisect_subject), 0, 0, 0, NULL, false},
    {"host", K_NAME, CF(bisect_host), 0, 0, 0, NULL, false},
    {"timeout", K_DURATION, CF(bisect_timeout_ms), 0, MS(1), 7 * DAY_MS, NULL, false},
    KEY_END,
};

static const struct key root_keys[] = {
    {"collector", K_SECTION, 0, 0, 0, 0, collector_keys, true},
    {"host", K_SECTION, 0, 0, 0, 0, host_keys, false},
    {"spool", K_SECTION, 0, 0, 0, 0, spool_keys, true},
    {"matrix", K_SECTION, 0, 0, 0, 0, matrix_keys, false},
    {"schedule", K_SECTION, 0, 0, 0, 0, schedule_keys, false},
    {"subjects", K_SUBJECTS, 0, 0, 0, 0, NULL, false},
    {"kernel", K_SECTION, 0, 0, 0, 0, kernel_keys, false},
    {"bisect", K_SECTION, 0, 0, 0, 0, bisect_keys, false},
    KEY_END,
};

static const struct key subject_keys[] = {
    {"build", K_STR, SF(build), 0, 0, 0, NULL, false},
    {"dir", K_PATH, SF(dir), 0, 0, 0, NULL, false},
    {"library", K_PATH, SF(library), 0, 0, 0, NULL, true},
    {"env", K_ENV, SF(env), SF(n_env), 0, 0, NULL, false},
    {"cpus", K_STR, SF(cpus), 0, 0, 0, NULL, false},
    {"timeout", K_DURATION, SF(build_timeout_ms), 0, MS(1), DAY_MS, NULL, false},
    {"ab_builds", K_U32, SF(ab_builds), 0, 1, AW_AB_MAX_BUILDS, NULL, false},
    KEY_END,
};

struct parser {
	yaml_document_t *doc;
	const char *label;
	const char *base_dir;
	char **err;
};

static int fail_at(const struct parser *p, const yaml_node_t *n, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail_at(const struct parser *p, const yaml_node_t *n, int rc, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return aw_errorf(p->err, rc, "%s:%zu:%zu: %s", p->label, n ? n->start_mark.line + 1 : 1,
	                 n ? n->start_mark.column + 1 : 1, msg);
}

static int nomem(const struct parser *p)
{
	return aw_errorf(p->err, -ENOMEM, "%s: out of memory", p->label);
}

static const char *kind_name(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_SCALAR_NODE:
		return "a scalar";
	case YAML_SEQUENCE_NODE:
		return "a list";
	case YAML_MAPPING_NODE:
		return "a mapping";
	default:
		return "nothing";
	}
}

/* A scalar's text, or NULL after an error (a non-scalar, too long). */
static const char *scalar(const struct parser *p, const yaml_node_t *n, const char *what)
{
	if (n->type != YAML_SCALAR_NODE) {
		fail_at(p, n, -EINVAL, "'%s' must be a scalar, not %s", what, kind_name(n));
		return NULL;
	}
	if (n->data.scalar.length > VALUE_MAX ||
	    strlen((const char *)n->data.scalar.value) != n->data.scalar.length) {
		fail_at(p, n, -EINVAL, "'%s' is longer than %d bytes or holds a NUL", what,
		        VALUE_MAX);
		return NULL;
	}
	return (const char *)n->data.scalar.value;
}

/* A plain ~, null or empty scalar: the key is given no value. */
static bool is_null(const yaml_node_t *n)
{
	const char *v = (const char *)n->data.scalar.value;

	return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (!*v || !strcmp(v, "~") || !strcmp(v, "null"));
}

static int set_string(const struct parser *p, char **dst, const char *s)
{
	return aw_set_str(dst, s) ? nomem(p) : 0;
}

static int set_path(const struct parser *p, char **dst, const char *s)
{
	char *abs;

	if (s[0] == '/' || !p->base_dir)
		return set_string(p, dst, s);
	abs = aw_asprintf("%s/%s", p->base_dir, s);
	if (!abs)
		return nomem(p);
	free(*dst);
	*dst = abs;
	return 0;
}

static int read_url(const struct parser *p, const yaml_node_t *n, const char *s, char **dst)
{
	size_t len = strlen(s);

	if (strncmp(s, "http://", 7) && strncmp(s, "https://", 8))
		return fail_at(p, n, -EINVAL,
		               "'url' must start with http:// or https://, got '%.64s'", s);
	for (const char *c = s; *c; c++)
		if ((unsigned char)*c <= ' ' || (unsigned char)*c >= 0x7f)
			return fail_at(p, n, -EINVAL, "'url' holds a space or control character");
	while (len > 8 && s[len - 1] == '/')
		len--;
	free(*dst);
	*dst = strndup(s, len);
	return *dst ? 0 : nomem(p);
}

static int read_bool(const struct parser *p, const yaml_node_t *n, const char *s, bool *dst)
{
	static const char *const yes[] = {"true", "yes", "on", NULL};
	static const char *const no[] = {"false", "no", "off", NULL};

	for (int i = 0; yes[i]; i++) {
		if (!strcasecmp(s, yes[i])) {
			*dst = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*dst = false;
			return 0;
		}
	}
	return fail_at(p, n, -EINVAL, "expected true or false, got '%.64s'", s);
}

/* A list of scalars or one comma-separated scalar, handed to `fn` item by item. */
static int each_item(const struct parser *p, const yaml_node_t *n, const char *what,
                     int (*fn)(const struct parser *p, const yaml_node_t *at, const char *item,
                               void *cls),
                     void *cls)
{
	int rc = 0, count = 0;

	if (n->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *it = n->data.sequence.items.start;
		     !rc && it < n->data.sequence.items.top; it++) {
			const yaml_node_t *item = yaml_document_get_node(p->doc, *it);
			const char *s = scalar(p, item, what);

			if (!s)
				return -EINVAL;
			if (++count > LIST_MAX)
				return fail_at(p, item, -EINVAL, "'%s' holds more than %d items",
				               what, LIST_MAX);
			rc = fn(p, item, s, cls);
		}
		return rc;
	}
	if (n->type == YAML_SCALAR_NODE) {
		char *copy, *save = NULL;
		const char *s = scalar(p, n, what);

		if (!s)
			return -EINVAL;
		copy = strdup(s);
		if (!copy)
			return nomem(p);
		for (char *tok = strtok_r(copy, ", \t", &save); !rc && tok;
		     tok = strtok_r(NULL, ", \t", &save)) {
			if (++count > LIST_MAX)
				rc = fail_at(p, n, -EINVAL, "'%s' holds more than %d items", what,
				             LIST_MAX);
			else
				rc = fn(p, n, tok, cls);
		}
		free(copy);
		return rc;
	}
	return fail_at(p, n, -EINVAL, "'%s' must be a list or a comma-separated string, not %s",
	               what, kind_name(n));
}

struct names {
	char ***v;
	size_t *n;
	const char *what;
	bool ops; /* joined into one string instead */
	char **joined;
};

static int add_name(const struct parser *p, const yaml_node_t *at, const char *item, void *cls)
{
	struct names *nm = cls;
	char **grown;

	if (!aw_valid_name(item))
		return fail_at(p, at, -EINVAL,
		               "bad name '%.64s' in '%s' (1 to 64 characters from [A-Za-z0-9._-])",
		               item, nm->what);
	if (nm->ops) {
		char *s = *nm->joined ? aw_asprintf("%s,%s", *nm->joined, item) : strdup(item);

		if (!s)
			return nomem(p);
		free(*nm->joined);
		*nm->joined = s;
		return 0;
	}
	for (size_t i = 0; i < *nm->n; i++)
		if (!strcmp((*nm->v)[i], item))
			return fail_at(p, at, -EINVAL, "'%s' is listed twice in '%s'", item,
			               nm->what);
	grown = realloc(*nm->v, (*nm->n + 1) * sizeof(*grown));
	if (!grown)
		return nomem(p);
	*nm->v = grown;
	grown[*nm->n] = strdup(item);
	if (!grown[*nm->n])
		return nomem(p);
	(*nm->n)++;
	return 0;
}

static void free_strv(char ***v, size_t *n)
{
	for (size_t i = 0; *v && i < *n; i++)
		free((*v)[i]);
	aw_freep(v);
	*n = 0;
}

static bool env_name_ok(const char *s)
{
	if (!*s || isdigit((unsigned char)*s))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

/* Walks a mapping of scalar keys to scalar values with fn(key node, key, value node, value). */
static int each_pair(const struct parser *p, const yaml_node_t *n, const char *what,
                     int (*fn)(const struct parser *p, const yaml_node_t *kn, const char *k,
                               const yaml_node_t *vn, void *cls),
                     void *cls)
{
	int rc = 0;

	if (n->type != YAML_MAPPING_NODE)
		return fail_at(p, n, -EINVAL, "'%s' must be a mapping, not %s", what, kind_name(n));
	for (yaml_node_pair_t *pair = n->data.mapping.pairs.start;
	     !rc && pair < n->data.mapping.pairs.top; pair++) {
		const yaml_node_t *kn = yaml_document_get_node(p->doc, pair->key);
		const yaml_node_t *vn = yaml_document_get_node(p->doc, pair->value);
		const char *k = scalar(p, kn, "key");

		if (!k)
			return -EINVAL;
		for (yaml_node_pair_t *prev = n->data.mapping.pairs.start; prev < pair; prev++) {
			const yaml_node_t *pk = yaml_document_get_node(p->doc, prev->key);

			if (pk->type == YAML_SCALAR_NODE &&
			    !strcmp((const char *)pk->data.scalar.value, k))
				return fail_at(p, kn, -EINVAL, "duplicate key '%.64s' in '%s'", k,
				               what);
		}
		rc = fn(p, kn, k, vn, cls);
	}
	return rc;
}

static int add_label(const struct parser *p, const yaml_node_t *kn, const char *k,
                     const yaml_node_t *vn, void *cls)
{
	json_t *labels = cls;
	const char *v;

	if (!aw_valid_name(k))
		return fail_at(p, kn, -EINVAL,
		               "bad label name '%.64s' (1 to 64 characters from [A-Za-z0-9._-])",
		               k);
	v = scalar(p, vn, k);
	if (!v)
		return -EINVAL;
	if (strlen(v) > LABEL_VAL_MAX)
		return fail_at(p, vn, -EINVAL, "label '%s' is longer than %d bytes", k,
		               LABEL_VAL_MAX);
	for (const char *c = v; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return fail_at(p, vn, -EINVAL, "label '%s' holds a control character", k);
	if (json_object_size(labels) >= LABELS_MAX)
		return fail_at(p, kn, -EINVAL, "more than %d labels", LABELS_MAX);
	if (json_object_set_new(labels, k, json_string(v)))
		return fail_at(p, vn, -EINVAL, "label '%s' is not valid UTF-8", k);
	return 0;
}

struct env_ctx {
	char ***v;
	size_t *n;
};

static int add_env(const struct parser *p, const yaml_node_t *kn, const char *k,
                   const yaml_node_t *vn, void *cls)
{
	struct env_ctx *e = cls;
	const char *v;
	char **grown;

	if (!env_name_ok(k))
		return fail_at(p, kn, -EINVAL, "bad environment variable name '%.64s'", k);
	v = scalar(p, vn, k);
	if (!v)
		return -EINVAL;
	if (*e->n >= LIST_MAX)
		return fail_at(p, kn, -EINVAL, "more than %d environment variables", LIST_MAX);
	grown = realloc(*e->v, (*e->n + 1) * sizeof(*grown));
	if (!grown)
		return nomem(p);
	*e->v = grown;
	grown[*e->n] = aw_asprintf("%s=%s", k, v);
	if (!grown[*e->n])
		return nomem(p);
	(*e->n)++;
	return 0;
}

static int read_section(const struct parser *p, const yaml_node_t *n, const char *what,
                        const struct key *keys, void *obj);

static int read_subject(const struct parser *p, const yaml_node_t *kn, const char *k,
                        const yaml_node_t *vn, void *cls)
{
	struct aw_agent_config *cfg = cls;
	struct aw_agent_subject *s, *grown;
	int rc;

	if (!aw_valid_name(k))
		return fail_at(p, kn, -EINVAL,
		               "bad subject name '%.64s' (1 to 64 characters from [A-Za-z0-9._-])",
		               k);
	if (!strncmp(k, AW_RESERVED_SUBJECT_PREFIX, strlen(AW_RESERVED_SUBJECT_PREFIX)))
		return fail_at(p, kn, -EINVAL,
		               "subject name '%.64s' is reserved: names starting with '%s' are the "
		               "agent's own (its control and macro cells)",
		               k, AW_RESERVED_SUBJECT_PREFIX);
	if (cfg->n_subjects >= SUBJECTS_MAX)
		return fail_at(p, kn, -EINVAL, "more than %d subjects", SUBJECTS_MAX);
	grown = realloc(cfg->subjects, (cfg->n_subjects + 1) * sizeof(*grown));
	if (!grown)
		return nomem(p);
	cfg->subjects = grown;
	s = &grown[cfg->n_subjects++];
	memset(s, 0, sizeof(*s));
	s->build_timeout_ms = MS(1800);
	s->ab_builds = 1;
	s->name = strdup(k);
	if (!s->name)
		return nomem(p);
	rc = read_section(p, vn, k, subject_keys, s);
	if (!rc && !s->dir)
		rc = set_string(p, &s->dir, p->base_dir ? p->base_dir : ".");
	return rc;
}

struct section_ctx {
	const struct key *keys;
	void *obj;
	const char *what;
	unsigned seen; /* bit i: keys[i] given */
};

static int read_value(const struct parser *p, const yaml_node_t *kn, const char *k,
                      const yaml_node_t *vn, void *cls)
{
	struct section_ctx *sc = cls;
	const struct key *key;
	char *base = sc->obj;
	const char *s = NULL;
	uint64_t u;
	size_t i;

	for (i = 0; sc->keys[i].name; i++)
		if (!strcmp(sc->keys[i].name, k))
			break;
	if (!sc->keys[i].name) {
		char expected[256] = "";
		size_t o = 0;

		for (size_t j = 0; sc->keys[j].name && o < sizeof(expected); j++)
			o += (size_t)snprintf(expected + o, sizeof(expected) - o, "%s%s",
			                      j ? ", " : "", sc->keys[j].name);
		return fail_at(p, kn, -EINVAL, "unknown key '%.64s' in '%s' (expected: %s)", k,
		               sc->what, expected);
	}
	key = &sc->keys[i];
	sc->seen |= 1u << i;
	if (is_null(vn) && key->kind != K_SECTION) {
		if (key->required)
			return fail_at(p, vn, -EINVAL, "'%s' needs a value", k);
		if (key->kind <= K_OPS)
			aw_freep(base + key->off);
		return 0;
	}
	if (key->kind <= K_BOOL && key->kind != K_OPS) {
		s = scalar(p, vn, k);
		if (!s)
			return -EINVAL;
	}
	switch (key->kind) {
	case K_STR:
		return set_string(p, (char **)(base + key->off), s);
	case K_PATH:
		return set_path(p, (char **)(base + key->off), s);
	case K_URL:
		return read_url(p, vn, s, (char **)(base + key->off));
	case K_NAME:
		if (!aw_valid_name(s))
			return fail_at(p, vn, -EINVAL,
			               "'%s' must be 1 to 64 characters from [A-Za-z0-9._-], got "
			               "'%.64s'",
			               k, s);
		return set_string(p, (char **)(base + key->off), s);
	case K_REF:
		if (!aw_valid_ref(s))
			return fail_at(p, vn, -EINVAL, "'%s' must be a git ref name, got '%.64s'",
			               k, s);
		return set_string(p, (char **)(base + key->off), s);
	case K_COMMIT:
		if (!aw_valid_commit(s) && strcmp(s, "kernel"))
			return fail_at(
			    p, vn, -EINVAL,
			    "'%s' must be a commit id of 7 to 64 hex digits, got '%.64s' "
			    "(or 'kernel': the running kernel's)",
			    k, s);
		return set_string(p, (char **)(base + key->off), s);
	case K_OPS: {
		struct names nm = {.what = k, .ops = true, .joined = (char **)(base + key->off)};

		aw_freep(base + key->off);
		return each_item(p, vn, k, add_name, &nm);
	}
	case K_DURATION:
		if (aw_parse_duration_ms(s, &u))
			return fail_at(
			    p, vn, -EINVAL,
			    "'%s' must be a duration such as 90s, 10m, 2h or 1500ms, got "
			    "'%.64s'",
			    k, s);
		if (u < key->min || u > key->max)
			return fail_at(
			    p, vn, -ERANGE, "'%s' must be between %llu ms and %llu ms, got '%.64s'",
			    k, (unsigned long long)key->min, (unsigned long long)key->max, s);
		*(uint64_t *)(base + key->off) = u;
		return 0;
	case K_U64:
	case K_U32:
		if (aw_parse_u64(s, UINT64_MAX, &u) || u < key->min || u > key->max)
			return fail_at(p, vn, -ERANGE,
			               "'%s' must be a whole number from %llu to %llu, got '%.64s'",
			               k, (unsigned long long)key->min,
			               (unsigned long long)key->max, s);
		if (key->kind == K_U32)
			*(uint32_t *)(base + key->off) = (uint32_t)u;
		else
			*(uint64_t *)(base + key->off) = u;
		return 0;
	case K_BOOL:
		return read_bool(p, vn, s, (bool *)(base + key->off));
	case K_LABELS:
		return each_pair(p, vn, k, add_label, *(json_t **)(base + key->off));
	case K_ENV: {
		struct env_ctx e = {(char ***)(base + key->off), (size_t *)(base + key->off2)};

		free_strv(e.v, e.n);
		return each_pair(p, vn, k, add_env, &e);
	}
	case K_NAMES: {
		struct names nm = {(char ***)(base + key->off), (size_t *)(base + key->off2), k,
		                   false, NULL};

		free_strv(nm.v, nm.n);
		return each_item(p, vn, k, add_name, &nm);
	}
	case K_SECTION:
		return read_section(p, vn, k, key->sub, sc->obj);
	case K_SUBJECTS:
		return each_pair(p, vn, k, read_subject, sc->obj);
	}
	return 0;
}

static int read_section(const struct parser *p, const yaml_node_t *n, const char *what,
                        const struct key *keys, void *obj)
{
	struct section_ctx sc = {keys, obj, what, 0};
	int rc;

	if (is_null(n))
		n = NULL;
	if (n) {
		rc = each_pair(p, n, what, read_value, &sc);
		if (rc)
			return rc;
	}
	for (size_t i = 0; keys[i].name; i++)
		if (keys[i].required && !(sc.seen & (1u << i)))
			return fail_at(p, n, -EINVAL, "'%s' is required in '%s'", keys[i].name,
			               what);
	return 0;
}

static void set_defaults(struct aw_agent_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->connect_timeout_ms = MS(10);
	cfg->timeout_ms = MS(120);
	cfg->retries = 5;
	cfg->backoff_ms = MS(1);
	cfg->backoff_max_ms = MS(300);
	cfg->poll_wait_ms = MS(60);
	cfg->flush_every_ms = MS(300);
	cfg->on_change = true;
	cfg->confirm_gap_ms = MS(30); /* AW_CONFIRM_DEFAULT_GAP_S */
	cfg->check_every_ms = MS(600);
	cfg->refscale_loops = 10000;
	cfg->refscale_nruns = 30;
	cfg->refscale_timeout_ms = MS(600);
	cfg->kmod_build_timeout_ms = MS(600);
	cfg->kmod_timeout_ms = MS(600);
	cfg->bisect_timeout_ms = MS(2 * 3600);
}

/* Defaults that are strings (allocated, so that release frees uniformly). */
static int set_string_defaults(const struct parser *p, struct aw_agent_config *cfg)
{
	cfg->labels = json_object();
	if (!cfg->labels || set_string(p, &cfg->schedule_project, "platform") ||
	    set_string(p, &cfg->schedule_ref, "schedule") ||
	    set_string(p, &cfg->kmsg_path, "/dev/kmsg") ||
	    set_string(p, &cfg->modprobe, "modprobe") || set_string(p, &cfg->rmmod, "rmmod") ||
	    set_string(p, &cfg->modinfo, "modinfo") || set_string(p, &cfg->kmod_make, "make") ||
	    set_string(p, &cfg->debugfs, "/sys/kernel/debug") ||
	    set_string(p, &cfg->bisect_subject, "kernel"))
		return nomem(p);
	return 0;
}

int aw_agent_config_parse(const char *text, size_t len, const char *label, const char *base_dir,
                          struct aw_agent_config *cfg, char **err)
{
	struct parser p = {.label = label, .base_dir = base_dir, .err = err};
	yaml_parser_t parser;
	yaml_document_t doc;
	const yaml_node_t *root;
	bool parser_ok = false, doc_ok = false;
	int rc;

	set_defaults(cfg);
	rc = set_string_defaults(&p, cfg);
	if (!rc)
		rc = set_string(&p, &cfg->path, label);
	if (rc)
		goto out;
	if (!yaml_parser_initialize(&parser)) {
		rc = nomem(&p);
		goto out;
	}
	parser_ok = true;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		rc = aw_errorf(err, -EINVAL, "%s:%zu:%zu: %s%s%s", label,
		               parser.problem_mark.line + 1, parser.problem_mark.column + 1,
		               parser.problem ? parser.problem : "invalid YAML",
		               parser.context ? " " : "", parser.context ? parser.context : "");
		goto out;
	}
	doc_ok = true;
	p.doc = &doc;
	root = yaml_document_get_root_node(&doc);
	if (!root) {
		rc = aw_errorf(err, -EINVAL, "%s:1:1: the file is empty", label);
		goto out;
	}
	if (root->type != YAML_MAPPING_NODE) {
		rc = fail_at(&p, root, -EINVAL, "the top level must be a mapping, not %s",
		             kind_name(root));
		goto out;
	}
	rc = read_section(&p, root, "top level", root_keys, cfg);
	if (!rc && cfg->n_refscale_types == 0 && cfg->refscale_types) /* types: [] */
		aw_freep(&cfg->refscale_types);
out:
	if (doc_ok)
		yaml_document_delete(&doc);
	if (parser_ok)
		yaml_parser_delete(&parser);
	return rc;
}

int aw_agent_config_load(const char *path, struct aw_agent_config *cfg, char **err)
{
	char *text = NULL, *copy = NULL, *base = NULL;
	size_t len;
	int rc;

	rc = aw_read_file(path, CONFIG_LIMIT, &text, &len, err);
	if (rc) {
		set_defaults(cfg);
		return rc;
	}
	copy = strdup(path);
	if (!copy) {
		set_defaults(cfg);
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	base = realpath(dirname(copy), NULL);
	rc = aw_agent_config_parse(text, len, path, base ? base : ".", cfg, err);
out:
	free(base);
	free(copy);
	free(text);
	return rc;
}

void aw_agent_config_release(struct aw_agent_config *cfg)
{
	for (size_t i = 0; i < cfg->n_subjects; i++) {
		struct aw_agent_subject *s = &cfg->subjects[i];

		free(s->name);
		free(s->build);
		free(s->dir);
		free(s->library);
		free(s->cpus);
		free_strv(&s->env, &s->n_env);
	}
	free(cfg->subjects);
	free_strv(&cfg->refscale_types, &cfg->n_refscale_types);
	free(cfg->path);
	free(cfg->url);
	free(cfg->token_file);
	free(cfg->ca_file);
	free(cfg->host_name);
	json_decref(cfg->labels);
	free(cfg->spool_dir);
	free(cfg->matrix_file);
	free(cfg->profile);
	free(cfg->cpus);
	free(cfg->ops);
	free(cfg->schedule_project);
	free(cfg->schedule_ref);
	free(cfg->schedule_commit);
	free(cfg->kmsg_path);
	free(cfg->modprobe);
	free(cfg->rmmod);
	free(cfg->modinfo);
	free(cfg->refscale_source);
	free(cfg->refscale_modules);
	free(cfg->kmod_tree);
	free(cfg->kmod_source);
	free(cfg->kmod_file);
	free(cfg->kmod_make);
	free_strv(&cfg->kmod_make_vars, &cfg->n_kmod_make_vars);
	free(cfg->kmod_cpus);
	free(cfg->debugfs);
	free(cfg->bisect_step);
	free(cfg->bisect_repo);
	free(cfg->bisect_subject);
	free(cfg->bisect_host);
	memset(cfg, 0, sizeof(*cfg));
}

const struct aw_agent_subject *aw_agent_config_subject(const struct aw_agent_config *cfg,
                                                       const char *name)
{
	for (size_t i = 0; name && i < cfg->n_subjects; i++)
		if (!strcmp(cfg->subjects[i].name, name))
			return &cfg->subjects[i];
	return NULL;
}

void aw_agent_config_subject_names(const struct aw_agent_config *cfg, char *buf, size_t len)
{
	size_t o = 0;

	snprintf(buf, len, "none");
	for (size_t i = 0; i < cfg->n_subjects && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? ", " : "",
		                      cfg->subjects[i].name);
}

int aw_agent_read_token(const struct aw_agent_config *cfg, char **token, char **err)
{
	static int warned;
	char *text = NULL;
	size_t len, size, start = 0;
	struct stat st;
	int rc;

	*token = NULL;
	rc = aw_read_file(cfg->token_file, TOKEN_LIMIT, &text, &len, err);
	if (rc)
		return rc;
	size = len;
	while (start < len && isspace((unsigned char)text[start]))
		start++;
	while (len > start && isspace((unsigned char)text[len - 1]))
		len--;
	if (len == start) {
		rc = aw_errorf(err, -EINVAL, "the token file '%s' is empty", cfg->token_file);
		goto out;
	}
	for (size_t i = start; i < len; i++) {
		if ((unsigned char)text[i] <= ' ' || (unsigned char)text[i] >= 0x7f) {
			rc = aw_errorf(err, -EINVAL,
			               "the token file '%s' must hold one token of printable ASCII",
			               cfg->token_file);
			goto out;
		}
	}
	if (!warned && !stat(cfg->token_file, &st) && (st.st_mode & 077)) {
		aw_warn("the token file '%s' is readable by other users (chmod 600 it)",
		        cfg->token_file);
		warned = 1;
	}
	*token = strndup(text + start, len - start);
	if (!*token)
		rc = aw_errorf(err, -ENOMEM, "out of memory");
out:
	memset(text, 0, size);
	free(text);
	return rc;
}
