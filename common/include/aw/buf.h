/* Growable byte buffers with a hard size limit fixed at init (the curl dynbuf idea): everything
 * fed by the network or a file goes through one of these, so no input can grow memory without
 * bound. The data is always NUL-terminated. */
#ifndef AW_BUF_H
#define AW_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct aw_buf {
	char *data;   /* NULL until the first append */
	size_t len;   /* bytes used, terminator excluded */
	size_t cap;   /* bytes allocated */
	size_t limit; /* most bytes the buffer may ever hold */
};

/* Prepares an empty buffer that will refuse to hold more than `limit` bytes. */
void aw_buf_init(struct aw_buf *b, size_t limit);

/* Frees the data and leaves the buffer empty (and reusable with the same limit). */
void aw_buf_release(struct aw_buf *b);

/* Empties the buffer, keeping its memory. */
void aw_buf_reset(struct aw_buf *b);

/* Appends `n` bytes. Returns 0, -ENOMEM, or -E2BIG when the limit would be exceeded; on error
 * the buffer is unchanged. */
int aw_buf_append(struct aw_buf *b, const void *p, size_t n);

/* Appends a NUL-terminated string; same returns as aw_buf_append(). */
int aw_buf_puts(struct aw_buf *b, const char *s);

/* Appends formatted text; same returns as aw_buf_append() (-EINVAL on a format error). */
int aw_buf_printf(struct aw_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int aw_buf_vprintf(struct aw_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* Hands the data to the caller (free() it) and leaves the buffer empty. Returns NULL only for
 * an empty buffer whose allocation fails. */
char *aw_buf_detach(struct aw_buf *b);

#endif
