/* Names of things on disk and on the web: the path segment encoding, where each chart and each
 * exported page lives, and which request paths may be served. One place, so that the charts,
 * the HTTP routes and the static export always agree. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "aw/util.h"

#define SEGMENT_MAX 200 /* longest encoded segment, well under NAME_MAX */

size_t aw_utf8_seq_len(const unsigned char *p)
{
	unsigned c = p[0];
	size_t n;
	unsigned cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0; /* also stops at the terminator */
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

static bool segment_plain(unsigned char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || (c == '.' && !first);
}

int aw_segment_encode(const char *s, char *out, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	if (!s || !*s)
		return -EINVAL;
	for (size_t i = 0; s[i]; i++) {
		unsigned char c = (unsigned char)s[i];
		size_t need = segment_plain(c, i == 0) ? 1 : 3;

		if (o + need >= size || o + need > SEGMENT_MAX)
			return -ENAMETOOLONG;
		if (need == 1) {
			out[o++] = (char)c;
		} else {
			out[o++] = '~';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
	return 0;
}

/* A digit of a "~XX" escape: uppercase only, as aw_segment_encode() writes it. */
static int hex_value(char c)
{
	return c >= 'a' && c <= 'f' ? -1 : aw_hex_value(c);
}

int aw_segment_decode(const char *seg, char *out, size_t size)
{
	size_t o = 0;

	if (!seg || !*seg)
		return -EINVAL;
	for (size_t i = 0; seg[i]; i++) {
		unsigned char c = (unsigned char)seg[i];

		if (c == '~') {
			int hi = hex_value(seg[i + 1]), lo = hi < 0 ? -1 : hex_value(seg[i + 2]);

			if (hi < 0 || lo < 0)
				return -EINVAL;
			c = (unsigned char)(hi << 4 | lo);
			/* only the canonical form: what encode would have escaped */
			if (c == 0 || segment_plain(c, o == 0))
				return -EINVAL;
			i += 2;
		} else if (!segment_plain(c, o == 0)) {
			return -EINVAL;
		}
		if (o + 1 >= size)
			return -ENAMETOOLONG;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return 0;
}

void aw_chart_size(enum aw_chart_kind kind, unsigned *width, unsigned *height)
{
	switch (kind) {
	case AW_CHART_TREND:
		*width = 960;
		*height = 400;
		return;
	case AW_CHART_HEATMAP:
		*width = 960;
		*height = 600;
		return;
	case AW_CHART_CONTENTION:
		*width = 640;
		*height = 480;
		return;
	case AW_CHART_COMPARE:
	case AW_CHART_PERCPU:
	default:
		*width = 960;
		*height = 480;
		return;
	}
}

static bool present(const char *s)
{
	return s && *s;
}

int aw_chart_path(const struct aw_chart_id *id, const char *ext, char *out, size_t size)
{
	char a[SEGMENT_MAX + 1], b[SEGMENT_MAX + 1], c[SEGMENT_MAX + 1];
	int n, rc;

	if (!ext || (strcmp(ext, "svg") && strcmp(ext, "png") && strcmp(ext, "hash")))
		return -EINVAL;
	switch (id->kind) {
	case AW_CHART_COMPARE:
		if (!present(id->commit) || !present(id->host) || !present(id->base))
			return -EINVAL;
		if ((rc = aw_segment_encode(id->commit, a, sizeof(a))) ||
		    (rc = aw_segment_encode(id->host, b, sizeof(b))) ||
		    (rc = aw_segment_encode(id->base, c, sizeof(c))))
			return rc;
		n = snprintf(out, size, "charts/commits/%s/hosts/%s/compare-%s.%s", a, b, c, ext);
		break;
	case AW_CHART_HEATMAP:
		if (!present(id->commit))
			return -EINVAL;
		if ((rc = aw_segment_encode(id->commit, a, sizeof(a))))
			return rc;
		n = snprintf(out, size, "charts/commits/%s/heatmap.%s", a, ext);
		break;
	case AW_CHART_PERCPU:
		if (!present(id->commit) || !present(id->host))
			return -EINVAL;
		if ((rc = aw_segment_encode(id->commit, a, sizeof(a))) ||
		    (rc = aw_segment_encode(id->host, b, sizeof(b))))
			return rc;
		n = snprintf(out, size, "charts/commits/%s/hosts/%s/percpu.%s", a, b, ext);
		break;
	case AW_CHART_CONTENTION:
		if (!present(id->commit) || !present(id->host) || !present(id->name))
			return -EINVAL;
		if ((rc = aw_segment_encode(id->commit, a, sizeof(a))) ||
		    (rc = aw_segment_encode(id->host, b, sizeof(b))) ||
		    (rc = aw_segment_encode(id->name, c, sizeof(c))))
			return rc;
		n = snprintf(out, size, "charts/commits/%s/hosts/%s/contention-%s.%s", a, b, c,
		             ext);
		break;
	case AW_CHART_AB:
		if (!present(id->name))
			return -EINVAL;
		if ((rc = aw_segment_encode(id->name, a, sizeof(a))))
			return rc;
		n = snprintf(out, size, "charts/ab/%s/ratios.%s", a, ext);
		break;
	case AW_CHART_TREND:
		if (!present(id->host) || !present(id->ref) || !present(id->name))
			return -EINVAL;
		if ((rc = aw_segment_encode(id->host, a, sizeof(a))) ||
		    (rc = aw_segment_encode(id->ref, b, sizeof(b))) ||
		    (rc = aw_segment_encode(id->name, c, sizeof(c))))
			return rc;
		n = snprintf(out, size, "charts/hosts/%s/refs/%s/trend-%s.%s", a, b, c, ext);
		break;
	default:
		return -EINVAL;
	}
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

bool aw_chart_path_servable(const char *path)
{
	size_t len, seg_len = 0, segments = 0;

	if (!path || strncmp(path, "charts/", 7) != 0)
		return false;
	len = strlen(path);
	if (len > 1024 || len < 11 ||
	    (strcmp(path + len - 4, ".svg") != 0 && strcmp(path + len - 4, ".png") != 0))
		return false;
	for (const char *p = path + 7;; p++) {
		if (*p == '/' || *p == '\0') {
			if (seg_len == 0)
				return false;
			segments++;
			seg_len = 0;
			if (*p == '\0')
				break;
			continue;
		}
		if (!segment_plain((unsigned char)*p, seg_len == 0) && *p != '~')
			return false;
		seg_len++;
	}
	return segments >= 2;
}

int aw_page_path(enum aw_page_kind kind, const char *a, const char *b, char *out, size_t size)
{
	char sa[SEGMENT_MAX + 1], sb[SEGMENT_MAX + 1];
	int n, rc;

	switch (kind) {
	case AW_PAGE_OVERVIEW:
		n = snprintf(out, size, "index.html");
		break;
	case AW_PAGE_HOST:
	case AW_PAGE_COMMIT:
		if ((rc = aw_segment_encode(a, sa, sizeof(sa))))
			return rc;
		n = snprintf(out, size, "%s/%s/index.html",
		             kind == AW_PAGE_HOST ? "hosts" : "commits", sa);
		break;
	case AW_PAGE_COMPARE:
		if ((rc = aw_segment_encode(a, sa, sizeof(sa))) ||
		    (rc = aw_segment_encode(b, sb, sizeof(sb))))
			return rc;
		n = snprintf(out, size, "compare/%s/%s/index.html", sa, sb);
		break;
	case AW_PAGE_AB:
		if ((rc = aw_segment_encode(a, sa, sizeof(sa))))
			return rc;
		n = snprintf(out, size, "ab/%s/index.html", sa);
		break;
	default:
		return -EINVAL;
	}
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}
