/* The HTTP client over libcurl (the project's only libcurl adapter): timeouts, TLS
 * verification, bounded replies, Retry-After, exponential backoff with jitter. See
 * aw/http_client.h. */
#include "aw/http_client.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "aw/util.h"

#define URL_MAX 4096

#ifndef AW_VERSION
#define AW_VERSION "0.0.0"
#endif

struct aw_http_client {
	CURL *curl;
	char *base_url;
	struct curl_slist *headers_get, *headers_post;
	uint64_t timeout_ms;
	volatile int *stop;
	struct aw_http_client_reply *rep; /* the reply being filled */
	char errbuf[CURL_ERROR_SIZE];
};

int aw_http_client_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -EIO;
}

void aw_http_client_global_cleanup(void)
{
	curl_global_cleanup();
}

void aw_http_client_reply_init(struct aw_http_client_reply *rep)
{
	memset(rep, 0, sizeof(*rep));
	aw_buf_init(&rep->body, AW_HTTP_CLIENT_BODY_LIMIT);
	rep->retry_after_ms = -1;
}

void aw_http_client_reply_release(struct aw_http_client_reply *rep)
{
	aw_buf_release(&rep->body);
}

static void reply_reset(struct aw_http_client_reply *rep)
{
	aw_buf_reset(&rep->body);
	rep->status = 0;
	rep->truncated = false;
	rep->retry_after_ms = -1;
	rep->error[0] = '\0';
}

static size_t on_body(char *data, size_t size, size_t n, void *cls)
{
	struct aw_http_client_reply *rep = cls;
	size_t len = size * n, room = rep->body.limit - rep->body.len;

	if (len > room) {
		rep->truncated = true;
		if (room)
			aw_buf_append(&rep->body, data, room);
		return len; /* keep reading so the status and connection stay sane */
	}
	if (aw_buf_append(&rep->body, data, len))
		rep->truncated = true;
	return len;
}

static size_t on_header(char *data, size_t size, size_t n, void *cls)
{
	struct aw_http_client_reply *rep = cls;
	size_t len = size * n;
	char value[128];
	size_t v = 0;
	int64_t ms;

	if (len >= 5 && !strncmp(data, "HTTP/", 5)) {
		rep->retry_after_ms = -1; /* a new reply (after a 100 Continue) */
		return len;
	}
	if (len < 12 || strncasecmp(data, "retry-after:", 12))
		return len;
	for (size_t i = 12; i < len && v < sizeof(value) - 1; i++) {
		if (data[i] == '\r' || data[i] == '\n')
			break;
		if (v || !isspace((unsigned char)data[i]))
			value[v++] = data[i];
	}
	while (v && isspace((unsigned char)value[v - 1]))
		v--;
	value[v] = '\0';
	if (!aw_retry_after_parse(value, time(NULL), &ms))
		rep->retry_after_ms = ms;
	return len;
}

static int on_xfer(void *cls, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                   curl_off_t ulnow)
{
	struct aw_http_client *h = cls;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	return h->stop && *h->stop ? 1 : 0;
}

/* Appends a header line to a list; the list is unchanged on failure. Returns 0 or -ENOMEM. */
static int add_header(struct curl_slist **list, const char *line)
{
	struct curl_slist *l = curl_slist_append(*list, line);

	if (!l)
		return -ENOMEM;
	*list = l;
	return 0;
}

struct aw_http_client *aw_http_client_new(const struct aw_http_client_opts *opts, char **err)
{
	struct aw_http_client *h = calloc(1, sizeof(*h));
	char *auth = NULL;
	CURLcode cc = CURLE_OK;

