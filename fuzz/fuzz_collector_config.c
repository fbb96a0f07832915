/* The collector's configuration loader (collector/config.c) on any YAML. */
#include "config.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aw_collector_config c;
	char *err = NULL;

	aw_config_defaults(&c);
	aw_config_parse(&c, (const char *)data, size, "collector.yaml", &err);
	free(err);
	aw_config_release(&c);
	return 0;
}
