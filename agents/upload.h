/* The agent's upload policy over the common HTTP client (aw/http_client.h): a document is
 * POSTed with retries (exponential backoff with jitter, Retry-After honoured) until a reply
 * says what to do with it: remove it from the spool, reject it, or keep it for later. */
#ifndef AW_AGENT_UPLOAD_H
#define AW_AGENT_UPLOAD_H

#include <stddef.h>

#include "aw/http_client.h"

enum aw_upload_outcome {
	AW_UPLOAD_STORED,   /* 2xx: the collector has it (201 created, 200 duplicate) */
	AW_UPLOAD_REJECTED, /* a final 4xx (not 401, 408, 429): the document itself is refused */
	AW_UPLOAD_DEFERRED, /* no success yet (down, 5xx, 401, out of retries, stopped): keep it */
};

/* POSTs `body` to `path` under the policy, sleeping between attempts (interrupted when the
 * client's stop flag is raised). `rep` holds the last reply. Returns the outcome; `rep->status`
 * and `rep->error` say why for the other outcomes. */
enum aw_upload_outcome aw_upload_post(struct aw_http_client *h, const char *path, const void *body,
                                      size_t len, const struct aw_retry_policy *policy,
                                      struct aw_http_client_reply *rep);

/* The same policy for a GET (the agent's questions to the collector): STORED is a 2xx reply,
 * REJECTED a final error reply, DEFERRED no answer yet. */
enum aw_upload_outcome aw_upload_get(struct aw_http_client *h, const char *path,
                                     const struct aw_retry_policy *policy,
                                     struct aw_http_client_reply *rep);

#endif
