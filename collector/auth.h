/* Tokens: random 256-bit secrets shown once, stored as their SHA-256, compared in constant
 * time; roles agent (one host), ci and admin; and the check of an Authorization header. */
#ifndef AW_COLLECTOR_AUTH_H
#define AW_COLLECTOR_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aw/sha256.h"
#include "aw/util.h"
#include "store.h"

#define AW_TOKEN_PREFIX "awt_"
#define AW_TOKEN_LEN    (4 + 64) /* prefix and 32 random bytes in hex */

/* Who made a request. */
struct aw_principal {
	int64_t token_id;
	enum store_role role;
	char host[AW_NAME_MAX + 1]; /* agent tokens: the one host it speaks for */
};

/* Writes a fresh token into out[AW_TOKEN_LEN + 1]. Returns 0 or a negative errno. */
int aw_token_generate(char *out);

/* Whether `s` has the shape of a token (prefix and 64 lowercase hex digits). */
bool aw_token_well_formed(const char *s);

/* The hex SHA-256 of a token, as stored, into out[AW_SHA256_HEX_LEN + 1]. Returns 0 or -EIO. */
int aw_token_hash(const char *token, char *out);

/* Compares n bytes in time independent of where they differ. */
bool aw_ct_equal(const void *a, const void *b, size_t n);

/* The token of an Authorization header value "Bearer <token>" (scheme case-insensitive), or
 * NULL. The pointer is into `header`. */
const char *aw_bearer_token(const char *header);

/* Creates a token of `role` (host: the agent's host name, NULL otherwise) and writes the
 * secret into token[AW_TOKEN_LEN + 1]; only its hash is stored. Returns 0, -EINVAL (agent
 * without a valid host, or a host for another role) or a store error. */
int aw_token_create(struct store_conn *c, enum store_role role, const char *host, char *token,
                    int64_t *id);

struct aw_auth;

/* Remembers token uses for last_used_at. NULL on allocation failure. */
struct aw_auth *aw_auth_new(void);
void aw_auth_free(struct aw_auth **a);

/* Checks a presented token. Returns 0 with *p filled, -EACCES for a malformed, unknown or
 * revoked token (the caller answers 401), or a store error (503). `a` may be NULL. */
int aw_auth_check(struct aw_auth *a, struct store_conn *c, const char *token,
                  struct aw_principal *p);

/* Writes the recorded uses to the store (off the request path). Returns 0 or a store error;
 * uses that could not be written are dropped. */
int aw_auth_flush(struct aw_auth *a, struct store_conn *c);

#endif
