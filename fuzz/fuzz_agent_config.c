/* The agent's configuration loader (agents/config.c) on any YAML. */
#include "config.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aw_agent_config cfg;
	char *err = NULL;

	memset(&cfg, 0, sizeof(cfg));
	aw_agent_config_parse((const char *)data, size, "agent.yaml", "/nonexistent", &cfg, &err);
	free(err);
	aw_agent_config_release(&cfg);
	return 0;
}
