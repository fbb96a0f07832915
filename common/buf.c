/* Size-limited growable buffers; see buf.h. */
#include "aw/buf.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void aw_buf_init(struct aw_buf *b, size_t limit)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->limit = limit;
}

void aw_buf_release(struct aw_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void aw_buf_reset(struct aw_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

static int reserve(struct aw_buf *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (extra > b->limit || b->len > b->limit - extra)
		return -E2BIG;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if (cap > b->limit + 1)
		cap = b->limit + 1;
	p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int aw_buf_append(struct aw_buf *b, const void *p, size_t n)
{
	int rc;

	/* an initialised buffer (aw_buf_init) that never outgrew its limit */
	assert(b->len <= b->limit && (!b->data || b->len < b->cap));
	assert(p || !n);
	rc = reserve(b, n);

	if (rc)
		return rc;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int aw_buf_puts(struct aw_buf *b, const char *s)
{
	return aw_buf_append(b, s, strlen(s));
}

int aw_buf_vprintf(struct aw_buf *b, const char *fmt, va_list ap)
{
	va_list copy;
	int n, rc;

	va_copy(copy, ap);
	n = vsnprintf(NULL, 0, fmt, copy);
	va_end(copy);
	if (n < 0)
		return -EINVAL;
	rc = reserve(b, (size_t)n);
	if (rc)
		return rc;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int aw_buf_printf(struct aw_buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = aw_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

char *aw_buf_detach(struct aw_buf *b)
{
	char *p = b->data;

	if (!p)
		p = calloc(1, 1);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	return p;
}
