/* The fast reader of uploads (aw_result_parse_fast()) against the slow path (jansson, then
 * aw_result_from_json()): whatever the fast path accepts, the slow path accepts too and builds
 * the same model, bit for bit; under the default limits and under tight ones (the first byte
 * picks which; the rest is the document). */
#include <jansson.h>
#include <stdio.h>

#include "aw/result.h"
#include "fuzz.h"
#include "result_same.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct aw_result_limits deflim = AW_RESULT_LIMITS_DEFAULT;
	const struct aw_result_limits tight = {.max_cells = 4, .max_string = 40, .max_labels = 1};
	const struct aw_result_limits *lim = size && data[0] == 't' ? &tight : &deflim;
	const char *text = (const char *)data + (size && data[0] == 't');
	size_t len = size - (size && data[0] == 't');
	struct aw_result *fast = NULL, *slow = NULL;
	struct aw_verr e;
	json_t *doc;

	fast = aw_result_parse_fast(text, len, lim);
	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	if (doc)
		slow = aw_result_from_json(doc, lim, &e);
	if (fast && !slow) {
		fprintf(stderr, "fast path: accepts a document the slow path refuses (%s: %s)\n",
		        doc ? e.field : "json", doc ? e.message : "invalid JSON");
		abort();
	}
	if (fast && !result_same(fast, slow)) {
		fprintf(stderr, "fast path: the model differs from the slow path's\n");
		abort();
	}
	json_decref(doc);
	aw_result_free(&slow);
	aw_result_free(&fast);
	return 0;
}
