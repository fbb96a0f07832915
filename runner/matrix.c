/* The matrix file (configs/matrix.yaml, whose header describes the format): the one place that
 * reads it with libyaml. It checks every name and number against the fixed matrix, applies
 * 'extends' between profiles and hashes a resolved profile. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "aw/buf.h"
#include "aw/sha256.h"
#include "aw/util.h"
#include "internal.h"

#define MATRIX_MAX_BYTES (1024 * 1024)
/* Far deeper than the format nests (7 levels), yet shallow enough that hostile flow nesting
 * ("[[[[...") stays cheap: libyaml's scanner is quadratic in the flow depth. */
#define MAX_DEPTH    32
#define MAX_PROFILES 64
#define MAX_VALUES   64 /* entries of one c or d list: the grid is their product */
#define SHOW_MAX     60 /* longest piece of the file quoted back in a message */

#define MAX_VERSION       INT32_MAX
#define MAX_SAMPLES       1000000
#define MAX_BATCH_NS      1000000000
#define MIN_BATCH_TICKS   1000
#define MAX_BATCH_TICKS   1000000000
#define MAX_WARMUP_MS     60000
#define MAX_GAP           1000000 /* c and d: nops */
#define HASH_FORMAT       "atomwatch.matrix-hash/1"
#define CPULIST_TEXT_SIZE (5 * AW_MAX_CPUS + 1) /* "4095," per CPU at worst */

/* ---- a small YAML tree, built from libyaml's events ---- */

enum ykind {
	Y_SCALAR,
	Y_SEQ,
	Y_MAP
};

struct ynode {
	enum ykind kind;
	yaml_mark_t mark;
	char *text;          /* scalars: the value, NUL-terminated */
	bool empty;          /* a plain scalar with nothing in it: "key:" without a value */
	struct ynode **kids; /* sequence items, or mapping keys and values alternating */
	size_t n_kids, cap_kids;
};

struct parser {
	const char *label;
	char **err;
	struct ynode *root;
	char shown[4][SHOW_MAX + 6]; /* "'" text "...'" */ /* a few quoted pieces per message */
	unsigned next_shown;
};

static void free_node(struct ynode *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n_kids; i++)
		free_node(n->kids[i]);
	free(n->kids);
	free(n->text);
	free(n);
}