	if (!h) {
		aw_errorf(err, -ENOMEM, "out of memory");
		return NULL;
	}
	h->base_url = strdup(opts->base_url);
	h->curl = curl_easy_init();
	if (!h->base_url || !h->curl) {
		aw_errorf(err, -ENOMEM, "cannot set up an HTTP client: out of memory");
		goto fail;
	}
	h->timeout_ms = opts->timeout_ms;
	if (opts->token) {
		auth = aw_asprintf("Authorization: Bearer %s", opts->token);
		if (!auth) {
			aw_errorf(err, -ENOMEM, "out of memory");
			goto fail;
		}
	}
	/* GET: Accept (+ Authorization); POST: the same plus the body's type, no Expect. */
	if (add_header(&h->headers_get, "Accept: application/json") ||
	    (auth && add_header(&h->headers_get, auth)) ||
	    add_header(&h->headers_post, "Accept: application/json") ||
	    (auth && add_header(&h->headers_post, auth)) ||
	    add_header(&h->headers_post, "Content-Type: application/json") ||
	    add_header(&h->headers_post, "Expect:")) {
		aw_errorf(err, -ENOMEM, "out of memory");
		goto fail;
	}
	/* Every option that never changes between requests. */
	if (!cc)
		cc = curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
	if (!cc)
		cc = curl_easy_setopt(h->curl, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	if (!cc)
		cc = curl_easy_setopt(h->curl, CURLOPT_PROTOCOLS,
		                      (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	if (!cc)
		cc = curl_easy_setopt(h->curl, CURLOPT_FOLLOWLOCATION, 0L);
	if (!cc)
		cc = curl_easy_setopt(h->curl, CURLOPT_SSL_VERIFYPEER, 1L);
	if (!cc)
		cc = curl_easy_setopt(h->curl, CURLOPT_SSL_VERIFYHOST, 2L);
	if (!cc && opts->ca_file)
		cc = curl_easy_setopt(h->curl, CURLOPT_CAINFO, opts->ca_file);
	if (!cc)
		cc = curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS,
		                      (long)opts->connect_timeout_ms);
	if (!cc)
		cc = curl_easy_setopt(h->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	if (!cc)
		cc =
		    curl_easy_setopt(h->curl, CURLOPT_USERAGENT,
		                     opts->user_agent ? opts->user_agent : "atomwatch/" AW_VERSION);
	if (!cc)
		cc = curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, h->errbuf);
	if (!cc)
		cc = curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_body);
	if (!cc)
		cc = curl_easy_setopt(h->curl, CURLOPT_HEADERFUNCTION, on_header);
	if (!cc)
		cc = curl_easy_setopt(h->curl, CURLOPT_XFERINFOFUNCTION, on_xfer);
	if (!cc)
		cc = curl_easy_setopt(h->curl, CURLOPT_XFERINFODATA, h);
	if (!cc)
		cc = curl_easy_setopt(h->curl, CURLOPT_NOPROGRESS, 0L);
	if (cc) {
		aw_errorf(err, -EINVAL, "cannot set up an HTTP client: %s", curl_easy_strerror(cc));
		goto fail;
	}
	if (auth) {
		memset(auth, 0, strlen(auth));
		free(auth);
	}
	return h;
fail:
	if (auth) {
		memset(auth, 0, strlen(auth));
		free(auth);
	}
	aw_http_client_free(&h);
	return NULL;
}

/* Frees a header list after wiping its strings (one holds the token). */
static void wipe_slist(struct curl_slist **l)
{
	for (struct curl_slist *i = *l; i; i = i->next)
		memset(i->data, 0, strlen(i->data));
	curl_slist_free_all(*l);
	*l = NULL;
}

void aw_http_client_free(struct aw_http_client **hp)
{
	struct aw_http_client *h = *hp;

	if (!h)
		return;
	if (h->curl)
		curl_easy_cleanup(h->curl);
	wipe_slist(&h->headers_get);
	wipe_slist(&h->headers_post);
	free(h->base_url);
	free(h);
	*hp = NULL;
}

void aw_http_client_set_stop(struct aw_http_client *h, volatile int *stop)
{
	h->stop = stop;
}

volatile int *aw_http_client_stop_flag(const struct aw_http_client *h)
{
	return h->stop;
}

const char *aw_http_client_base_url(const struct aw_http_client *h)
{
	return h->base_url;
}

static int curl_errno(CURLcode cc)
{
	switch (cc) {
	case CURLE_ABORTED_BY_CALLBACK:
		return -EINTR;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
		return -EHOSTUNREACH;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CONNECT_ERROR:
		return -EPROTO;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

int aw_http_client_request(struct aw_http_client *h, const char *method, const char *path,
                           const void *body, size_t len, uint64_t timeout_ms,
                           struct aw_http_client_reply *rep)
{
	char url[URL_MAX];
	bool post = !strcmp(method, "POST");
	CURLcode cc = CURLE_OK;
	long status = 0;

	reply_reset(rep);
	h->errbuf[0] = '\0';
	if (snprintf(url, sizeof(url), "%s%s", h->base_url, path) >= (int)sizeof(url)) {
		snprintf(rep->error, sizeof(rep->error), "the URL is too long");
		return -ENAMETOOLONG;
	}
	if (!cc)
		cc = curl_easy_setopt(h->curl, CURLOPT_URL, url);
	if (!cc)
		cc = curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS,
		                      (long)(timeout_ms ? timeout_ms : h->timeout_ms));
	if (!cc)
		cc = curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, rep);
	if (!cc)
		cc = curl_easy_setopt(h->curl, CURLOPT_HEADERDATA, rep);
	if (post) {
		if (!cc)
			cc = curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, h->headers_post);
		if (!cc)
			cc = curl_easy_setopt(h->curl, CURLOPT_POST, 1L);
		if (!cc)
			cc =
			    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
		if (!cc)
			cc = curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body ? body : "");
	} else {
		if (!cc)
			cc = curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, h->headers_get);
		if (!cc)
			cc = curl_easy_setopt(h->curl, CURLOPT_HTTPGET, 1L);
	}
	if (!cc)
		cc = curl_easy_perform(h->curl);
	if (cc) {
		snprintf(rep->error, sizeof(rep->error), "%s",
		         h->errbuf[0] ? h->errbuf : curl_easy_strerror(cc));
		return curl_errno(cc);
	}
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
	rep->status = status;
	return 0;
}

int aw_retry_after_parse(const char *value, time_t now, int64_t *ms)
{
	uint64_t secs;
	time_t when;

	if (!value || !*value)
		return -EINVAL;
	if (!aw_parse_u64(value, UINT64_C(1) << 32, &secs)) {
		*ms = (int64_t)secs * 1000;
		return 0;
	}
	/* an HTTP-date needs a weekday or month name; curl_getdate() accepts more than that */
	if (!isalpha((unsigned char)value[0]))
		return -EINVAL;
	when = curl_getdate(value, NULL);
	if (when == (time_t)-1)
		return -EINVAL;
	*ms = when > now ? (int64_t)(when - now) * 1000 : 0;
	return 0;
}

uint64_t aw_backoff_ms(const struct aw_retry_policy *p, uint32_t attempt, uint64_t random)
{
	uint64_t d = p->backoff_ms ? p->backoff_ms : 1;

	for (uint32_t i = 0; i < attempt && d < p->backoff_max_ms; i++)
		d *= 2;
	if (d > p->backoff_max_ms)
		d = p->backoff_max_ms;
	return d - d / 2 + (d / 2 ? random % (d / 2 + 1) : 0);
}

bool aw_http_client_retryable(long status)
{
	return status == 0 || status == 408 || status == 429 || status >= 500;
}
