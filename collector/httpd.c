/* libmicrohttpd adapter (the only file that includes <microhttpd.h>): epoll with a pool of
 * polling threads, bodies collected into size-limited buffers, replies queued from the access
 * handler, suspend/resume for replies that come later, and a drain on shutdown. The listening
 * socket is bound here (an address in use is an error, never shared), and a reaper thread cuts
 * off connections whose request takes longer than request_timeout_ms to arrive: MHD's own
 * timeout is one of inactivity, which a client sending a byte a second never reaches. */
#include "httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "aw/buf.h"
#include "aw/log.h"
#include "aw/util.h"

#define HEADERS_MAX   4
#define PATH_MAX_LEN  1024 /* longer paths get 414 */
#define REAP_EVERY_MS 250  /* how often the reaper looks at the deadlines */

/* One open connection, for the reaper (MHD's socket context). */
struct conn_track {
	struct conn_track *prev, *next;
	MHD_socket fd;
	uint64_t deadline_ns; /* 0: none (the handler has the request, or it was cut off) */
};

struct aw_httpd_server {
	struct MHD_Daemon *daemon;
	struct aw_httpd_options opt;
	unsigned port;
	atomic_bool closing;           /* quiesced: replies close their connections */
	atomic_uint_fast64_t buffered; /* body bytes held by all requests */
	pthread_mutex_t lock;
	pthread_cond_t idle;
	uint64_t in_flight;
	/* the reaper: open connections and their deadlines, under conns_lock */
	pthread_mutex_t conns_lock;
	pthread_cond_t reaper_wake;
	struct conn_track conns; /* list head */
	bool reaper_stop, reaper_started;
	pthread_t reaper;
};

struct aw_httpd_req {
	struct aw_httpd_server *srv;
	struct MHD_Connection *conn;
	/* Copies, so that they outlive MHD's buffers (the done callback reads them). */
	char method[16];
	char url[PATH_MAX_LEN];
	struct aw_buf body;
	uint64_t reserved;  /* bytes of srv->buffered this request holds */
	uint64_t discarded; /* bytes thrown away after the limit */
	bool too_large, over_budget;
	bool handled;    /* the handler ran */
	bool must_close; /* refused before its body was read: the connection closes */
	bool suspended;  /* written by the handler's thread only */
	uint64_t started_ns;
	int tag;
	void *data;
	void (*free_data)(void *);
	/* the reply */
	bool has_reply;
	unsigned status;
	const char *content_type;
	char *reply;
	size_t reply_len;
	struct {
		char name[32];
		char value[512]; /* a Content-Security-Policy */
	} headers[HEADERS_MAX];
	int n_headers;
};

/* ---- request accessors ---- */

const char *aw_httpd_method(const struct aw_httpd_req *r)
{
	return r->method;
}

const char *aw_httpd_path(const struct aw_httpd_req *r)
{
	return r->url;
}

const char *aw_httpd_query(const struct aw_httpd_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

struct query_all {
	const char *name;
	const char **out;
	size_t max, n;
};

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
	struct query_all *q = cls;

	(void)kind;
	if (key && !strcmp(key, q->name)) {
		if (q->n < q->max)
			q->out[q->n] = value ? value : "";
		q->n++;
	}
	return MHD_YES;
}

size_t aw_httpd_query_all(const struct aw_httpd_req *r, const char *name, const char **out,
                          size_t max)
{
	struct query_all q = {.name = name, .out = out, .max = max};

	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, collect_arg, &q);
	return q.n;
}