static int fail(struct parser *ps, yaml_mark_t mark, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Every problem found in the file ends here: "label:line:col: message". */
static int fail(struct parser *ps, yaml_mark_t mark, int rc, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	aw_errorf(ps->err, rc, "%s:%zu:%zu: %s", ps->label, mark.line + 1, mark.column + 1,
	          msg ? msg : "out of memory");
	free(msg);
	return rc;
}

static int oom(struct parser *ps)
{
	return aw_errorf(ps->err, -ENOMEM, "%s: out of memory", ps->label);
}

/* A piece of the file made safe to quote: control characters become '?', and a long piece is
 * cut (at a character boundary) and marked with "...". */
static const char *show(struct parser *ps, const char *s)
{
	char *out = ps->shown[ps->next_shown++ % 4];
	size_t n = 0;

	for (; s[n] && n < SHOW_MAX; n++)
		out[n] = ((unsigned char)s[n] < 0x20 || s[n] == 0x7f) ? '?' : s[n];
	if (s[n]) {
		while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
		memcpy(out + n, "...", 3);
		n += 3;
	}
	out[n] = '\0';
	return out;
}

/* What a node is, for "..., got X": the quoted text of a scalar, else its kind. */
static const char *describe(struct parser *ps, const struct ynode *n)
{
	char *out;
	size_t len;

	switch (n->kind) {
	case Y_SCALAR:
		if (n->empty)
			return "nothing";
		out = ps->shown[ps->next_shown % 4];
		show(ps, n->text);
		len = strlen(out);
		memmove(out + 1, out, len);
		out[0] = '\'';
		memcpy(out + 1 + len, "'", 2); /* shown[] has room for both quotes */
		return out;
	case Y_SEQ:
		return "a sequence";
	case Y_MAP:
		return "a mapping";
	}
	return "?";
}

/* libyaml reports reader errors (bad UTF-8, control characters) as a byte offset only. */
static yaml_mark_t mark_at(const char *text, size_t len, size_t offset)
{
	yaml_mark_t m = {offset, 0, 0};

	for (size_t i = 0; i < offset && i < len; i++) {
		if (text[i] == '\n') {
			m.line++;
			m.column = 0;
		} else if (((unsigned char)text[i] & 0xc0) != 0x80) {
			m.column++;
		}
	}
	return m;
}

static int yaml_fail(struct parser *ps, const yaml_parser_t *yp, const char *text, size_t len)
{
	const char *problem = yp->problem ? yp->problem : "cannot parse the YAML";

	switch (yp->error) {
	case YAML_MEMORY_ERROR:
		return oom(ps);
	case YAML_READER_ERROR:
		if (yp->problem_value != -1)
			return fail(ps, mark_at(text, len, yp->problem_offset), -EINVAL,
			            "%s (0x%X)", problem, (unsigned)yp->problem_value);
		return fail(ps, mark_at(text, len, yp->problem_offset), -EINVAL, "%s", problem);
	default:
		if (yp->context)
			return fail(ps, yp->problem_mark, -EINVAL, "%s (%s at %zu:%zu)", problem,
			            yp->context, yp->context_mark.line + 1,
			            yp->context_mark.column + 1);
		return fail(ps, yp->problem_mark, -EINVAL, "%s", problem);
	}
}

static int add_kid(struct ynode *parent, struct ynode *kid)
{
	if (aw_array_reserve(&parent->kids, parent->n_kids, &parent->cap_kids,
	                     sizeof(*parent->kids), 8))
		return -ENOMEM;
	parent->kids[parent->n_kids++] = kid;
	return 0;
}

/* Turns one event into a node hung below the open collection (or made the root). */
static int add_node(struct parser *ps, const yaml_event_t *ev, struct ynode **stack, int depth,
                    struct ynode **out)
{
	struct ynode *n = calloc(1, sizeof(*n));

	if (!n)
		return oom(ps);
	n->mark = ev->start_mark;
	if (ev->type == YAML_SCALAR_EVENT) {
		n->kind = Y_SCALAR;
		n->text = malloc(ev->data.scalar.length + 1);
		if (!n->text) {
			free(n);
			return oom(ps);
		}
		memcpy(n->text, ev->data.scalar.value, ev->data.scalar.length);
		n->text[ev->data.scalar.length] = '\0';
		n->empty =
		    !ev->data.scalar.length && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	} else {
		n->kind = ev->type == YAML_SEQUENCE_START_EVENT ? Y_SEQ : Y_MAP;
	}
	if (!depth) {
		ps->root = n;
	} else if (add_kid(stack[depth - 1], n)) {
		free_node(n);
		return oom(ps);
	}
	*out = n;
	/* Checked after hanging the node so that it is freed with the tree. */
	if (n->text && strlen(n->text) != ev->data.scalar.length)
		return fail(ps, n->mark, -EINVAL, "scalars must not contain NUL characters");
	return 0;
}

/* Reads the one document of `text` into ps->root (NULL for an empty stream). Anchors are
 * ignored and aliases refused: 'extends' is the format's way to share settings. */
static int build_tree(struct parser *ps, const char *text, size_t len)
{
	struct ynode *stack[MAX_DEPTH];
	yaml_parser_t yp;
	yaml_event_t ev;
	bool have_event = false, done = false;
	int depth = 0, docs = 0, rc = 0;

	if (!yaml_parser_initialize(&yp))
		return oom(ps);
	yaml_parser_set_input_string(&yp, (const unsigned char *)text, len);
	while (!done) {
		struct ynode *n = NULL;

		if (!yaml_parser_parse(&yp, &ev)) {
			rc = yaml_fail(ps, &yp, text, len);
			goto out;
		}
		have_event = true;
		switch (ev.type) {
		case YAML_DOCUMENT_START_EVENT:
			if (docs++) {
				rc = fail(ps, ev.start_mark, -EINVAL,
				          "more than one YAML document in the matrix file");
				goto out;
			}
			break;
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_ALIAS_EVENT:
			rc = fail(ps, ev.start_mark, -EINVAL,
			          "aliases are not supported (use 'extends' to share settings)");
			goto out;
		case YAML_SCALAR_EVENT:
			rc = add_node(ps, &ev, stack, depth, &n);
			if (rc)
				goto out;
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (depth == MAX_DEPTH) {
				rc = fail(ps, ev.start_mark, -EINVAL,
				          "nesting deeper than %d levels", MAX_DEPTH);
				goto out;
			}
			rc = add_node(ps, &ev, stack, depth, &n);
			if (rc)
				goto out;
			stack[depth++] = n;
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
		have_event = false;
	}
out:
	if (have_event)
		yaml_event_delete(&ev);
	yaml_parser_delete(&yp);
	return rc;
}

/* ---- checking nodes ---- */

static int expect_kind(struct parser *ps, const struct ynode *n, enum ykind kind, const char *key,
                       const char *where)
{
	static const char *const wanted[] = {"a scalar", "a sequence", "a mapping"};

	if (n->kind == kind)
		return 0;
	return fail(ps, n->mark, -EINVAL, "'%s' in %s must be %s, got %s", key, where, wanted[kind],
	            describe(ps, n));
}

/* Collects the values of mapping `map`, whose keys must come from `keys` (NULL-terminated),
 * each at most once; vals[i] is left NULL for a key that is absent. */
static int walk_map(struct parser *ps, const struct ynode *map, const char *const *keys,
                    const struct ynode **vals, const char *where)
{
	size_t n_keys = 0;

	while (keys[n_keys])
		vals[n_keys++] = NULL;
	for (size_t i = 0; i + 1 < map->n_kids; i += 2) {
		const struct ynode *k = map->kids[i];
		size_t j;

		if (k->kind != Y_SCALAR)
			return fail(ps, k->mark, -EINVAL, "keys in %s must be scalars, got %s",
			            where, describe(ps, k));
		for (j = 0; j < n_keys && strcmp(keys[j], k->text); j++)
			;
		if (j == n_keys)
			return fail(ps, k->mark, -EINVAL, "unknown key '%s' in %s",
			            show(ps, k->text), where);
		if (vals[j])
			return fail(ps, k->mark, -EINVAL, "duplicate key '%s' in %s", keys[j],
			            where);
		vals[j] = map->kids[i + 1];
	}
	return 0;
}

static int get_uint(struct parser *ps, const struct ynode *n, const char *key, const char *where,
                    uint64_t lo, uint64_t hi, uint64_t *out)
{
	uint64_t x;

	if (n->kind != Y_SCALAR || aw_parse_u64(n->text, hi, &x) || x < lo)
		return fail(ps, n->mark, -EINVAL,
		            "'%s' in %s must be an integer in %" PRIu64 "..%" PRIu64 ", got %s",
		            key, where, lo, hi, describe(ps, n));
	*out = x;
	return 0;
}

static int get_cpus(struct parser *ps, const struct ynode *n, const char *where, char **out)
{
	struct aw_cpuset set;
	char *text = NULL;
	int rc;

	rc = expect_kind(ps, n, Y_SCALAR, "cpus", where);
	if (rc)
		return rc;
	if (!strcmp(n->text, "all") || !strcmp(n->text, "first") ||
	    !strcmp(n->text, "first-per-type")) {
		text = strdup(n->text);
		if (!text)
			return oom(ps);
		*out = text;
		return 0;
	}
	rc = aw_cpulist_parse(n->text, &set, NULL);
	if (rc == -ERANGE)
		return fail(ps, n->mark, -EINVAL, "bad cpus value '%s' in %s: CPU number above %d",
		            show(ps, n->text), where, AW_MAX_CPUS - 1);
	if (rc)
		return fail(
		    ps, n->mark, -EINVAL,
		    "bad cpus value '%s' in %s (expected all, first, first-per-type or a CPU "
		    "list such as 0,2-3)",
		    show(ps, n->text), where);
	/* Stored in canonical form so that "0,1,2" and "0-2" hash alike. */
	text = malloc(CPULIST_TEXT_SIZE);
	if (!text)
		return oom(ps);
	aw_cpulist_format(&set, text, CPULIST_TEXT_SIZE);
	*out = text;
	return 0;
}

static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[AW_NAME_MAX + 1];

	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

/* The known op closest to a misspelt one, when it is close enough to be what was meant. */
static const char *closest_op(const char *name)
{
	unsigned n;
	const struct aw_op_info *ops = aw_op_infos(&n);
	const char *best = NULL;
	size_t best_d = 3, len = strlen(name);

	if (len > AW_NAME_MAX)
		return NULL;
	for (unsigned i = 0; i < n; i++) {
		size_t d;

		if (strlen(ops[i].name) > AW_NAME_MAX)
			continue;
		d = edit_distance(name, ops[i].name);
		if (d < best_d && d < len) {
			best = ops[i].name;
			best_d = d;
		}
	}
	return best;
}

enum op_rule {
	OPS_ANY,
	OPS_CONTENDED, /* the contender adds to the same counter: only atomic ops count right */
	OPS_NMISAFE,   /* srcu_nmisafe is defined by its atomic increments */
};

static void free_names(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

static int get_ops(struct parser *ps, const struct ynode *n, const char *key, const char *where,
                   enum op_rule rule, char ***out, size_t *n_out)
{
	unsigned n_infos;
	const struct aw_op_info *infos = aw_op_infos(&n_infos);
	bool *seen = NULL;
	char **names = NULL;
	size_t n_names = 0;
	int rc;

	rc = expect_kind(ps, n, Y_SEQ, key, where);
	if (rc)
		return rc;
	if (!n->n_kids)
		return fail(ps, n->mark, -EINVAL, "'%s' in %s must not be empty", key, where);
	seen = calloc(n_infos, sizeof(*seen));
	names = calloc(n->n_kids, sizeof(*names));
	if (!seen || !names) {
		rc = oom(ps);
		goto out;
	}
	for (size_t i = 0; i < n->n_kids; i++) {
		const struct ynode *item = n->kids[i];
		const struct aw_op_info *op;
		const char *guess;

		if (item->kind != Y_SCALAR) {
			rc = fail(ps, item->mark, -EINVAL, "'%s' in %s must list op names, got %s",
			          key, where, describe(ps, item));
			goto out;
		}
		op = aw_op_lookup(item->text);
		if (!op) {
			guess = closest_op(item->text);
			if (guess)
				rc = fail(ps, item->mark, -EINVAL,
				          "unknown op '%s' (did you mean '%s'?)",
				          show(ps, item->text), guess);
			else
				rc = fail(ps, item->mark, -EINVAL, "unknown op '%s'",
				          show(ps, item->text));
			goto out;
		}
		if (seen[op - infos]) {
			rc = fail(ps, item->mark, -EINVAL, "duplicate op '%s'", op->name);
			goto out;
		}
		seen[op - infos] = true;
		if (rule == OPS_CONTENDED && !op->atomic) {
			rc =
			    fail(ps, item->mark, -EINVAL,
			         "op '%s' cannot run contended: not an atomic increment", op->name);
			goto out;
		}
		if (rule == OPS_NMISAFE && !op->atomic) {
			rc = fail(
			    ps, item->mark, -EINVAL,
			    "op '%s' cannot back reader 'srcu_nmisafe': not an atomic increment",
			    op->name);
			goto out;
		}
		names[n_names] = strdup(op->name);
		if (!names[n_names]) {
			rc = oom(ps);
			goto out;
		}
		n_names++;
	}
	*out = names;
	*n_out = n_names;
	names = NULL;
out:
	free_names(names, n_names);
	free(seen);
	return rc;
}

/* A list of c or d values: distinct integers in 0..MAX_GAP. */
static int get_values(struct parser *ps, const struct ynode *n, const char *key, const char *where,
                      int64_t **out, size_t *n_out)
{
	int64_t *v = NULL;
	int rc;

	rc = expect_kind(ps, n, Y_SEQ, key, where);
	if (rc)
		return rc;
	if (!n->n_kids)
		return fail(ps, n->mark, -EINVAL, "'%s' in %s must not be empty", key, where);
	if (n->n_kids > MAX_VALUES)
		return fail(ps, n->kids[MAX_VALUES]->mark, -EINVAL,
		            "'%s' in %s holds more than %d values", key, where, MAX_VALUES);
	v = calloc(n->n_kids, sizeof(*v));
	if (!v)
		return oom(ps);
	for (size_t i = 0; i < n->n_kids; i++) {
		const struct ynode *item = n->kids[i];
		uint64_t x;

		if (item->kind != Y_SCALAR || aw_parse_u64(item->text, MAX_GAP, &x)) {
			rc = fail(ps, item->mark, -EINVAL,
			          "'%s' in %s must hold integers in 0..%d, got %s", key, where,
			          MAX_GAP, describe(ps, item));
			goto out;
		}
		for (size_t j = 0; j < i; j++) {
			if (v[j] == (int64_t)x) {
				rc = fail(ps, item->mark, -EINVAL, "duplicate %s value %" PRIu64,
				          key, x);
				goto out;
			}
		}
		v[i] = (int64_t)x;
	}
	*out = v;
	*n_out = n->n_kids;
	v = NULL;
out:
	free(v);
	return rc;
}

static int get_placement(struct parser *ps, const struct ynode *n, const char *where, bool *near,
                         bool *far)
{
	bool seen_near = false, seen_far = false;
	int rc;

	rc = expect_kind(ps, n, Y_SEQ, "placement", where);
	if (rc)
		return rc;
	if (!n->n_kids)
		return fail(ps, n->mark, -EINVAL, "'placement' in %s must not be empty", where);
	for (size_t i = 0; i < n->n_kids; i++) {
		const struct ynode *item = n->kids[i];
		bool *slot;

		if (item->kind != Y_SCALAR)
			return fail(ps, item->mark, -EINVAL,
			            "'placement' in %s must list near or far, got %s", where,
			            describe(ps, item));
		if (!strcmp(item->text, "near"))
			slot = &seen_near;
		else if (!strcmp(item->text, "far"))
			slot = &seen_far;
		else
			return fail(ps, item->mark, -EINVAL,
			            "bad placement '%s' (expected near or far)",
			            show(ps, item->text));
		if (*slot)
			return fail(ps, item->mark, -EINVAL, "duplicate placement '%s'",
			            item->text);
		*slot = true;
	}
	*near = seen_near;
	*far = seen_far;
	return 0;
}

static void release_readers(struct aw_reader_spec *r, size_t n)
{
	for (size_t i = 0; r && i < n; i++) {
		free(r[i].reader);
		free_names(r[i].ops, r[i].n_ops);
	}
	free(r);
}

static int get_reader(struct parser *ps, const struct ynode *n, const char *profile,
                      struct aw_reader_spec *out)
{
	static const char *const keys[] = {"reader", "ops", NULL};
	const struct ynode *v[2];
	char where[160];
	int rc;

	snprintf(where, sizeof(where), "an entry of 'readers' in profile '%s'", profile);
	if (n->kind != Y_MAP)
		return fail(ps, n->mark, -EINVAL,
		            "'list' in 'readers' of profile '%s' must hold "
		            "mappings, got %s",
		            profile, describe(ps, n));
	rc = walk_map(ps, n, keys, v, where);
	if (rc)
		return rc;
	if (!v[0])
		return fail(ps, n->mark, -EINVAL, "missing 'reader' in %s", where);
	rc = expect_kind(ps, v[0], Y_SCALAR, "reader", where);
	if (rc)
		return rc;
	if (!aw_reader_known(v[0]->text))
		return fail(ps, v[0]->mark, -EINVAL, "unknown reader '%s'", show(ps, v[0]->text));
	snprintf(where, sizeof(where), "reader '%s' of profile '%s'", v[0]->text, profile);
	/* urcu_memb is liburcu's own lock/unlock: no op of ours underlies it. */
	if (!strcmp(v[0]->text, "urcu_memb")) {
		if (v[1])
			return fail(ps, v[1]->mark, -EINVAL, "reader 'urcu_memb' takes no ops");
	} else if (!v[1]) {
		return fail(ps, n->mark, -EINVAL, "missing 'ops' in %s", where);
	} else {
		rc = get_ops(ps, v[1], "ops", where,
		             strcmp(v[0]->text, "srcu_nmisafe") ? OPS_ANY : OPS_NMISAFE, &out->ops,
		             &out->n_ops);
		if (rc)
			return rc;
	}
	out->reader = strdup(v[0]->text);
	if (!out->reader)
		return oom(ps);
	return 0;
}

static int get_readers(struct parser *ps, const struct ynode *n, const char *where,
                       const char *profile, struct aw_reader_spec **out, size_t *n_out)
{
	struct aw_reader_spec *r = NULL;
	size_t n_r = 0;
	int rc;

	rc = expect_kind(ps, n, Y_SEQ, "list", where);
	if (rc)
		return rc;
	if (!n->n_kids)
		return fail(ps, n->mark, -EINVAL, "'list' in %s must not be empty", where);
	r = calloc(n->n_kids, sizeof(*r));
	if (!r)
		return oom(ps);
	for (size_t i = 0; i < n->n_kids; i++) {
		rc = get_reader(ps, n->kids[i], profile, &r[n_r]);
		n_r++; /* counted even on failure: it may hold a part to free */
		if (rc)
			goto out;
		for (size_t j = 0; j < i; j++) {
			if (!strcmp(r[j].reader, r[i].reader)) {
				rc = fail(ps, n->kids[i]->mark, -EINVAL, "duplicate reader '%s'",
				          r[i].reader);
				goto out;
			}
		}
	}
	*out = r;
	*n_out = n_r;
	r = NULL;
out:
	release_readers(r, n_r);
	return rc;
}

/* ---- profiles and 'extends' ---- */

/* What a profile may set; a profile that extends another takes what it does not set from it. */
enum field {
	F_SAMPLES,
	F_BATCH_NS,
	F_BATCH_TICKS,
	F_WARMUP,
	F_OPS_CPUS,
	F_OPS_LIST,
	F_READERS_CPUS,
	F_READERS_LIST,
	F_CONT_CPUS,
	F_CONT_PLACEMENT,
	F_CONT_OPS,
	F_CONT_C,
	F_CONT_D,
	F_MACRO_RUNS,
	F_MACRO_GROUPS,
	F_MACRO_LOOPS,
	F_MACRO_TOOLS,
	F_COUNT
};

enum section {
	S_PROFILE,
	S_OPS,
	S_READERS,
	S_CONTENTION,
	S_MACRO, /* optional: a profile without it (and whatever it extends) has no macro check */
	S_COUNT
};

static const char *const section_names[S_COUNT] = {"", "ops", "readers", "contention", "macro"};

static const struct {
	enum section section;
	const char *key;
} fields[F_COUNT] = {
    [F_SAMPLES] = {S_PROFILE, "samples"},
    [F_BATCH_NS] = {S_PROFILE, "batch_min_ns"},
    [F_BATCH_TICKS] = {S_PROFILE, "batch_min_ticks"},
    [F_WARMUP] = {S_PROFILE, "warmup_ms"},
    [F_OPS_CPUS] = {S_OPS, "cpus"},
    [F_OPS_LIST] = {S_OPS, "list"},
    [F_READERS_CPUS] = {S_READERS, "cpus"},
    [F_READERS_LIST] = {S_READERS, "list"},
    [F_CONT_CPUS] = {S_CONTENTION, "cpus"},
    [F_CONT_PLACEMENT] = {S_CONTENTION, "placement"},
    [F_CONT_OPS] = {S_CONTENTION, "ops"},
    [F_CONT_C] = {S_CONTENTION, "c"},
    [F_CONT_D] = {S_CONTENTION, "d"},
    [F_MACRO_RUNS] = {S_MACRO, "runs"},
    [F_MACRO_GROUPS] = {S_MACRO, "groups"},
    [F_MACRO_LOOPS] = {S_MACRO, "loops"},
    [F_MACRO_TOOLS] = {S_MACRO, "tools"},
};

/* The macro check's tools (agents/macro.c runs them). */
static const char *const macro_tool_names[] = {"hackbench", "perf-messaging", NULL};

/* A list of distinct macro tools. */
static int get_tools(struct parser *ps, const struct ynode *n, const char *where, char ***out,
                     size_t *n_out)
{
	char **v;
	int rc = expect_kind(ps, n, Y_SEQ, "tools", where);

	if (rc)
		return rc;
	if (!n->n_kids || n->n_kids > 2)
		return fail(ps, n->mark, -EINVAL, "'tools' in %s must name 1 or 2 tools", where);
	v = calloc(n->n_kids, sizeof(*v));
	if (!v)
		return oom(ps);
	for (size_t i = 0; !rc && i < n->n_kids; i++) {
		const struct ynode *item = n->kids[i];
		size_t k = 0;

		while (item->kind == Y_SCALAR && macro_tool_names[k] &&
		       strcmp(macro_tool_names[k], item->text))
			k++;
		if (item->kind != Y_SCALAR || !macro_tool_names[k])
			rc = fail(ps, item->mark, -EINVAL,
			          "'tools' in %s: unknown tool %s (hackbench or perf-messaging)",
			          where, describe(ps, item));
		for (size_t j = 0; !rc && j < i; j++)
			if (!strcmp(v[j], item->text))
				rc = fail(ps, item->mark, -EINVAL, "'tools' in %s lists '%s' twice",
				          where, item->text);
		if (!rc && !(v[i] = strdup(item->text)))
			rc = oom(ps);
	}
	if (rc) {
		free_names(v, n->n_kids);
		return rc;
	}
	*out = v;
	*n_out = n->n_kids;
	return 0;
}

/* A profile as written, before 'extends' is applied. */
struct pending {
	const struct ynode *node;
	const struct ynode *extends;
	const struct ynode *section[S_COUNT];
	bool given[F_COUNT];
	enum {
		UNRESOLVED,
		RESOLVING,
		RESOLVED
	} state;
};

static int parse_field(struct parser *ps, struct aw_profile *p, enum field f, const struct ynode *n,
                       const char *where)
{
	uint64_t x;
	int rc = 0;

	switch (f) {
	case F_SAMPLES:
		rc = get_uint(ps, n, "samples", where, 1, MAX_SAMPLES, &x);
		if (!rc)
			p->samples = (uint32_t)x;
		break;
	case F_BATCH_NS:
		rc = get_uint(ps, n, "batch_min_ns", where, 0, MAX_BATCH_NS, &x);
		if (!rc)
			p->batch_min_ns = x;
		break;
	case F_BATCH_TICKS:
		rc =
		    get_uint(ps, n, "batch_min_ticks", where, MIN_BATCH_TICKS, MAX_BATCH_TICKS, &x);
		if (!rc)
			p->batch_min_ticks = (uint32_t)x;
		break;
	case F_WARMUP:
		rc = get_uint(ps, n, "warmup_ms", where, 0, MAX_WARMUP_MS, &x);
		if (!rc)
			p->warmup_ns = x * 1000000;
		break;
	case F_OPS_CPUS:
		return get_cpus(ps, n, where, &p->op_cpus);
	case F_OPS_LIST:
		return get_ops(ps, n, "list", where, OPS_ANY, &p->ops, &p->n_ops);
	case F_READERS_CPUS:
		return get_cpus(ps, n, where, &p->reader_cpus);
	case F_READERS_LIST:
		return get_readers(ps, n, where, p->name, &p->readers, &p->n_readers);
	case F_CONT_CPUS:
		return get_cpus(ps, n, where, &p->contention_cpus);
	case F_CONT_PLACEMENT:
		return get_placement(ps, n, where, &p->near, &p->far);
	case F_CONT_OPS:
		return get_ops(ps, n, "ops", where, OPS_CONTENDED, &p->contention_ops,
		               &p->n_contention_ops);
	case F_CONT_C:
		return get_values(ps, n, "c", where, &p->c_values, &p->n_c);
	case F_CONT_D:
		return get_values(ps, n, "d", where, &p->d_values, &p->n_d);
	case F_MACRO_RUNS:
		rc = get_uint(ps, n, "runs", where, 1, 100, &x);
		if (!rc)
			p->macro_runs = (uint32_t)x;
		break;
	case F_MACRO_GROUPS:
		rc = get_uint(ps, n, "groups", where, 1, 1000, &x);
		if (!rc)
			p->macro_groups = (uint32_t)x;
		break;
	case F_MACRO_LOOPS:
		rc = get_uint(ps, n, "loops", where, 1, 1000000, &x);
		if (!rc)
			p->macro_loops = (uint32_t)x;
		break;
	case F_MACRO_TOOLS:
		return get_tools(ps, n, where, &p->macro_tools, &p->n_macro_tools);
	case F_COUNT:
		break;
	}
	return rc;
}

/* The keys of each part of a profile; the profile's own also name its sections. */
static const char *const section_keys[S_COUNT][10] = {
    [S_PROFILE] = {"extends", "samples", "batch_min_ns", "batch_min_ticks", "warmup_ms", "ops",
                   "readers", "contention", "macro", NULL},
    [S_OPS] = {"cpus", "list", NULL},
    [S_READERS] = {"cpus", "list", NULL},
    [S_CONTENTION] = {"cpus", "placement", "ops", "c", "d", NULL},
    [S_MACRO] = {"runs", "groups", "loops", "tools", NULL},
};

static size_t key_index(enum section s, const char *key)
{
	size_t k = 0;

	while (strcmp(section_keys[s][k], key))
		k++;
	return k;
}

/* Parses the fields of section s from the values walk_map() collected for section_keys[s]. */
static int parse_fields(struct parser *ps, struct pending *pp, struct aw_profile *p, enum section s,
                        const struct ynode *const *vals, const char *where)
{
	for (int f = 0; f < F_COUNT; f++) {
		const struct ynode *v;
		int rc;

		if (fields[f].section != s)
			continue;
		v = vals[key_index(s, fields[f].key)];
		if (!v)
			continue;
		rc = parse_field(ps, p, (enum field)f, v, where);
		if (rc)
			return rc;
		pp->given[f] = true;
	}
	return 0;
}

static int parse_profile(struct parser *ps, struct pending *pp, struct aw_profile *p)
{
	const struct ynode *v[9], *sv[9];
	char where[96], section_where[128];
	int rc;

	snprintf(where, sizeof(where), "profile '%s'", p->name);
	if (pp->node->kind != Y_MAP)
		return fail(ps, pp->node->mark, -EINVAL, "profile '%s' must be a mapping, got %s",
		            p->name, describe(ps, pp->node));
	rc = walk_map(ps, pp->node, section_keys[S_PROFILE], v, where);
	if (rc)
		return rc;
	pp->extends = v[key_index(S_PROFILE, "extends")];
	if (pp->extends) {
		rc = expect_kind(ps, pp->extends, Y_SCALAR, "extends", where);
		if (rc)
			return rc;
	}
	rc = parse_fields(ps, pp, p, S_PROFILE, v, where);
	if (rc)
		return rc;
	for (int s = S_OPS; s < S_COUNT; s++) {
		const struct ynode *sec = v[key_index(S_PROFILE, section_names[s])];

		if (!sec)
			continue;
		pp->section[s] = sec;
		rc = expect_kind(ps, sec, Y_MAP, section_names[s], where);
		if (rc)
			return rc;
		snprintf(section_where, sizeof(section_where), "'%s' of profile '%s'",
		         section_names[s], p->name);
		rc = walk_map(ps, sec, section_keys[s], sv, section_where);
		if (!rc)
			rc = parse_fields(ps, pp, p, (enum section)s, sv, section_where);
		if (rc)
			return rc;
	}
	return 0;
}

static int dup_names(char ***out, size_t *n_out, char *const *v, size_t n)
{
	char **copy = calloc(n, sizeof(*copy));

	if (!copy)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		copy[i] = strdup(v[i]);
		if (!copy[i]) {
			free_names(copy, i);
			return -ENOMEM;
		}
	}
	*out = copy;
	*n_out = n;
	return 0;
}

static int dup_str(char **out, const char *s)
{
	*out = strdup(s);
	return *out ? 0 : -ENOMEM;
}

static int dup_values(int64_t **out, size_t *n_out, const int64_t *v, size_t n)
{
	*out = malloc(n * sizeof(*v));
	if (!*out)
		return -ENOMEM;
	memcpy(*out, v, n * sizeof(*v));
	*n_out = n;
	return 0;
}

static int dup_readers(struct aw_reader_spec **out, size_t *n_out, const struct aw_reader_spec *r,
                       size_t n)
{
	struct aw_reader_spec *copy = calloc(n, sizeof(*copy));
	size_t done = 0;

	if (!copy)
		return -ENOMEM;
	for (; done < n; done++) {
		if (dup_str(&copy[done].reader, r[done].reader))
			goto fail;
		if (r[done].n_ops &&
		    dup_names(&copy[done].ops, &copy[done].n_ops, r[done].ops, r[done].n_ops))
			goto fail;
	}
	*out = copy;
	*n_out = n;
	return 0;
fail:
	release_readers(copy, done + 1);
	return -ENOMEM;
}

/* Copies one field that p does not set from its resolved base. */
static int inherit(struct aw_profile *p, const struct aw_profile *base, enum field f)
{
	switch (f) {
	case F_SAMPLES:
		p->samples = base->samples;
		return 0;
	case F_BATCH_NS:
		p->batch_min_ns = base->batch_min_ns;
		return 0;
	case F_BATCH_TICKS:
		p->batch_min_ticks = base->batch_min_ticks;
		return 0;
	case F_WARMUP:
		p->warmup_ns = base->warmup_ns;
		return 0;
	case F_OPS_CPUS:
		return dup_str(&p->op_cpus, base->op_cpus);
	case F_OPS_LIST:
		return dup_names(&p->ops, &p->n_ops, base->ops, base->n_ops);
	case F_READERS_CPUS:
		return dup_str(&p->reader_cpus, base->reader_cpus);
	case F_READERS_LIST:
		return dup_readers(&p->readers, &p->n_readers, base->readers, base->n_readers);
	case F_CONT_CPUS:
		return dup_str(&p->contention_cpus, base->contention_cpus);
	case F_CONT_PLACEMENT:
		p->near = base->near;
		p->far = base->far;
		return 0;
	case F_CONT_OPS:
		return dup_names(&p->contention_ops, &p->n_contention_ops, base->contention_ops,
		                 base->n_contention_ops);
	case F_CONT_C:
		return dup_values(&p->c_values, &p->n_c, base->c_values, base->n_c);
	case F_CONT_D:
		return dup_values(&p->d_values, &p->n_d, base->d_values, base->n_d);
	case F_MACRO_RUNS:
		p->macro_runs = base->macro_runs;
		return 0;
	case F_MACRO_GROUPS:
		p->macro_groups = base->macro_groups;
		return 0;
	case F_MACRO_LOOPS:
		p->macro_loops = base->macro_loops;
		return 0;
	case F_MACRO_TOOLS:
		return base->n_macro_tools ? dup_names(&p->macro_tools, &p->n_macro_tools,
		                                       base->macro_tools, base->n_macro_tools)
		                           : 0;
	case F_COUNT:
		break;
	}
	return 0;
}

/* A profile that extends nothing must set every field itself. */
static int check_complete(struct parser *ps, const struct pending *pp, const struct aw_profile *p)
{
	for (int f = 0; f < F_COUNT; f++) {
		enum section s = fields[f].section;

		if (pp->given[f] || (s == S_MACRO && !pp->section[s]))
			continue; /* the macro check is optional, but whole when given */
		if (s == S_PROFILE)
			return fail(ps, pp->node->mark, -EINVAL, "missing '%s' in profile '%s'",
			            fields[f].key, p->name);
		if (!pp->section[s])
			return fail(ps, pp->node->mark, -EINVAL, "missing '%s' in profile '%s'",
			            section_names[s], p->name);
		return fail(ps, pp->section[s]->mark, -EINVAL,
		            "missing '%s' in '%s' of profile '%s'", fields[f].key, section_names[s],
		            p->name);
	}
	return 0;
}

static int extends_cycle(struct parser *ps, struct aw_matrix *m, struct pending *pend,
                         const size_t *chain, size_t depth, size_t again)
{
	struct aw_buf b;
	size_t from = 0;
	int rc = 0;

	while (chain[from] != again)
		from++;
	aw_buf_init(&b, 4096 + MAX_PROFILES * (AW_NAME_MAX + 8));
	rc = aw_buf_puts(&b, "extends cycle: ");
	for (size_t i = from; !rc && i < depth; i++)
		rc = aw_buf_printf(&b, "'%s' -> ", m->profiles[chain[i]].name);
	if (!rc)
		rc = aw_buf_printf(&b, "'%s'", m->profiles[again].name);
	if (rc)
		rc = oom(ps);
	else
		rc = fail(ps, pend[chain[depth - 1]].extends->mark, -EINVAL, "%s", b.data);
	aw_buf_release(&b);
	return rc;
}

/* Applies 'extends' to profile i (and first to what it extends); `chain` holds the profiles
 * being resolved, outermost first, to name a cycle. */
static int resolve(struct parser *ps, struct aw_matrix *m, struct pending *pend, size_t i,
                   size_t *chain, size_t depth)
{
	struct pending *pp = &pend[i];
	struct aw_profile *p = &m->profiles[i];
	size_t base;
	int rc;

	if (pp->state == RESOLVED)
		return 0;
	if (pp->state == RESOLVING)
		return extends_cycle(ps, m, pend, chain, depth, i);
	pp->state = RESOLVING;
	chain[depth] = i;
	if (!pp->extends) {
		rc = check_complete(ps, pp, p);
		goto out;
	}
	for (base = 0; base < m->n_profiles; base++)
		if (!strcmp(m->profiles[base].name, pp->extends->text))
			break;
	if (base == m->n_profiles) {
		rc = fail(ps, pp->extends->mark, -EINVAL,
		          "profile '%s' extends unknown profile '%s'", p->name,
		          show(ps, pp->extends->text));
		goto out;
	}
	rc = resolve(ps, m, pend, base, chain, depth + 1);
	for (int f = 0; !rc && f < F_COUNT; f++)
		if (!pp->given[f] && inherit(p, &m->profiles[base], (enum field)f))
			rc = oom(ps);
out:
	pp->state = RESOLVED;
	return rc;
}

static int parse_profiles(struct parser *ps, struct aw_matrix *m, const struct ynode *n)
{
	struct pending *pend = NULL;
	size_t chain[MAX_PROFILES], count = n->n_kids / 2, dflt = count;
	int rc;

	rc = expect_kind(ps, n, Y_MAP, "profiles", "the matrix");
	if (rc)
		return rc;
	if (count > MAX_PROFILES)
		return fail(ps, n->kids[2 * MAX_PROFILES]->mark, -EINVAL, "more than %d profiles",
		            MAX_PROFILES);
	m->profiles = calloc(count ? count : 1, sizeof(*m->profiles));
	pend = calloc(count ? count : 1, sizeof(*pend));
	if (!m->profiles || !pend) {
		rc = oom(ps);
		goto out;
	}
	m->n_profiles = count;
	for (size_t i = 0; i < count; i++) {
		const struct ynode *k = n->kids[2 * i];

		if (k->kind != Y_SCALAR) {
			rc = fail(ps, k->mark, -EINVAL, "profile names must be scalars, got %s",
			          describe(ps, k));
			goto out;
		}
		if (!aw_valid_name(k->text)) {
			rc = fail(ps, k->mark, -EINVAL,
			          "bad profile name '%s' (expected [A-Za-z0-9._-]{1,64})",
			          show(ps, k->text));
			goto out;
		}
		for (size_t j = 0; j < i; j++) {
			if (!strcmp(m->profiles[j].name, k->text)) {
				rc = fail(ps, k->mark, -EINVAL, "duplicate profile '%s'", k->text);
				goto out;
			}
		}
		m->profiles[i].name = strdup(k->text);
		if (!m->profiles[i].name) {
			rc = oom(ps);
			goto out;
		}
		pend[i].node = n->kids[2 * i + 1];
		if (!strcmp(k->text, "default"))
			dflt = i;
	}
	if (dflt == count) {
		rc = fail(ps, n->mark, -EINVAL, "missing profile 'default' in 'profiles'");
		goto out;
	}
	for (size_t i = 0; !rc && i < count; i++)
		rc = parse_profile(ps, &pend[i], &m->profiles[i]);
	for (size_t i = 0; !rc && i < count; i++)
		rc = resolve(ps, m, pend, i, chain, 0);
out:
	free(pend);
	return rc;
}

static int parse_matrix(struct parser *ps, struct aw_matrix *m)
{
	static const char *const keys[] = {"name", "version", "profiles", NULL};
	static const yaml_mark_t start = {0, 0, 0};
	const struct ynode *root = ps->root, *v[3];
	uint64_t version;
	int rc;

	if (!root)
		return fail(ps, start, -EINVAL,
		            "the matrix file is empty (expected name, version and profiles)");
	if (root->kind != Y_MAP)
		return fail(ps, root->mark, -EINVAL, "the matrix must be a mapping, got %s",
		            describe(ps, root));
	rc = walk_map(ps, root, keys, v, "the matrix");
	if (rc)
		return rc;
	if (!v[0])
		return fail(ps, root->mark, -EINVAL, "missing 'name' in the matrix");
	rc = expect_kind(ps, v[0], Y_SCALAR, "name", "the matrix");
	if (rc)
		return rc;
	if (!aw_valid_name(v[0]->text))
		return fail(ps, v[0]->mark, -EINVAL,
		            "bad matrix name '%s' (expected [A-Za-z0-9._-]{1,64})",
		            show(ps, v[0]->text));
	m->name = strdup(v[0]->text);
	if (!m->name)
		return oom(ps);
	if (!v[1])
		return fail(ps, root->mark, -EINVAL, "missing 'version' in the matrix");
	rc = get_uint(ps, v[1], "version", "the matrix", 1, MAX_VERSION, &version);
	if (rc)
		return rc;
	m->version = (int64_t)version;
	if (!v[2])
		return fail(ps, root->mark, -EINVAL, "missing 'profiles' in the matrix");
	return parse_profiles(ps, m, v[2]);
}

int aw_matrix_parse(const char *text, size_t len, const char *label, struct aw_matrix *m,
                    char **err)
{
	struct parser ps = {.label = label ? label : "<matrix>", .err = err};
	int rc;

	memset(m, 0, sizeof(*m));
	if (len > MATRIX_MAX_BYTES) {
		rc = aw_errorf(err, -E2BIG, "'%s' is larger than %d bytes", ps.label,
		               MATRIX_MAX_BYTES);
		goto out;
	}
	m->path = strdup(ps.label);
	if (!m->path) {
		rc = oom(&ps);
		goto out;
	}
	rc = build_tree(&ps, text ? text : "", len);
	if (!rc)
		rc = parse_matrix(&ps, m);
out:
	if (rc)
		aw_matrix_release(m);
	free_node(ps.root);
	return rc;
}

int aw_matrix_load(const char *path, struct aw_matrix *m, char **err)
{
	char *text = NULL;
	size_t len;
	int rc;

	memset(m, 0, sizeof(*m));
	rc = aw_read_file(path, MATRIX_MAX_BYTES, &text, &len, err);
	if (!rc)
		rc = aw_matrix_parse(text, len, path, m, err);
	free(text);
	return rc;
}

static void release_profile(struct aw_profile *p)
{
	free(p->name);
	free(p->op_cpus);
	free_names(p->ops, p->n_ops);
	free(p->reader_cpus);
	release_readers(p->readers, p->n_readers);
	free(p->contention_cpus);
	free_names(p->contention_ops, p->n_contention_ops);
	free(p->c_values);
	free(p->d_values);
	free_names(p->macro_tools, p->n_macro_tools);
	memset(p, 0, sizeof(*p));
}

void aw_matrix_release(struct aw_matrix *m)
{
	if (!m)
		return;
	for (size_t i = 0; m->profiles && i < m->n_profiles; i++)
		release_profile(&m->profiles[i]);
	free(m->profiles);
	free(m->path);
	free(m->name);
	memset(m, 0, sizeof(*m));
}

const struct aw_profile *aw_matrix_profile(const struct aw_matrix *m, const char *name)
{
	for (size_t i = 0; name && i < m->n_profiles; i++)
		if (!strcmp(m->profiles[i].name, name))
			return &m->profiles[i];
	return NULL;
}

/* ---- hash ---- */

static int put_names(struct aw_buf *b, const char *key, char *const *v, size_t n)
{
	int rc = aw_buf_printf(b, "%s=", key);

	for (size_t i = 0; !rc && i < n; i++)
		rc = aw_buf_printf(b, "%s%s", i ? "," : "", v[i]);
	return rc ? rc : aw_buf_puts(b, "\n");
}

static int put_values(struct aw_buf *b, const char *key, const int64_t *v, size_t n)
{
	int rc = aw_buf_printf(b, "%s=", key);

	for (size_t i = 0; !rc && i < n; i++)
		rc = aw_buf_printf(b, "%s%" PRId64, i ? "," : "", v[i]);
	return rc ? rc : aw_buf_puts(b, "\n");
}

/* The canonical text is one "key=value" line per field, in this fixed order, lists joined by
 * commas in the file's order (order is run order, so it counts), CPU lists in canonical form:
 *   atomwatch.matrix-hash/1
 *   name=<matrix name>
 *   version=<n>
 *   profile=<profile name>
 *   samples=<n>
 *   batch_min_ns=<n>
 *   batch_min_ticks=<n>
 *   warmup_ns=<n>
 *   ops.cpus=<cpus>
 *   ops.list=<op>,<op>,...
 *   readers.cpus=<cpus>
 *   readers.list=<reader>(<op>,<op>...);<reader>();...
 *   contention.cpus=<cpus>
 *   contention.placement=near,far   (those present, always in this order)
 *   contention.ops=<op>,...
 *   contention.c=<n>,...
 *   contention.d=<n>,...
 *   macro=runs:<n>,groups:<n>,loops:<n>   (only a profile with a macro check)
 *   macro.tools=<tool>,...                (likewise)
 * Every name in it is a checked name ([A-Za-z0-9._-]) or a CPU list, so no separator can be
 * forged by a value. */
int aw_matrix_hash(const struct aw_matrix *m, const struct aw_profile *p, char *out)
{
	struct aw_buf b;
	int rc;

	if (!m || !p || !m->name)
		return -EINVAL;
	aw_buf_init(&b, MATRIX_MAX_BYTES);
	rc =
	    aw_buf_printf(&b,
	                  HASH_FORMAT "\nname=%s\nversion=%" PRId64 "\nprofile=%s\nsamples=%" PRIu32
	                              "\nbatch_min_ns=%" PRIu64 "\nbatch_min_ticks=%" PRIu32
	                              "\nwarmup_ns=%" PRIu64 "\nops.cpus=%s\n",
	                  m->name, m->version, p->name, p->samples, p->batch_min_ns,
	                  p->batch_min_ticks, p->warmup_ns, p->op_cpus);
	if (!rc)
		rc = put_names(&b, "ops.list", p->ops, p->n_ops);
	if (!rc)
		rc = aw_buf_printf(&b, "readers.cpus=%s\nreaders.list=", p->reader_cpus);
	for (size_t i = 0; !rc && i < p->n_readers; i++) {
		rc = aw_buf_printf(&b, "%s%s(", i ? ";" : "", p->readers[i].reader);
		for (size_t j = 0; !rc && j < p->readers[i].n_ops; j++)
			rc = aw_buf_printf(&b, "%s%s", j ? "," : "", p->readers[i].ops[j]);
		if (!rc)
			rc = aw_buf_puts(&b, ")");
	}
	if (!rc)
		rc = aw_buf_printf(&b, "\ncontention.cpus=%s\ncontention.placement=%s%s%s\n",
		                   p->contention_cpus, p->near ? "near" : "",
		                   p->near && p->far ? "," : "", p->far ? "far" : "");
	if (!rc)
		rc = put_names(&b, "contention.ops", p->contention_ops, p->n_contention_ops);
	if (!rc)
		rc = put_values(&b, "contention.c", p->c_values, p->n_c);
	if (!rc)
		rc = put_values(&b, "contention.d", p->d_values, p->n_d);
	/* only a profile with a macro check: the hashes of the others stay what they were */
	if (!rc && p->n_macro_tools)
		rc = aw_buf_printf(&b,
		                   "macro=runs:%" PRIu32 ",groups:%" PRIu32 ",loops:%" PRIu32 "\n",
		                   p->macro_runs, p->macro_groups, p->macro_loops);
	if (!rc && p->n_macro_tools)
		rc = put_names(&b, "macro.tools", p->macro_tools, p->n_macro_tools);
	if (!rc)
		rc = aw_sha256_hex(b.data, b.len, out);
	aw_buf_release(&b);
	return rc;
}
