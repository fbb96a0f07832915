/* The result document: JSON -> validated model -> JSON -> model again. A document that is
 * accepted once must be accepted again from its own serialisation, and serialise to the same
 * JSON the second time (the round trip the collector's storage and the agent's spool rely on). */
#include <jansson.h>
#include <stdio.h>

#include "aw/result.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct aw_result_limits lim = AW_RESULT_LIMITS_DEFAULT;
	struct aw_result *r = NULL, *again = NULL;
	json_t *doc, *out = NULL, *out2 = NULL, *reread = NULL;
	struct aw_verr e;
	char *text = NULL;

	doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (!doc)
		return 0;
	r = aw_result_from_json(doc, &lim, &e);
	if (!r)
		goto out;
	out = aw_result_to_json(r);
	text = out ? json_dumps(out, JSON_COMPACT) : NULL;
	reread = text ? json_loads(text, JSON_REJECT_DUPLICATES, NULL) : NULL;
	if (!reread)
		goto out; /* out of memory */
	again = aw_result_from_json(reread, &lim, &e);
	if (!again) {
		fprintf(stderr, "round trip: the serialised document is refused: %s: %s\n", e.field,
		        e.message);
		abort();
	}
	out2 = aw_result_to_json(again);
	if (out2 && !json_equal(out, out2)) {
		fprintf(stderr, "round trip: the second serialisation differs\n");
		abort();
	}
out:
	json_decref(out2);
	json_decref(reread);
	free(text);
	json_decref(out);
	aw_result_free(&again);
	aw_result_free(&r);
	json_decref(doc);
	return 0;
}
