/* The A/B document (`atomwatch.ab/1`, docs/result-schema.md "The A/B document"): one interleaved
 * comparison of a subject built at two commits, measured by `atomwatch-agent ab` and judged by
 * the collector. Both sides validate with this code. */
#ifndef AW_AB_H
#define AW_AB_H

#include <jansson.h>

#include "aw/result.h"

#define AW_AB_SCHEMA        "atomwatch.ab/1"
#define AW_AB_SCHEMA_PREFIX "atomwatch.ab/"
#define AW_AB_MAX_ROUNDS    1000 /* rounds of each kind per cell */
#define AW_AB_MAX_CELLS     4096

/* Whether `doc` says it is an A/B document (its schema is atomwatch.ab/N, any N): the upload
 * route hands such documents to the A/B ingest. */
bool aw_ab_is_ab(const json_t *doc);

/* Validates `doc` against the schema: the fields and their types, names, commit ids, times,
 * at most lim->max_cells cells with unique keys, rounds of finite positive medians (reference
 * values positive or null), no unknown fields. Returns 0, or -EINVAL with *e naming the first
 * problem (e->field like "cells[2].rounds[5].head"). */
int aw_ab_validate(const json_t *doc, const struct aw_result_limits *lim, struct aw_verr *e);

#endif
