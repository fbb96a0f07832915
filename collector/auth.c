/* Token generation, hashing, constant-time comparison and checking; see auth.h. A token is
 * looked up by the SHA-256 of its secret, so the database never holds a usable secret. */
#include "auth.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define USES_MAX 1024

struct token_use {
	int64_t id;
	char when[AW_TIME_LEN];
};

struct aw_auth {
	pthread_mutex_t lock;
	struct token_use uses[USES_MAX];
	size_t n_uses;
};

int aw_token_generate(char *out)
{
	unsigned char secret[32];
	int rc = aw_random_bytes(secret, sizeof(secret));

	if (rc)
		return rc;
	memcpy(out, AW_TOKEN_PREFIX, 4);
	for (size_t i = 0; i < sizeof(secret); i++)
		snprintf(out + 4 + 2 * i, 3, "%02x", secret[i]);
	memset(secret, 0, sizeof(secret));
	return 0;
}

bool aw_token_well_formed(const char *s)
{
	if (!s || strncmp(s, AW_TOKEN_PREFIX, 4) || strlen(s) != AW_TOKEN_LEN)
		return false;
	return strspn(s + 4, "0123456789abcdef") == 64;
}

int aw_token_hash(const char *token, char *out)
{
	return aw_sha256_hex(token, strlen(token), out);
}

bool aw_ct_equal(const void *a, const void *b, size_t n)
{
	const volatile unsigned char *x = a, *y = b;
	unsigned char diff = 0;

	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(x[i] ^ y[i]);
	return diff == 0;
}

const char *aw_bearer_token(const char *header)
{
	if (!header || strncasecmp(header, "Bearer", 6) || (header[6] != ' ' && header[6] != '\t'))
		return NULL;
	header += 6;
	while (*header == ' ' || *header == '\t')
		header++;
	return *header ? header : NULL;
}

int aw_token_create(struct store_conn *c, enum store_role role, const char *host, char *token,
                    int64_t *id)
{
	char hash[AW_SHA256_HEX_LEN + 1];
	int rc;

	if ((role == STORE_ROLE_AGENT) != (host != NULL) || (host && !aw_valid_name(host)))
		return -EINVAL;
	rc = aw_token_generate(token);
	if (!rc)
		rc = aw_token_hash(token, hash);
	if (!rc)
		rc = store_token_create(c, role, host, hash, id);
	if (rc)
		memset(token, 0, AW_TOKEN_LEN + 1);
	return rc;
}

struct aw_auth *aw_auth_new(void)
{
	struct aw_auth *a = calloc(1, sizeof(*a));

	if (a)
		pthread_mutex_init(&a->lock, NULL);
	return a;
}

void aw_auth_free(struct aw_auth **ap)
{
	if (!*ap)
		return;
	pthread_mutex_destroy(&(*ap)->lock);
	free(*ap);
	*ap = NULL;
}

struct found {
	const char *hash;
	struct aw_principal *p;
	bool ok;
};

static int on_token(const struct store_token *t, void *cls)
{
	struct found *f = cls;

	/* The index found it by hash already; comparing again in constant time keeps a
	 * collation or index quirk from ever matching a different row. */
	if (strlen(t->hash) != AW_SHA256_HEX_LEN ||
	    !aw_ct_equal(t->hash, f->hash, AW_SHA256_HEX_LEN) || t->revoked_at)
		return 0;
	f->p->token_id = t->id;
	f->p->role = t->role;
	snprintf(f->p->host, sizeof(f->p->host), "%s", t->host ? t->host : "");
	f->ok = true;
	return 0;
}

static void record_use(struct aw_auth *a, int64_t id)
{
	size_t i;

	pthread_mutex_lock(&a->lock);
	for (i = 0; i < a->n_uses; i++)
		if (a->uses[i].id == id)
			break;
	if (i < USES_MAX) {
		a->uses[i].id = id;
		aw_time_now(a->uses[i].when);
		if (i == a->n_uses)
			a->n_uses++;
	}
	pthread_mutex_unlock(&a->lock);
}

int aw_auth_check(struct aw_auth *a, struct store_conn *c, const char *token,
                  struct aw_principal *p)
{
	char hash[AW_SHA256_HEX_LEN + 1];
	struct found f = {hash, p, false};
	int rc;

	memset(p, 0, sizeof(*p));
	if (!aw_token_well_formed(token))
		return -EACCES;
	rc = aw_token_hash(token, hash);
	if (rc)
		return rc;
	rc = store_token_find(c, hash, on_token, &f);
	if (rc == -ENOENT || (!rc && !f.ok))
		return -EACCES;
	if (rc)
		return rc;
	if (a)
		record_use(a, p->token_id);
	return 0;
}

int aw_auth_flush(struct aw_auth *a, struct store_conn *c)
{
	struct token_use uses[64];
	size_t n;
	int rc = 0;

	do {
		pthread_mutex_lock(&a->lock);
		n = a->n_uses < 64 ? a->n_uses : 64;
		a->n_uses -= n;
		memcpy(uses, a->uses + a->n_uses, n * sizeof(uses[0]));
		pthread_mutex_unlock(&a->lock);
		for (size_t i = 0; i < n; i++) {
			int r = store_token_touch(c, uses[i].id, uses[i].when);

			if (r && !rc)
				rc = r;
		}
	} while (n == 64);
	return rc;
}
