/* The matrix loader (runner/matrix.c) on any YAML. */
#include "fuzz.h"
#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aw_matrix m;
	char *err = NULL;

	memset(&m, 0, sizeof(m));
	aw_matrix_parse((const char *)data, size, "matrix.yaml", &m, &err);
	free(err);
	aw_matrix_release(&m);
	return 0;
}
