/* What the libFuzzer targets share: the entry point libFuzzer calls, and a NUL-terminated copy
 * of the input for the parsers that take C strings. See fuzz/README.md. */
#ifndef AW_FUZZ_H
#define AW_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A malloc'd NUL-terminated copy of the input (NULL when out of memory). */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s) {
		if (size)
			memcpy(s, data, size);
		s[size] = '\0';
	}
	return s;
}

#endif
