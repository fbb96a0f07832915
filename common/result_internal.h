/* What result.c shares with the fast reader of uploads (result_fast.c) and no one else: the
 * rules a string field is checked under, and the check of a document's "host", so that both
 * paths apply one set of rules. */
#ifndef AW_RESULT_INTERNAL_H
#define AW_RESULT_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>

#include "aw/result.h"

/* The shapes a string field of a result document may be required to have. */
enum aw_str_rule {
	AW_STR_ANY,    /* non-empty */
	AW_STR_NAME,   /* aw_valid_name() */
	AW_STR_COMMIT, /* aw_valid_commit() */
	AW_STR_REF,    /* aw_valid_ref() */
	AW_STR_UUID,   /* aw_valid_uuid() */
	AW_STR_TIME,   /* aw_time_parse() */
	AW_STR_HEX     /* 8 to 64 lowercase hex digits */
};

/* Whether `s` has the shape `rule` asks for. Length and control characters are the caller's
 * to check. */
bool aw_result_str_valid(const char *s, enum aw_str_rule rule);

/* Whether `host` passes every check aw_result_from_json() makes of a document's "host" under
 * `lim` (not NULL). */
bool aw_result_host_valid(const json_t *host, const struct aw_result_limits *lim);

#endif