const char *aw_httpd_header(const struct aw_httpd_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *aw_httpd_body(const struct aw_httpd_req *r, size_t *len)
{
	*len = r->body.len;
	return r->body.data ? r->body.data : "";
}

static void release_budget(struct aw_httpd_req *r)
{
	if (r->reserved) {
		atomic_fetch_sub(&r->srv->buffered, r->reserved);
		r->reserved = 0;
	}
}

void aw_httpd_body_release(struct aw_httpd_req *r)
{
	aw_buf_release(&r->body);
	release_budget(r);
}

uint64_t aw_httpd_started_ns(const struct aw_httpd_req *r)
{
	return r->started_ns;
}

unsigned aw_httpd_status(const struct aw_httpd_req *r)
{
	return r->has_reply ? r->status : 0;
}

void aw_httpd_set_data(struct aw_httpd_req *r, void *data, void (*free_fn)(void *))
{
	r->data = data;
	r->free_data = free_fn;
}

void *aw_httpd_data(const struct aw_httpd_req *r)
{
	return r->data;
}

void aw_httpd_set_tag(struct aw_httpd_req *r, int tag)
{
	r->tag = tag;
}

int aw_httpd_tag(const struct aw_httpd_req *r)
{
	return r->tag;
}

int aw_httpd_add_header(struct aw_httpd_req *r, const char *name, const char *value)
{
	if (r->n_headers >= HEADERS_MAX || strlen(name) >= sizeof(r->headers[0].name) ||
	    strlen(value) >= sizeof(r->headers[0].value))
		return -ENOSPC;
	snprintf(r->headers[r->n_headers].name, sizeof(r->headers[0].name), "%s", name);
	snprintf(r->headers[r->n_headers].value, sizeof(r->headers[0].value), "%s", value);
	r->n_headers++;
	return 0;
}

int aw_httpd_reply(struct aw_httpd_req *r, unsigned status, const char *content_type, char *body,
                   size_t len)
{
	if (r->has_reply) {
		free(body);
		return -EALREADY;
	}
	r->status = status;
	r->content_type = content_type;
	r->reply = body;
	r->reply_len = body ? len : 0;
	r->has_reply = true;
	return 0;
}

void aw_httpd_suspend(struct aw_httpd_req *r)
{
	r->suspended = true;
	MHD_suspend_connection(r->conn);
}

void aw_httpd_resume(struct aw_httpd_req *r)
{
	MHD_resume_connection(r->conn);
}

/* ---- MHD callbacks ---- */

/* Queues the request's reply. Returns MHD's verdict. */
static enum MHD_Result send_reply(struct aw_httpd_req *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	char *body = r->reply;

	r->reply = NULL;
	resp =
	    MHD_create_response_from_buffer(r->reply_len, body ? body : (char *)"",
	                                    body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	if (r->content_type)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type);
	for (int i = 0; i < r->n_headers; i++)
		MHD_add_response_header(resp, r->headers[i].name, r->headers[i].value);
	if (atomic_load(&r->srv->closing) || r->must_close)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = MHD_queue_response(r->conn, r->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result reply_now(struct aw_httpd_req *r, unsigned status, const char *code,
                                 const char *message)
{
	char *body = aw_asprintf("{\"error\":{\"code\":\"%s\",\"message\":\"%s\",\"field\":\"\"}}",
	                         code, message);

	aw_httpd_reply(r, status, "application/json", body, body ? strlen(body) : 0);
	return send_reply(r);
}

/* Refuses a request before its body is read: what follows on the connection cannot be told
 * from the body, so it is closed after the reply. */
static enum MHD_Result refuse(struct aw_httpd_req *r, unsigned status, const char *code,
                              const char *message)
{
	r->must_close = true;
	return reply_now(r, status, code, message);
}

/* ---- the reaper ---- */

static struct conn_track *conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* Starts (`arm`) or stops the clock of the connection's current request. */
static void set_deadline(struct aw_httpd_server *s, struct MHD_Connection *conn, bool arm)
{
	struct conn_track *t;

	if (!s->opt.request_timeout_ms)
		return;
	t = conn_of(conn);
	if (!t)
		return;
	pthread_mutex_lock(&s->conns_lock);
	t->deadline_ns = arm ? aw_monotonic_ns() + s->opt.request_timeout_ms * 1000000 : 0;
	pthread_mutex_unlock(&s->conns_lock);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
	struct aw_httpd_server *s = cls;
	struct conn_track *t = *socket_context;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
		    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

		t = calloc(1, sizeof(*t));
		if (!t || !ci)
			goto nomem; /* not tracked: only the idle timeout applies */
		t->fd = ci->connect_fd;
		pthread_mutex_lock(&s->conns_lock);
		t->deadline_ns = s->opt.request_timeout_ms
		                     ? aw_monotonic_ns() + s->opt.request_timeout_ms * 1000000
		                     : 0;
		t->next = s->conns.next;
		t->prev = &s->conns;
		s->conns.next->prev = t;
		s->conns.next = t;
		pthread_mutex_unlock(&s->conns_lock);
		*socket_context = t;
		return;
nomem:
		free(t);
		return;
	}
	if (!t)
		return;
	/* MHD closes the socket after this returns: unlinked first, the reaper never shuts
	 * down a descriptor that was reused for another connection. */
	pthread_mutex_lock(&s->conns_lock);
	t->prev->next = t->next;
	t->next->prev = t->prev;
	pthread_mutex_unlock(&s->conns_lock);
	free(t);
	*socket_context = NULL;
}

/* Shuts down the sockets of requests past their deadline: MHD then reads end-of-file and closes
 * the connection on its own thread (closing the descriptor here would race with it). */
static void *reaper_main(void *arg)
{
	struct aw_httpd_server *s = arg;

	pthread_mutex_lock(&s->conns_lock);
	while (!s->reaper_stop) {
		struct timespec until;
		uint64_t now = aw_monotonic_ns();

		for (struct conn_track *t = s->conns.next; t != &s->conns; t = t->next) {
			if (!t->deadline_ns || t->deadline_ns > now)
				continue;
			t->deadline_ns = 0;
			aw_debug("http: a request took longer than %llu ms to arrive; closing it",
			         (unsigned long long)s->opt.request_timeout_ms);
			shutdown(t->fd, SHUT_RDWR);
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += REAP_EVERY_MS * 1000000L;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&s->reaper_wake, &s->conns_lock, &until);
	}
	pthread_mutex_unlock(&s->conns_lock);
	return NULL;
}

static struct aw_httpd_req *request_new(struct aw_httpd_server *s, struct MHD_Connection *conn)
{
	struct aw_httpd_req *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->srv = s;
	r->conn = conn;
	r->tag = -1;
	r->started_ns = aw_monotonic_ns();
	aw_buf_init(&r->body, s->opt.max_body);
	pthread_mutex_lock(&s->lock);
	s->in_flight++;
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* Takes `n` more body bytes; false when they do not fit (the request is then failed). */
static bool take_body(struct aw_httpd_req *r, const char *data, size_t n)
{
	struct aw_httpd_server *s = r->srv;
	uint64_t total;

	if (r->too_large || r->over_budget) {
		r->discarded += n;
		return r->discarded <= s->opt.max_body; /* a stream that will not stop */
	}
	total = atomic_fetch_add(&s->buffered, n) + n;
	r->reserved += n;
	if (total > s->opt.max_buffered) {
		r->over_budget = true;
		aw_httpd_body_release(r);
		return true;
	}
	if (aw_buf_append(&r->body, data, n)) {
		/* Past the limit (-E2BIG) or out of memory: stop holding anything. */
		r->too_large = true;
		aw_httpd_body_release(r);
	}
	return true;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
	struct aw_httpd_server *s = cls;
	struct aw_httpd_req *r = *con_cls;

	if (!r) {
		const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
		                                             MHD_HTTP_HEADER_CONTENT_LENGTH);
		uint64_t announced;

		r = request_new(s, conn);
		if (!r)
			return MHD_NO;
		*con_cls = r;
		snprintf(r->method, sizeof(r->method), "%s", method);
		snprintf(r->url, sizeof(r->url), "%s", url);
		if (strlen(url) >= sizeof(r->url))
			return reply_now(r, 414, "too_long", "the path is too long");
		/* RFC 9112 3.2: a server must answer 400 to an HTTP/1.1 request without Host. */
		if (!strcmp(version, MHD_HTTP_VERSION_1_1) &&
		    !MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST))
			return refuse(r, 400, "invalid", "an HTTP/1.1 request needs a Host header");
		/* Both framings: a proxy in front may have read the other one, so where this
		 * body ends is not known (request smuggling); RFC 9112 6.1 lets us refuse it. */
		if (cl && MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
		                                      MHD_HTTP_HEADER_TRANSFER_ENCODING))
			return refuse(r, 400, "invalid",
			              "Content-Length and Transfer-Encoding must not both be sent");
		/* Refuse an announced oversized body before reading any of it. */
		if (cl && !aw_parse_u64(cl, UINT64_MAX, &announced) &&
		    announced > s->opt.max_body) {
			r->too_large = true;
			return reply_now(r, 413, "too_large", "the request body is too large");
		}
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;

		*upload_data_size = 0;
		return take_body(r, upload_data, n) ? MHD_YES : MHD_NO;
	}
	if (r->handled) {
		/* Resumed: the reply was set by whoever resumed us. */
		r->suspended = false;
		if (!r->has_reply)
			return reply_now(r, 500, "internal", "no reply was produced");
		return send_reply(r);
	}
	r->handled = true;
	set_deadline(s, conn, false); /* all of it arrived: now it is ours to answer */
	if (r->too_large)
		return reply_now(r, 413, "too_large", "the request body is too large");
	if (r->over_budget)
		return reply_now(r, 503, "busy", "too many uploads at once; retry later");
	s->opt.handle(r, s->opt.cls);
	/* The reply may now be written by another thread: touch only our own flag. */
	if (r->suspended)
		return MHD_YES;
	if (!r->has_reply)
		return reply_now(r, 500, "internal", "no reply was produced");
	return send_reply(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
	struct aw_httpd_server *s = cls;
	struct aw_httpd_req *r = *con_cls;

	if (!r)
		return;
	*con_cls = NULL;
	set_deadline(s, conn, true); /* the next request on this connection */
	if (s->opt.done)
		s->opt.done(r, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK, s->opt.cls);
	if (r->free_data)
		r->free_data(r->data);
	aw_httpd_body_release(r);
	free(r->reply);
	free(r);
	pthread_mutex_lock(&s->lock);
	s->in_flight--;
	if (!s->in_flight)
		pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	aw_debug("http: %s", msg);
}

/* MHD's unescape callback: aw_httpd_unescape(). */
size_t aw_httpd_unescape(char *s)
{
	char *w = s;

	for (const char *r = s; *r;) {
		int hi = r[0] == '%' ? aw_hex_value(r[1]) : -1,
		    lo = hi < 0 ? -1 : aw_hex_value(r[2]);

		if (lo >= 0 && (hi | lo)) {
			*w++ = (char)(hi << 4 | lo);
			r += 3;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
	return (size_t)(w - s);
}

static size_t unescape(void *cls, struct MHD_Connection *conn, char *s)
{
	(void)cls;
	(void)conn;
	return aw_httpd_unescape(s);
}

/* ---- server ---- */

/* Binds and listens on `ai` ourselves rather than in MHD: its error is then the errno of
 * bind(2), and the socket is never shared. SO_REUSEADDR only lets a restart bind while
 * connections of the previous process linger in TIME_WAIT; a listening socket still holds the
 * address (SO_REUSEPORT, which would split connections between two processes, is never set).
 * Returns the socket or a negative errno with *err. */
static int listen_on(const struct addrinfo *ai, const char *host, unsigned port, char **err)
{
	int fd, one = 1, zero = 0, rc;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return aw_errorf(err, -errno, "cannot create a socket: %s", strerror(errno));
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    (ai->ai_family == AF_INET6 && /* "[::]:8080" takes IPv4 clients too */
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) < 0)) {
		rc = aw_errorf(err, -errno, "cannot set up the socket: %s", strerror(errno));
		goto fail;
	}
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, SOMAXCONN) < 0) {
		rc = -errno;
		aw_errorf(err, rc, "cannot listen on '%s%s%s:%u': %s%s",
		          strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", port,
		          strerror(-rc),
		          rc == -EADDRINUSE ? " (another process listens there: is a collector "
		                              "running already?)"
		          : rc == -EADDRNOTAVAIL ? " (not an address of this machine)"
		                                 : "");
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return rc;
}

