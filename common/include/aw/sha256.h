/* SHA-256 through libcrypto (the one file that touches it). */
#ifndef AW_SHA256_H
#define AW_SHA256_H

#include <stddef.h>

#define AW_SHA256_HEX_LEN 64

/* Writes the lowercase hex digest of `len` bytes at `data` into out[AW_SHA256_HEX_LEN + 1].
 * Returns 0, or -EIO when libcrypto fails. */
int aw_sha256_hex(const void *data, size_t len, char *out);

/* Raw 32-byte digest. Returns 0 or -EIO. */
int aw_sha256(const void *data, size_t len, unsigned char *out32);

#endif
