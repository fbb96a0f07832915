/* SHA-256 adapter over OpenSSL's libcrypto. */
#include "aw/sha256.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>

int aw_sha256(const void *data, size_t len, unsigned char *out32)
{
	unsigned int n = 0;

	if (!EVP_Digest(data, len, out32, &n, EVP_sha256(), NULL) || n != 32)
		return -EIO;
	return 0;
}

int aw_sha256_hex(const void *data, size_t len, char *out)
{
	unsigned char d[32];
	int rc = aw_sha256(data, len, d);

	if (rc)
		return rc;
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
	return 0;
}