/* The port the socket is bound to (the ephemeral one the kernel picked for port 0). */
static unsigned bound_port(int fd, unsigned fallback)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return fallback;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

int aw_httpd_start(const struct aw_httpd_options *o, struct aw_httpd_server **out, char **err)
{
	struct aw_httpd_server *s = NULL;
	struct addrinfo hints = {0}, *ai = NULL;
	unsigned int flags =
	    MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	const char *host = o->host && *o->host ? o->host : "0.0.0.0";
	char port[8];
	int rc, fd = -1;

	*out = NULL;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(port, sizeof(port), "%u", o->port);
	rc = getaddrinfo(host, port, &hints, &ai);
	if (rc)
		return aw_errorf(err, -EINVAL, "cannot resolve listen address '%s': %s", host,
		                 gai_strerror(rc));
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s = calloc(1, sizeof(*s));
	if (!s) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	s->opt = *o;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->idle, NULL);
	pthread_mutex_init(&s->conns_lock, NULL);
	pthread_cond_init(&s->reaper_wake, NULL);
	s->conns.next = s->conns.prev = &s->conns;
	fd = listen_on(ai, host, o->port, err);
	if (fd < 0) {
		rc = fd;
		goto out;
	}
	s->port = bound_port(fd, o->port);
	/* A connection over the limits is accepted and closed at once (MHD does not read it),
	 * so that one client cannot take every connection: the total limit keeps descriptors
	 * and memory bounded, the per-address one leaves room for everybody else. */
	s->daemon = MHD_start_daemon(
	    flags, (uint16_t)o->port, NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, fd,
	    MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)(o->threads ? o->threads : 1),
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)o->max_connections,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)o->max_per_client,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)o->timeout_s,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024), MHD_OPTION_NOTIFY_COMPLETED,
	    on_completed, s, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
	    MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL, MHD_OPTION_UNESCAPE_CALLBACK, unescape,
	    NULL, MHD_OPTION_END);
	if (!s->daemon) {
		rc = aw_errorf(err, -EIO, "cannot start the HTTP server on '%s:%u'", host, o->port);
		goto out;
	}
	fd = -1; /* the daemon's now */
	if (o->request_timeout_ms) {
		rc = -pthread_create(&s->reaper, NULL, reaper_main, s);
		if (rc) {
			aw_errorf(err, rc, "cannot start a thread: %s", strerror(-rc));
			goto out;
		}
		s->reaper_started = true;
	}
	*out = s;
	s = NULL;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (s)
		aw_httpd_stop(&s);
	freeaddrinfo(ai);
	return rc;
}

