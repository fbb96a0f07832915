/* The thresholds loader (collector/config.c) on any YAML. */
#include "analysis.h"
#include "config.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aw_thresholds t;
	char *err = NULL;

	memset(&t, 0, sizeof(t));
	aw_thresholds_parse(&t, (const char *)data, size, "thresholds.yaml", &err);
	free(err);
	aw_thresholds_release(&t);
	return 0;
}
