/* JSON text written straight into a buffer (json_write.h): the escapes and number forms of
 * jansson 2.14's dump.c and strconv.c, so that a reply written here reads the same as the one
 * json_dumps() wrote before. */
#include "json_write.h"

#include "aw/util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define REAL_MAX 32 /* %.17g of a double takes at most 24 bytes */

/* The escape of byte c, or NULL when it is written as it is. `seq` holds a \u00XX one. */
static const char *escape_of(unsigned char c, char seq[8])
{
	switch (c) {
	case '\\':
		return "\\\\";
	case '"':
		return "\\\"";
	case '\b':
		return "\\b";
	case '\f':
		return "\\f";
	case '\n':
		return "\\n";
	case '\r':
		return "\\r";
	case '\t':
		return "\\t";
	default:
		break;
	}
	if (c >= 0x20)
		return NULL;
	snprintf(seq, 8, "\\u%04X", (unsigned)c);
	return seq;
}

int aw_json_put_str(struct aw_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s, *run;
	char seq[8];
	int rc;

	if (!s)
		return aw_buf_append(b, "null", 4);
	rc = aw_buf_append(b, "\"", 1);
	for (run = p; !rc && *p;) {
		const char *esc;
		size_t n = 1;

		if (*p >= 0x80) {
			n = aw_utf8_len(p);
			if (!n)
				return -EINVAL;
			p += n;
			continue;
		}
		esc = escape_of(*p, seq);
		if (!esc) {
			p++;
			continue;
		}
		/* the plain bytes before it in one append */
		rc = aw_buf_append(b, run, (size_t)(p - run));
		if (!rc)
			rc = aw_buf_puts(b, esc);
		run = ++p;
	}
	if (!rc)
		rc = aw_buf_append(b, run, (size_t)(p - run));
	return rc ? rc : aw_buf_append(b, "\"", 1);
}

int aw_json_put_real(struct aw_buf *b, double v)
{
	char text[REAL_MAX + 2];
	int len;
	char *e;

	if (!isfinite(v))
		return -EINVAL; /* json_real() refuses it */
	len = snprintf(text, REAL_MAX, "%.17g", v);
	if (len < 0 || len >= REAL_MAX)
		return -EINVAL; /* (cannot happen) */
	if (!strchr(text, '.') && !strchr(text, 'e')) {
		memcpy(text + len, ".0", 3);
		len += 2;
	}
	e = strchr(text, 'e');
	if (e) {
		char *start = e + 1, *end = e + 2;

		if (*start == '-')
			start++;
		while (*end == '0')
			end++;
		if (end != start) {
			memmove(start, end, strlen(end) + 1);
			len = (int)strlen(text);
		}
	}
	return aw_buf_append(b, text, (size_t)len);
}

int aw_json_put_int(struct aw_buf *b, int64_t v)
{
	char text[24];
	int len = snprintf(text, sizeof(text), "%" PRId64, v);

	return aw_buf_append(b, text, (size_t)len);
}
