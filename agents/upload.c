/* The agent's upload policy: which replies are final, retries with backoff and Retry-After.
 * The transfers are the common HTTP client's (common/http_client.c). See upload.h. */
#include "upload.h"

#include <errno.h>
#include <stdint.h>

#include "aw/log.h"
#include "aw/util.h"

/* One request under the policy; the outcome as aw_upload_post() says. */
static enum aw_upload_outcome with_retries(struct aw_http_client *h, const char *method,
                                           const char *path, const void *body, size_t len,
                                           const struct aw_retry_policy *policy,
                                           struct aw_http_client_reply *rep)
{
	const char *what = body ? "upload" : "request";

	for (uint32_t attempt = 0;; attempt++) {
		volatile int *stop = aw_http_client_stop_flag(h);
		uint64_t random = 0, delay;
		int rc = aw_http_client_request(h, method, path, body, len, 0, rep);

		if (!rc && rep->status >= 200 && rep->status < 300)
			return AW_UPLOAD_STORED;
		if (!rc && rep->status == 401)
			return AW_UPLOAD_DEFERRED; /* the token, not the document: keep it */
		if (!rc && !aw_http_client_retryable(rep->status))
			return AW_UPLOAD_REJECTED;
		if (rc == -EINTR || attempt >= policy->retries || (stop && *stop))
			return AW_UPLOAD_DEFERRED;
		aw_random_bytes(&random, sizeof(random));
		delay = aw_backoff_ms(policy, attempt, random);
		if (rep->retry_after_ms >= 0) {
			if ((uint64_t)rep->retry_after_ms > policy->backoff_max_ms)
				return AW_UPLOAD_DEFERRED; /* later than we wait: leave it */
			delay = (uint64_t)rep->retry_after_ms;
		}
		if (rc)
			aw_info("%s to %s%s failed (%s); retry %u of %u in %.1fs", what,
			        aw_http_client_base_url(h), path, rep->error, attempt + 1,
			        policy->retries, (double)delay / 1000);
		else
			aw_info("%s to %s%s answered %ld; retry %u of %u in %.1fs", what,
			        aw_http_client_base_url(h), path, rep->status, attempt + 1,
			        policy->retries, (double)delay / 1000);
		aw_sleep_ns(delay * 1000000, stop);
	}
}

enum aw_upload_outcome aw_upload_post(struct aw_http_client *h, const char *path, const void *body,
                                      size_t len, const struct aw_retry_policy *policy,
                                      struct aw_http_client_reply *rep)
{
	return with_retries(h, "POST", path, body, len, policy, rep);
}

enum aw_upload_outcome aw_upload_get(struct aw_http_client *h, const char *path,
                                     const struct aw_retry_policy *policy,
                                     struct aw_http_client_reply *rep)
{
	return with_retries(h, "GET", path, NULL, 0, policy, rep);
}
