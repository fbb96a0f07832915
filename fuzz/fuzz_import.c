/* The importers (agents/import*.c): AW_FUZZ_FORMAT is "refscale" or "percpu_bench". */
#include "fuzz.h"
#include "import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aw_import imp;

	aw_import_init(&imp, AW_FUZZ_FORMAT);
	if (!strcmp(AW_FUZZ_FORMAT, "refscale"))
		aw_refscale_parse((const char *)data, size, &imp);
	else
		aw_percpu_bench_parse((const char *)data, size, &imp);
	aw_import_release(&imp);
	return 0;
}