unsigned aw_httpd_port(const struct aw_httpd_server *s)
{
	return s->port;
}

void aw_httpd_quiesce(struct aw_httpd_server *s)
{
	MHD_socket fd;

	if (atomic_exchange(&s->closing, true))
		return;
	fd = MHD_quiesce_daemon(s->daemon);
	if (fd != MHD_INVALID_SOCKET && close(fd) < 0)
		aw_warn("cannot close the listening socket: %s", strerror(errno));
}

uint64_t aw_httpd_in_flight(struct aw_httpd_server *s)
{
	uint64_t n;

	pthread_mutex_lock(&s->lock);
	n = s->in_flight;
	pthread_mutex_unlock(&s->lock);
	return n;
}

int aw_httpd_drain(struct aw_httpd_server *s, uint64_t timeout_ms)
{
	struct timespec deadline;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += (time_t)(timeout_ms / 1000);
	deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&s->lock);
	while (s->in_flight && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&s->idle, &s->lock, &deadline);
	rc = s->in_flight ? -ETIMEDOUT : 0;
	pthread_mutex_unlock(&s->lock);
	return rc;
}

void aw_httpd_stop(struct aw_httpd_server **sp)
{
	struct aw_httpd_server *s = *sp;

	if (!s)
		return;
	if (s->daemon)
		MHD_stop_daemon(s->daemon);
	if (s->reaper_started) {
		pthread_mutex_lock(&s->conns_lock);
		s->reaper_stop = true;
		pthread_cond_signal(&s->reaper_wake);
		pthread_mutex_unlock(&s->conns_lock);
		pthread_join(s->reaper, NULL);
	}
	pthread_cond_destroy(&s->reaper_wake);
	pthread_mutex_destroy(&s->conns_lock);
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->lock);
	free(s);
	*sp = NULL;
}
