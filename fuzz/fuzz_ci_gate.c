/* atomwatch-ci's reader of the gate and compare replies (ci/report.c); the first byte picks
 * which. */
#include "ci.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aw_ci_report r;
	char *err = NULL;

	if (!size)
		return 0;
	memset(&r, 0, sizeof(r));
	if (!aw_ci_report_parse((const char *)data + 1, size - 1, data[0] & 1, &r, &err))
		aw_ci_report_release(&r);
	free(err);
	return 0;
}
