/* What atomwatch-ci writes from a gate report: the console summary, Markdown (regressions first),
 * JUnit XML and GitHub workflow commands, with every string from the collector escaped for its
 * format. Appends go through a sticky-error sink so a full buffer is reported once. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ci.h"

#define MD_MAX_ROWS   200 /* rows per Markdown table; GitHub caps a job summary at 1 MiB */
#define TEXT_MAX_ROWS 50
#define SHORT_COMMIT  12
#define LIMIT_SCRATCH (64u << 10)

struct sink {
	struct aw_buf *b;
	int rc;
};

static void put(struct sink *s, const char *str)
{
	if (!s->rc)
		s->rc = aw_buf_puts(s->b, str);
}

static void putf(struct sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void putf(struct sink *s, const char *fmt, ...)
{
	va_list ap;

	if (s->rc)
		return;
	va_start(ap, fmt);
	s->rc = aw_buf_vprintf(s->b, fmt, ap);
	va_end(ap);
}

static void put_xml(struct sink *s, const char *str)
{
	if (!s->rc)
		s->rc = aw_ci_xml_escape(s->b, str ? str : "");
}

static void put_md(struct sink *s, const char *str)
{
	if (!s->rc)
		s->rc = aw_ci_md_escape(s->b, str ? str : "");
}

static void put_gh(struct sink *s, const char *str, bool property)
{
	if (!s->rc)
		s->rc = aw_ci_gh_escape(s->b, str ? str : "", property);
}

/* ---- escaping ---- */

static const char hex[] = "0123456789ABCDEF";

int aw_ci_xml_escape(struct aw_buf *out, const char *s)
{
	int rc = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p && !rc; p++) {
		switch (*p) {
		case '&':
			rc = aw_buf_puts(out, "&amp;");
			break;
		case '<':
			rc = aw_buf_puts(out, "&lt;");
			break;
		case '>':
			rc = aw_buf_puts(out, "&gt;");
			break;
		case '"':
			rc = aw_buf_puts(out, "&quot;");
			break;
		case '\'':
			rc = aw_buf_puts(out, "&apos;");
			break;
		case '\t':
		case '\n':
		case '\r':
			rc = aw_buf_append(out, p, 1);
			break;
		default:
			if (*p < 0x20) {
				rc = aw_buf_puts(out, "\xef\xbf\xbd");
			} else if (p[0] == 0xef && p[1] == 0xbf && (p[2] == 0xbe || p[2] == 0xbf)) {
				/* U+FFFE and U+FFFF are not XML characters either */
				rc = aw_buf_puts(out, "\xef\xbf\xbd");
				p += 2;
			} else {
				rc = aw_buf_append(out, p, 1);
			}
		}
	}
	return rc;
}

int aw_ci_md_escape(struct aw_buf *out, const char *s)
{
	int rc = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p && !rc; p++) {
		switch (*p) {
		case '&':
			rc = aw_buf_puts(out, "&amp;");
			break;
		case '<':
			rc = aw_buf_puts(out, "&lt;");
			break;
		case '>':
			rc = aw_buf_puts(out, "&gt;");
			break;
		case '|':
			rc = aw_buf_puts(out, "&#124;");
			break;
		case '@': /* no mentions */
			rc = aw_buf_puts(out, "&#64;");
			break;
		case '#': /* no issue links */
			rc = aw_buf_puts(out, "&#35;");
			break;
		case '\\':
		case '`':
		case '*':
		case '_':
		case '[':
		case ']':
		case '(':
		case ')':
		case '~':
		case '!':
		case '$':
			rc = aw_buf_printf(out, "\\%c", *p);
			break;
		default:
			rc = aw_buf_append(
			    out, *p < 0x20 || *p == 0x7f ? (const unsigned char *)" " : p, 1);
		}
	}
	return rc;
}

int aw_ci_gh_escape(struct aw_buf *out, const char *s, bool property)
{
	int rc = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p && !rc; p++) {
		if (*p == '%' || *p == '\r' || *p == '\n' || (property && (*p == ':' || *p == ',')))
			rc = aw_buf_printf(out, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
		else if (*p < 0x20 || *p == 0x7f) /* no terminal escapes in the log */
			rc = aw_buf_puts(out, " ");
		else
			rc = aw_buf_append(out, p, 1);
	}
	return rc;
}

int aw_ci_url_encode(struct aw_buf *out, const char *s)
{
	int rc = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p && !rc; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("._~-", *p))
			rc = aw_buf_append(out, p, 1);
		else
			rc = aw_buf_printf(out, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
	}
	return rc;
}

/* Appends a URL, percent-encoding what could end a Markdown link or an attribute. */
static int put_url_chars(struct aw_buf *out, const char *s)
{
	int rc = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p && !rc; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~/:?#@!$&*+,;=%", *p))
			rc = aw_buf_append(out, p, 1);
		else
			rc = aw_buf_printf(out, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
	}
	return rc;
}

int aw_ci_link_url(struct aw_buf *out, const char *base_url, const char *href)
{
	size_t mark = out->len;
	int rc;

	if (!href)
		return -EINVAL;
	if (href[0] == '/' && href[1] != '/') {
		rc = put_url_chars(out, base_url);
		if (!rc)
			rc = put_url_chars(out, href);
	} else if (!strncmp(href, "http://", 7) || !strncmp(href, "https://", 8)) {
		rc = put_url_chars(out, href);
	} else {
		return -EINVAL;
	}
	if (rc) {
		out->len = mark;
		if (out->data)
			out->data[mark] = '\0';
	}
	return rc;
}

/* ---- numbers ---- */

static const char *fmt_ns(char *buf, size_t size, double v)
{
	if (!isfinite(v))
		snprintf(buf, size, "n/a");
	else if (v < 0.1)
		snprintf(buf, size, "%.3f ns", v);
	else if (v < 10)
		snprintf(buf, size, "%.2f ns", v);
	else if (v < 100)
		snprintf(buf, size, "%.1f ns", v);
	else
		snprintf(buf, size, "%.0f ns", v);
	return buf;
}

static const char *fmt_pct(char *buf, size_t size, double rel)
{
	if (!isfinite(rel))
		snprintf(buf, size, "n/a");
	else
		snprintf(buf, size, "%+.1f%%", rel * 100);
	return buf;
}

/* A metric's change as aw_change_text() tells it: "below resolution -> 23.7 ns" from a baseline
 * below resolution (plain incq hardened into lock xadd: 0.04 ns to 23.7 ns is no percentage),
 * in ns for a metric judged in ns, else the collector's relative change in percent. */
static const char *fmt_change(char *buf, size_t size, const struct aw_ci_metric *m)
{
	if (!aw_change_text(buf, size, m->baseline, m->head, m->change, m->absolute))
		snprintf(buf, size, "n/a");
	return buf;
}

/* The same with '>' as "&gt;", for XML and Markdown (nothing else of it needs escaping). */
static const char *fmt_change_gt(char *buf, size_t size, const struct aw_ci_metric *m)
{
	char plain[64];
	size_t o = 0;

	fmt_change(plain, sizeof(plain), m);
	for (const char *p = plain; *p && o + 5 < size; p++) {
		if (*p == '>') {
			memcpy(buf + o, "&gt;", 4);
			o += 4;
		} else {
			buf[o++] = *p;
		}
	}
	buf[o] = '\0';
	return buf;
}

/* The ns a metric's relative change is relative to, for a change told in ns (its baseline; a
 * metric judged in ns: its level above resolution, change_ns / change); NAN when unknown. */
static double change_scale(const struct aw_ci_metric *m)
{
	if (m->absolute)
		return m->change != 0 ? m->change_ns / m->change : NAN;
	return m->baseline;
}

/* The line that tells a metric's levels apart (verdict_doc.h), or NULL for a metric with fewer
 * than two. */
static const char *levels_text(char *buf, size_t size, const struct aw_ci_metric *m)
{
	if (!m || !m->doc)
		return NULL;
	return aw_metric_verdict_levels_text(m->doc, buf, size);
}

/* The evidence behind a metric's verdict as plain text: interval, p and q values, baseline
 * window, threshold, bimodality, the collector's note, and with `levels` the line that tells
 * its levels apart. */
static void evidence(struct sink *s, const struct aw_ci_metric *m, bool levels)
{
	char lv[512];
	char a[32], b[32];
	const char *sep = "";

	if (aw_change_in_ns(m->baseline, m->absolute)) {
		/* a change told in ns has its interval in ns, never in percent */
		double scale = change_scale(m);

		if (isfinite(scale) && scale > 0 && isfinite(m->change_lo) &&
		    isfinite(m->change_hi)) {
			putf(s, "95%% interval %+.3g ns to %+.3g ns", m->change_lo * scale,
			     m->change_hi * scale);
			sep = "; ";
		}
	} else if (isfinite(m->change_lo) || isfinite(m->change_hi)) {
		putf(s, "95%% interval %s to %s", fmt_pct(a, sizeof(a), m->change_lo),
		     fmt_pct(b, sizeof(b), m->change_hi));
		sep = "; ";
	}
	if (isfinite(m->pvalue)) {
		putf(s, "%sp = %.2g", sep, m->pvalue);
		sep = "; ";
	}
	if (isfinite(m->qvalue)) {
		putf(s, "%sq = %.2g", sep, m->qvalue);
		sep = "; ";
	}
	if (m->window >= 0) {
		putf(s, "%s%ld baseline run%s", sep, m->window, m->window == 1 ? "" : "s");
		sep = "; ";
	}
	if (isfinite(m->threshold)) {
		putf(s, "%sthreshold %.0f%%", sep, m->threshold * 100);
		sep = "; ";
	}
	if (m->bimodal) {
		putf(s, "%sbimodal", sep);
		sep = "; ";
	}
	if (m->note) {
		putf(s, "%s%s", sep, m->note);
		sep = "; ";
	}
	if (levels && levels_text(lv, sizeof(lv), m))
		putf(s, "%s%s", sep, lv);
}

/* Evidence escaped by `escape` into `s`, through a scratch buffer. */
static void put_evidence(struct sink *s, const struct aw_ci_metric *m, bool levels,
                         void (*escape)(struct sink *, const char *))
{
	struct aw_buf tmp;
	struct sink t = {&tmp, 0};

	aw_buf_init(&tmp, LIMIT_SCRATCH);
	evidence(&t, m, levels);
	if (t.rc && !s->rc)
		s->rc = t.rc;
	escape(s, tmp.data ? tmp.data : "");
	aw_buf_release(&tmp);
}

static void put_md_plain(struct sink *s, const char *str)
{
	put_md(s, str);
}

static void put_xml_plain(struct sink *s, const char *str)
{
	put_xml(s, str);
}

static void put_gh_data(struct sink *s, const char *str)
{
	put_gh(s, str, false);
}

/* Console text: controls (a terminal's escape sequences) become '?'. */
static void put_text_plain(struct sink *s, const char *str)
{
	for (const char *p = str ? str : ""; *p && !s->rc; p++)
		s->rc = aw_buf_append(s->b, (unsigned char)*p < 0x20 || *p == 0x7f ? "?" : p, 1);
}

/* ---- walking the report ---- */

static const char *short_commit(char *buf, size_t size, const char *commit)
{
	snprintf(buf, size, "%.*s", SHORT_COMMIT, commit ? commit : "?");
	return buf;
}

/* What a cell is in the summaries: a regression (fails the gate), an inconclusive cell (one of
 * gate level fail the gate cannot vouch for: its change reaches its threshold, its
 * re-measurements left the evidence split; exit 4), a suspect (a fail-level cell regressed in
 * too few head runs: unconfirmed), a warning (a regressed or suspect cell of gate level warn:
 * listed, never fails), or none of them (an off cell is shown with the others; so is a noisy
 * one, its change under its threshold: the cell's own noise, not the commit). */
enum listing {
	L_NONE,
	L_REGRESSION,
	L_WARNING,
	L_SUSPECT,
	L_INCONCLUSIVE,
};

static enum listing listing_of(const struct aw_ci_cell *c)
{
	if (c->gate == AW_GATE_OFF)
		return L_NONE;
	if (c->verdict == AW_VERDICT_REGRESSED)
		return c->gate == AW_GATE_FAIL ? L_REGRESSION : L_WARNING;
	if (c->verdict == AW_VERDICT_SUSPECT)
		return c->gate == AW_GATE_FAIL ? L_SUSPECT : L_WARNING;
	if (c->gate == AW_GATE_FAIL && c->verdict == AW_VERDICT_INCONCLUSIVE)
		return L_INCONCLUSIVE;
	return L_NONE;
}

/* Whether a metric's own verdict is the one its cell is listed for (`want`). */
static bool metric_listed(const struct aw_ci_metric *m, enum listing want)
{
	if (!m->present)
		return false;
	if (want == L_INCONCLUSIVE)
		return m->verdict == AW_VERDICT_INCONCLUSIVE;
	return m->verdict == AW_VERDICT_REGRESSED || m->verdict == AW_VERDICT_SUSPECT;
}

/* Listed metrics of one kind across the report (a cell without metric objects counts once). */
static size_t count_listed(const struct aw_ci_report *r, enum listing want)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n_hosts; i++) {
		const struct aw_ci_host *h = &r->hosts[i];

		for (size_t j = 0; j < h->n_cells; j++) {
			const struct aw_ci_cell *c = &h->cells[j];
			size_t k = metric_listed(&c->p50, want) + metric_listed(&c->p99, want);

			if (listing_of(c) == want)
				n += k ? k : 1;
		}
	}
	return n;
}

/* Regressed metrics (of gate level fail) across the report, and the hosts that failed. */
static void tally(const struct aw_ci_report *r, size_t *metrics, size_t *failed_hosts,
                  size_t *incomplete_hosts)
{
	*metrics = *failed_hosts = *incomplete_hosts = 0;
	for (size_t i = 0; i < r->n_hosts; i++) {
		const struct aw_ci_host *h = &r->hosts[i];
		bool failed = h->status == AW_VERDICT_FAIL;

		for (size_t j = 0; j < h->n_cells; j++) {
			const struct aw_ci_cell *c = &h->cells[j];

			if (listing_of(c) != L_REGRESSION)
				continue;
			if (c->p50.present && c->p50.verdict == AW_VERDICT_REGRESSED)
				(*metrics)++;
			if (c->p99.present && c->p99.verdict == AW_VERDICT_REGRESSED)
				(*metrics)++;
			failed = true;
			if (!c->p50.present && !c->p99.present)
				(*metrics)++;
		}
		if (failed)
			(*failed_hosts)++;
		else if (h->status == AW_VERDICT_INCOMPLETE)
			(*incomplete_hosts)++;
	}
}

/* Whether the report holds an unconfirmed host or a suspect cell of level fail. */
static bool unconfirmed(const struct aw_ci_report *r)
{
	if (r->status == AW_VERDICT_UNCONFIRMED)
		return true;
	for (size_t i = 0; i < r->n_hosts; i++)
		if (r->hosts[i].status == AW_VERDICT_UNCONFIRMED)
			return true;
	return count_listed(r, L_SUSPECT) > 0;
}

/* The status the report's exit code stands for: pass, fail, inconclusive, incomplete or
 * unconfirmed (a pass, or with --strict a failure, that still has suspects to confirm). */
static enum aw_verdict overall(const struct aw_ci_report *r)
{
	switch (aw_ci_exit_for(r)) {
	case AW_CI_EXIT_INCONCLUSIVE:
		return AW_VERDICT_INCONCLUSIVE;
	case AW_CI_EXIT_PASS:
		return unconfirmed(r) ? AW_VERDICT_UNCONFIRMED : AW_VERDICT_PASS;
	case AW_CI_EXIT_REGRESSION:
		return count_listed(r, L_REGRESSION) || !unconfirmed(r) ||
		               r->status == AW_VERDICT_FAIL
		           ? AW_VERDICT_FAIL
		           : AW_VERDICT_UNCONFIRMED;
	default:
		return AW_VERDICT_INCOMPLETE;
	}
}

/* Calls fn for every regressed metric (a cell regressed as a whole without metric objects
 * counts once, as p50 with NULL metric). */
typedef void (*regression_fn)(struct sink *s, const struct aw_ci_report *r,
                              const struct aw_ci_host *h, const struct aw_ci_cell *c,
                              const char *metric, const struct aw_ci_metric *m, void *cls);

/* The same for every listed metric of one kind (regressions, inconclusive, suspects,
 * warnings). */
static size_t each_listed(struct sink *s, const struct aw_ci_report *r, enum listing want,
                          size_t max, regression_fn fn, void *cls)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n_hosts; i++) {
		const struct aw_ci_host *h = &r->hosts[i];

		for (size_t j = 0; j < h->n_cells; j++) {
			const struct aw_ci_cell *c = &h->cells[j];
			bool any = false;

			if (listing_of(c) != want)
				continue;
			if (metric_listed(&c->p50, want)) {
				if (n++ < max)
					fn(s, r, h, c, "p50", &c->p50, cls);
				any = true;
			}
			if (metric_listed(&c->p99, want)) {
				if (n++ < max)
					fn(s, r, h, c, "p99", &c->p99, cls);
				any = true;
			}
			if (!any && !c->p50.present && !c->p99.present) {
				if (n++ < max)
					fn(s, r, h, c, "p50", NULL, cls);
			}
		}
	}
	return n;
}

static size_t each_regression(struct sink *s, const struct aw_ci_report *r, size_t max,
                              regression_fn fn, void *cls)
{
	return each_listed(s, r, L_REGRESSION, max, fn, cls);
}

/* The host's chart to link for a regression: "compare" when given, else its first. */
static const char *host_chart(const struct aw_ci_host *h)
{
	for (size_t i = 0; i < h->n_charts; i++)
		if (!strcmp(h->charts[i].name, "compare"))
			return h->charts[i].href;
	return h->n_charts ? h->charts[0].href : NULL;
}

/* Appends the absolute URL of href through `escape` (nothing for an unusable href); returns
 * whether it did. */
static bool put_href(struct sink *s, const char *base_url, const char *href,
                     void (*escape)(struct sink *, const char *))
{
	struct aw_buf tmp;
	int rc;

	if (s->rc || !href)
		return false;
	aw_buf_init(&tmp, LIMIT_SCRATCH);
	rc = aw_ci_link_url(&tmp, base_url, href);
	if (!rc)
		escape(s, tmp.data);
	else if (rc != -EINVAL)
		s->rc = rc;
	aw_buf_release(&tmp);
	return !rc;
}

/* "[text](url)"; nothing for an unusable href. Returns whether it wrote the link. */
static bool put_md_link(struct sink *s, const char *text, const char *base_url, const char *href)
{
	struct aw_buf tmp;
	int rc;

	aw_buf_init(&tmp, LIMIT_SCRATCH);
	rc = href ? aw_ci_link_url(&tmp, base_url, href) : -EINVAL;
	if (!rc) {
		put(s, "[");
		put_md(s, text);
		put(s, "](");
		put(s, tmp.data);
		put(s, ")");
	} else if (rc != -EINVAL && !s->rc) {
		s->rc = rc;
	}
	aw_buf_release(&tmp);
	return !rc;
}

/* Links separated by " · " (unusable ones left out). */
static void put_md_links(struct sink *s, const char *first, const struct aw_ci_link *links,
                         size_t n, const char *base_url)
{
	bool any = false;

	for (size_t k = 0; k < n; k++) {
		struct aw_buf probe;
		bool usable;

		aw_buf_init(&probe, LIMIT_SCRATCH);
		usable = !aw_ci_link_url(&probe, base_url, links[k].href);
		aw_buf_release(&probe);
		if (!usable)
			continue;
		put(s, any ? " · " : first);
		put_md_link(s, links[k].name, base_url, links[k].href);
		any = true;
	}
}

/* "reference mulchain-v1 x1.118" of a disturbed head run ("reference unknown" without one). */
static void put_disturbance(struct sink *s, const struct aw_ci_host *h)
{
	if (h->disturbed_kernel && isfinite(h->disturbed_ratio))
		putf(s, "reference %s x%.3f", h->disturbed_kernel, h->disturbed_ratio);
	else
		put(s, "reference unknown");
}

/* ---- console ---- */

static void text_regression(struct sink *s, const struct aw_ci_report *r,
                            const struct aw_ci_host *h, const struct aw_ci_cell *c,
                            const char *metric, const struct aw_ci_metric *m, void *cls)
{
	char a[32], b[32], d[64], lv[512];

	(void)r;
	put(s, cls ? (const char *)cls : "  regressed  ");
	put_text_plain(s, h->name);
	put(s, "  ");
	put_text_plain(s, c->key);
	putf(s, " [%s]", metric);
	if (m) {
		putf(s, "  %s -> %s  %s  (", fmt_ns(a, sizeof(a), m->baseline),
		     fmt_ns(b, sizeof(b), m->head), fmt_change(d, sizeof(d), m));
		put_evidence(s, m, false, put_text_plain);
		put(s, ")");
	}
	put(s, "\n");
	if (levels_text(lv, sizeof(lv), m)) {
		put(s, "             ");
		put_text_plain(s, lv);
		put(s, "\n");
	}
}

static char suspect_label[] = "  suspect    ", warning_label[] = "  warning    ",
            inconclusive_label[] = "  inconclusive ";

int aw_ci_format_text(const struct aw_ci_report *r, const char *base_url, struct aw_buf *out)
{
	struct sink s = {out, 0};
	size_t metrics, failed, incomplete, n;
	char sc[SHORT_COMMIT + 1];

	tally(r, &metrics, &failed, &incomplete);
	putf(&s, "atomwatch %s: %s: commit ", r->compare ? "compare" : "gate",
	     aw_verdict_name(overall(r)));
	put_text_plain(&s, short_commit(sc, sizeof(sc), r->commit));
	if (r->project) {
		put(&s, " of ");
		put_text_plain(&s, r->project);
	}
	put(&s, " against ");
	put_text_plain(&s, r->baseline);
	if (metrics)
		putf(&s, ": %zu regressed metric%s on %zu of %zu host%s", metrics,
		     metrics == 1 ? "" : "s", failed, r->n_hosts, r->n_hosts == 1 ? "" : "s");
	else
		putf(&s, ": no regression on %zu host%s", r->n_hosts, r->n_hosts == 1 ? "" : "s");
	n = count_listed(r, L_INCONCLUSIVE);
	if (n)
		putf(&s, ", %zu inconclusive metric%s", n, n == 1 ? "" : "s");
	if (incomplete)
		putf(&s, ", %zu without a run", incomplete);
	put(&s, "\n");
	n = each_regression(&s, r, TEXT_MAX_ROWS, text_regression, NULL);
	if (n > TEXT_MAX_ROWS)
		putf(&s, "  ... and %zu more\n", n - TEXT_MAX_ROWS);
	n = each_listed(&s, r, L_INCONCLUSIVE, TEXT_MAX_ROWS, text_regression, inconclusive_label);
	if (n > TEXT_MAX_ROWS)
		putf(&s, "  ... and %zu more inconclusive\n", n - TEXT_MAX_ROWS);
	if (n)
		putf(&s,
		     "  (%zu inconclusive metric%s: the change reaches the threshold, the "
		     "re-measurements left the evidence split; the gate neither passes nor fails "
		     "%s: an interleaved A/B run, atomwatch-ci trigger --ab, decides)\n",
		     n, n == 1 ? "" : "s", n == 1 ? "it" : "them");
	n = each_listed(&s, r, L_SUSPECT, TEXT_MAX_ROWS, text_regression, suspect_label);
	if (n > TEXT_MAX_ROWS)
		putf(&s, "  ... and %zu more suspects\n", n - TEXT_MAX_ROWS);
	if (n)
		putf(
		    &s,
		    "  (%zu suspect metric%s: too few head runs to decide, a move not yet shown by "
		    "enough of them or runs that could not be judged; measure again, e.g. "
		    "atomwatch-agent run --confirm 3)\n",
		    n, n == 1 ? "" : "s");
	n = each_listed(&s, r, L_WARNING, TEXT_MAX_ROWS, text_regression, warning_label);
	if (n > TEXT_MAX_ROWS)
		putf(&s, "  ... and %zu more warnings\n", n - TEXT_MAX_ROWS);
	for (size_t i = 0; i < r->n_hosts; i++) {
		const struct aw_ci_host *h = &r->hosts[i];

		if (!h->disturbed_run)
			continue;
		put(&s, "  disturbed  ");
		put_text_plain(&s, h->name);
		put(&s, ": head run ");
		put_text_plain(&s, h->disturbed_run);
		put(&s, " (");
		put_disturbance(&s, h);
		put(&s,
		    ", beyond what its history shows); changes it explains are not regressions\n");
	}
	for (size_t i = 0; i < r->n_hosts; i++) {
		const struct aw_ci_host *h = &r->hosts[i];

		if (h->status != AW_VERDICT_INCOMPLETE)
			continue;
		put(&s, "  incomplete ");
		put_text_plain(&s, h->name);
		put(&s, ": ");
		put_text_plain(&s, h->reason ? h->reason : "no run of the commit");
		put(&s, "\n");
	}
	if (r->report) {
		put(&s, "report: ");
		if (put_href(&s, base_url, r->report, put_text_plain))
			put(&s, "\n");
		else
			put(&s, "(none)\n");
	}
	return s.rc;
}

/* ---- Markdown ---- */

static void md_regression(struct sink *s, const struct aw_ci_report *r, const struct aw_ci_host *h,
                          const struct aw_ci_cell *c, const char *metric,
                          const struct aw_ci_metric *m, void *cls)
{
	const char *base_url = cls;
	char a[32], b[32], d[64];

	put(s, "| ");
	put_md(s, h->name);
	put(s, " | ");
	put_md(s, c->key);
	putf(s, " | %s | ", metric);
	if (m) {
		put(s, fmt_ns(a, sizeof(a), m->baseline));
		put(s, " | ");
		put(s, fmt_ns(b, sizeof(b), m->head));
		putf(s, " | **%s** | ", fmt_change_gt(d, sizeof(d), m));
		put_evidence(s, m, true, put_md_plain);
	} else {
		put(s, "n/a | n/a | n/a | ");
	}
	put(s, " | ");
	if (put_md_link(s, "chart", base_url, host_chart(h)) && r->report)
		put(s, " · ");
	put_md_link(s, "report", base_url, r->report);
	put(s, " |\n");
}

/* "[+1.0%, +15.0%]" of a metric's change (in ns for a change told in ns); "" when unknown. */
static const char *fmt_bounds(char *buf, size_t size, const struct aw_ci_metric *m)
{
	char a[32], b[32];

	buf[0] = '\0';
	if (!isfinite(m->change_lo) || !isfinite(m->change_hi))
		return buf;
	if (aw_change_in_ns(m->baseline, m->absolute)) {
		double scale = change_scale(m);

		if (isfinite(scale) && scale > 0)
			snprintf(buf, size, "[%+.3g ns, %+.3g ns]", m->change_lo * scale,
			         m->change_hi * scale);
	} else {
		snprintf(buf, size, "[%s, %s]", fmt_pct(a, sizeof(a), m->change_lo),
		         fmt_pct(b, sizeof(b), m->change_hi));
	}
	return buf;
}

/* The head runs behind a metric (the cell's when the metric does not say), or -1. */
static long head_runs_of(const struct aw_ci_cell *c, const struct aw_ci_metric *m)
{
	if (m && m->doc && m->doc->head_n)
		return (long)m->doc->head_n;
	if (c->doc && c->doc->n_head)
		return (long)c->doc->n_head;
	return -1;
}

/* A row of "### Inconclusive": the change and its bounds, the threshold, the head runs (and the
 * re-measurements the collector allows), the note and the levels. */
static void md_inconclusive(struct sink *s, const struct aw_ci_report *r,
                            const struct aw_ci_host *h, const struct aw_ci_cell *c,
                            const char *metric, const struct aw_ci_metric *m, void *cls)
{
	const char *base_url = cls;
	char d[64], bounds[80], lv[512];
	long runs = head_runs_of(c, m);

	put(s, "| ");
	put_md(s, h->name);
	put(s, " | ");
	put_md(s, c->key);
	putf(s, " | %s | ", metric);
	put_md(s, m ? aw_verdict_name(m->verdict) : c->verdict_name);
	if (m) {
		putf(s, " | **%s** %s | ", fmt_change_gt(d, sizeof(d), m),
		     fmt_bounds(bounds, sizeof(bounds), m));
		if (isfinite(m->threshold))
			putf(s, "%.3g%%", 100 * m->threshold);
		else
			put(s, "n/a");
	} else {
		put(s, " | n/a | n/a");
	}
	if (runs >= 0)
		putf(s, " | %ld", runs);
	else
		put(s, " | n/a");
	if (h->doc.confirm_budget)
		putf(s, " (budget: %u re-measurement%s)", h->doc.confirm_budget,
		     h->doc.confirm_budget == 1 ? "" : "s");
	put(s, " | ");
	if (m && m->note)
		put_md(s, m->note);
	if (levels_text(lv, sizeof(lv), m)) {
		if (m->note)
			put(s, "<br>");
		put_md(s, lv);
	}
	put(s, " | ");
	if (put_md_link(s, "chart", base_url, host_chart(h)) && r->report)
		put(s, " · ");
	put_md_link(s, "report", base_url, r->report);
	put(s, " |\n");
}

/* A table of the listed metrics of one kind under `heading`; nothing when there are none. */
static void md_listed(struct sink *s, const struct aw_ci_report *r, enum listing want,
                      const char *base_url, const char *heading)
{
	size_t n;

	if (!count_listed(r, want))
		return;
	put(s, heading);
	put(s, "| host | cell | metric | baseline | head | change | evidence | charts |\n");
	put(s, "|---|---|---|---:|---:|---:|---|---|\n");
	n = each_listed(s, r, want, MD_MAX_ROWS, md_regression, (void *)base_url);
	if (n > MD_MAX_ROWS)
		putf(s, "\n... and %zu more (see the full report).\n", n - MD_MAX_ROWS);
	put(s, "\n");
}

/* The metric that gave a cell its verdict: p50 unless only p99 carries it. */
static const struct aw_ci_metric *verdict_metric(const struct aw_ci_cell *c)
{
	if (c->p99.present && c->p99.verdict == c->verdict &&
	    !(c->p50.present && c->p50.verdict == c->verdict))
		return &c->p99;
	return &c->p50;
}

static void md_count(struct sink *s, long n)
{
	if (n < 0)
		put(s, " | -");
	else
		putf(s, " | %ld", n);
}

int aw_ci_format_markdown(const struct aw_ci_report *r, const char *base_url, struct aw_buf *out)
{
	struct sink s = {out, 0};
	size_t metrics, failed, incomplete, n, others = 0;
	char sc[SHORT_COMMIT + 1];
	enum aw_verdict status = overall(r);

	tally(r, &metrics, &failed, &incomplete);
	putf(&s, "## atomwatch %s: %s\n\n", r->compare ? "compare" : "gate",
	     status == AW_VERDICT_PASS           ? "pass"
	     : status == AW_VERDICT_FAIL         ? "FAIL"
	     : status == AW_VERDICT_UNCONFIRMED  ? "unconfirmed"
	     : status == AW_VERDICT_INCONCLUSIVE ? "INCONCLUSIVE"
	                                         : "INCOMPLETE");
	put(&s, "Commit ");
	put_md(&s, short_commit(sc, sizeof(sc), r->commit));

	if (r->project) {
		put(&s, " of **");
		put_md(&s, r->project);
		put(&s, "**");
	}
	put(&s, " against ");
	put_md(&s, r->baseline);
	if (metrics)
		putf(&s, ": **%zu regressed metric%s** on %zu of %zu host%s", metrics,
		     metrics == 1 ? "" : "s", failed, r->n_hosts, r->n_hosts == 1 ? "" : "s");
	else
		putf(&s, ": no regression on %zu host%s", r->n_hosts, r->n_hosts == 1 ? "" : "s");
	n = count_listed(r, L_INCONCLUSIVE);
	if (n)
		putf(&s, ", **%zu inconclusive metric%s**", n, n == 1 ? "" : "s");
	if (incomplete)
		putf(&s, ", **%zu host%s without a run**", incomplete, incomplete == 1 ? "" : "s");
	put(&s, ".");
	if (r->report) {
		put(&s, " ");
		put_md_link(&s, "Full report", base_url, r->report);
	}
	put(&s, "\n\n");

	if (metrics) {
		put(&s, "### Regressions\n\n");
		put(&s,
		    "| host | cell | metric | baseline | head | change | evidence | charts |\n");
		put(&s, "|---|---|---|---:|---:|---:|---|---|\n");
		n = each_regression(&s, r, MD_MAX_ROWS, md_regression, (void *)base_url);
		if (n > MD_MAX_ROWS)
			putf(&s, "\n... and %zu more regressed metrics (see the full report).\n",
			     n - MD_MAX_ROWS);
		put(&s, "\n");
	}
	if (count_listed(r, L_INCONCLUSIVE)) {
		put(&s,
		    "### Inconclusive\n\nThe gate can neither pass nor fail these cells of gate "
		    "level fail (exit status 4): their change reaches their threshold, and the "
		    "re-measurements left their evidence split. An interleaved A/B run "
		    "(`atomwatch-ci trigger --ab`) decides.\n\n");
		put(&s,
		    "| host | cell | metric | verdict | change [95% bounds] | threshold | head runs "
		    "| note | charts |\n");
		put(&s, "|---|---|---|---|---:|---:|---:|---|---|\n");
		n = each_listed(&s, r, L_INCONCLUSIVE, MD_MAX_ROWS, md_inconclusive,
		                (void *)base_url);
		if (n > MD_MAX_ROWS)
			putf(&s, "\n... and %zu more inconclusive metrics (see the full report).\n",
			     n - MD_MAX_ROWS);
		put(&s, "\n");
	}
	md_listed(
	    &s, r, L_SUSPECT, base_url,
	    "### Unconfirmed\n\nToo few head runs decide these cells: a move not yet shown by "
	    "enough of them, or runs that could not be judged; re-measuring them "
	    "(`atomwatch-agent run --confirm 3`) decides.\n\n");
	md_listed(&s, r, L_WARNING, base_url,
	          "### Warnings\n\nCells of gate level warn (contended and duty cells by "
	          "default): listed, never failing the gate.\n\n");

	put(&s, "### Hosts\n\n");
	put(&s, "| host | status | head runs | baseline runs | regressed | inconclusive | improved "
	        "| noisy | new | missing | unchanged | charts |\n");
	put(&s, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
	for (size_t i = 0; i < r->n_hosts; i++) {
		const struct aw_ci_host *h = &r->hosts[i];
		static const enum aw_verdict order[] = {
		    AW_VERDICT_REGRESSED, AW_VERDICT_INCONCLUSIVE, AW_VERDICT_IMPROVED,
		    AW_VERDICT_NOISY,     AW_VERDICT_NEW,          AW_VERDICT_MISSING,
		    AW_VERDICT_UNCHANGED};

		put(&s, "| ");
		put_md(&s, h->name);
		putf(&s, " | %s", aw_verdict_name(h->status));
		if (h->reason) {
			put(&s, ": ");
			put_md(&s, h->reason);
		}
		putf(&s, " | %zu", h->n_head_runs);
		md_count(&s, h->baseline_runs);
		for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++)
			md_count(&s, h->counts[order[k]]);
		put(&s, " | ");
		put_md_links(&s, "", h->charts, h->n_charts, base_url);
		put(&s, " |\n");
		for (size_t j = 0; j < h->n_cells; j++)
			if (listing_of(&h->cells[j]) == L_NONE &&
			    h->cells[j].verdict != AW_VERDICT_UNCHANGED)
				others++;
	}
	put(&s, "\n");
	for (size_t i = 0; i < r->n_hosts; i++) {
		const struct aw_ci_host *h = &r->hosts[i];

		if (!h->disturbed_run)
			continue;
		put(&s, "**Disturbed run** on ");
		put_md(&s, h->name);
		put(&s, ": head run `");
		put_md(&s, h->disturbed_run);
		put(&s, "` (");
		put_disturbance(&s, h);
		put(&s, ") moved beyond what its history shows; a change it explains is not a "
		        "regression.\n\n");
	}

	if (others) {
		size_t rows = 0;

		put(&s, "<details><summary>Other cells that changed or could not be judged ");
		putf(&s, "(%zu)</summary>\n\n", others);
		put(&s, "| host | cell | verdict | metric | baseline | head | change | note |\n");
		put(&s, "|---|---|---|---|---:|---:|---:|---|\n");
		for (size_t i = 0; i < r->n_hosts && rows < MD_MAX_ROWS; i++) {
			const struct aw_ci_host *h = &r->hosts[i];

			for (size_t j = 0; j < h->n_cells && rows < MD_MAX_ROWS; j++) {
				const struct aw_ci_cell *c = &h->cells[j];
				const struct aw_ci_metric *m = verdict_metric(c);
				char a[32], b[32], d[64], lv[512];

				if (listing_of(c) != L_NONE || c->verdict == AW_VERDICT_UNCHANGED)
					continue;
				rows++;
				put(&s, "| ");
				put_md(&s, h->name);
				put(&s, " | ");
				put_md(&s, c->key);
				put(&s, " | ");
				put_md(&s, c->verdict_name);
				if (c->gate == AW_GATE_OFF)
					put(&s, " (gate: off)");
				putf(&s, " | %s | %s | %s | %s | ", m == &c->p99 ? "p99" : "p50",
				     fmt_ns(a, sizeof(a), m->baseline),
				     fmt_ns(b, sizeof(b), m->head), fmt_change_gt(d, sizeof(d), m));
				put_md(&s, m->note);
				if (levels_text(lv, sizeof(lv), m)) {
					if (m->note)
						put(&s, "<br>");
					put_md(&s, lv);
				}
				put(&s, " |\n");
			}
		}
		if (others > rows)
			putf(&s, "\n... and %zu more.\n", others - rows);
		put(&s, "\n</details>\n\n");
	}
	put_md_links(&s, "Charts: ", r->charts, r->n_charts, base_url);
	if (r->n_charts)
		put(&s, "\n");
	return s.rc;
}

/* ---- JUnit XML ---- */

/* Whether a testcase (metric `m`, NULL for a cell without metric objects) is an inconclusive
 * failure. */
static bool junit_inconclusive(const struct aw_ci_cell *c, const struct aw_ci_metric *m)
{
	return listing_of(c) == L_INCONCLUSIVE && (!m || metric_listed(m, L_INCONCLUSIVE));
}

/* The end of a JUnit <failure>: the host's chart and the report, then the testcase's close. */
static void junit_failure_end(struct sink *s, const char *base_url, const struct aw_ci_host *h,
                              const struct aw_ci_report *r)
{
	if (host_chart(h)) {
		put(s, "chart: ");
		if (put_href(s, base_url, host_chart(h), put_xml_plain))
			put(s, "\n");
	}
	if (r->report) {
		put(s, "report: ");
		put_href(s, base_url, r->report, put_xml_plain);
	}
	put(s, "</failure>\n    </testcase>\n");
}

static void junit_metric(struct sink *s, const struct aw_ci_report *r, const struct aw_ci_host *h,
                         const struct aw_ci_cell *c, const char *metric,
                         const struct aw_ci_metric *m, const char *base_url)
{
	enum aw_verdict v = m ? m->verdict : c->verdict;
	enum listing l = listing_of(c);
	bool inconclusive = junit_inconclusive(c, m);
	bool listed = !inconclusive && (v == AW_VERDICT_REGRESSED || v == AW_VERDICT_SUSPECT);
	char a[32], b[32], d[64], bounds[80], lv[512];

	put(s, "    <testcase classname=\"");
	put_xml(s, h->name);
	put(s, "\" name=\"");
	put_xml(s, c->key);
	putf(s, " [%s]\" time=\"0\">", metric);
	if (inconclusive) {
		long runs = head_runs_of(c, m);

		put(s, "\n      <failure type=\"inconclusive\" message=\"");
		put_xml(s, metric);
		put(s, " ");
		put_xml(s, m ? aw_verdict_name(v) : c->verdict_name);
		if (m)
			putf(s, ": %s -&gt; %s (%s)", fmt_ns(a, sizeof(a), m->baseline),
			     fmt_ns(b, sizeof(b), m->head), fmt_change_gt(d, sizeof(d), m));
		put(s, "\">");
		put_xml(s, h->name);
		put(s, ": ");
		put_xml(s, c->key);
		putf(s, " [%s] cannot be vouched for against ", metric);
		put_xml(s, r->baseline);
		put(s, ": its change reaches its threshold, the re-measurements left its evidence "
		       "split; the gate neither passes nor fails it (exit status 4)\n");
		if (m) {
			putf(s, "change: %s %s\n", fmt_change_gt(d, sizeof(d), m),
			     fmt_bounds(bounds, sizeof(bounds), m));
			if (isfinite(m->threshold))
				putf(s, "threshold: %.3g%%\n", 100 * m->threshold);
		}
		if (runs >= 0)
			putf(s, "head runs: %ld\n", runs);
		if (h->doc.confirm_budget)
			putf(s, "confirmation budget: %u re-measurement%s\n", h->doc.confirm_budget,
			     h->doc.confirm_budget == 1 ? "" : "s");
		if (m && m->note) {
			put(s, "note: ");
			put_xml(s, m->note);
			put(s, "\n");
		}
		if (levels_text(lv, sizeof(lv), m)) {
			put_xml(s, lv);
			put(s, "\n");
		}
		junit_failure_end(s, base_url, h, r);
	} else if (listed && l != L_REGRESSION) {
		/* a warning, a suspect or an off cell: a passing testcase that says why */
		put(s, "\n      <system-out>");
		put(s, l == L_WARNING           ? "warning (gate: warn, never fails): "
		       : c->gate == AW_GATE_OFF ? "not gated (gate: off): "
		       : v == AW_VERDICT_SUSPECT
		           ? "unconfirmed: too few head runs decide this cell, re-measure to "
		             "confirm: "
		           : "warning (never fails the gate): ");
		put_xml(s, aw_verdict_name(v));
		if (m) {
			putf(s, ": %s -&gt; %s (%s); ", fmt_ns(a, sizeof(a), m->baseline),
			     fmt_ns(b, sizeof(b), m->head), fmt_change_gt(d, sizeof(d), m));
			put_evidence(s, m, true, put_xml_plain);
		}
		put(s, "</system-out>\n    </testcase>\n");
	} else if (v == AW_VERDICT_REGRESSED) {
		put(s, "\n      <failure type=\"regression\" message=\"");
		put_xml(s, metric);
		if (m)
			putf(s, " regressed: %s -&gt; %s (%s)", fmt_ns(a, sizeof(a), m->baseline),
			     fmt_ns(b, sizeof(b), m->head), fmt_change_gt(d, sizeof(d), m));
		else
			put(s, " regressed");
		put(s, "\">");
		put_xml(s, h->name);
		put(s, ": ");
		put_xml(s, c->key);
		putf(s, " [%s] regressed against ", metric);
		put_xml(s, r->baseline);
		put(s, "\n");
		if (m) {
			putf(s, "baseline: %s\nhead: %s\nchange: %s\nevidence: ",
			     fmt_ns(a, sizeof(a), m->baseline), fmt_ns(b, sizeof(b), m->head),
			     fmt_change_gt(d, sizeof(d), m));
			put_evidence(s, m, true, put_xml_plain);
			put(s, "\n");
		}
		junit_failure_end(s, base_url, h, r);
	} else if (v == AW_VERDICT_NEW || v == AW_VERDICT_MISSING) {
		put(s, "\n      <skipped message=\"");
		put(s, v == AW_VERDICT_NEW ? "new: no baseline for this cell"
		                           : "missing: in the baseline but not in this run");
		if (m && m->note) {
			put(s, " (");
			put_xml(s, m->note);
			put(s, ")");
		}
		put(s, "\"/>\n    </testcase>\n");
	} else if (m && (v == AW_VERDICT_IMPROVED || v == AW_VERDICT_NOISY ||
	                 v == AW_VERDICT_INCONCLUSIVE || v == AW_VERDICT_UNKNOWN)) {
		put(s, "\n      <system-out>");
		put_xml(s, v == AW_VERDICT_UNKNOWN ? c->verdict_name : aw_verdict_name(v));
		putf(s, ": %s -&gt; %s (%s); ", fmt_ns(a, sizeof(a), m->baseline),
		     fmt_ns(b, sizeof(b), m->head), fmt_change_gt(d, sizeof(d), m));
		put_evidence(s, m, true, put_xml_plain);
		put(s, "</system-out>\n    </testcase>\n");
	} else {
		put(s, "</testcase>\n");
	}
}

/* Counts a host's testcases by outcome, as junit_host() writes them. */
static void junit_counts(const struct aw_ci_host *h, size_t *tests, size_t *failures,
                         size_t *errors, size_t *skipped)
{
	*tests = *failures = *errors = *skipped = 0;
	if (h->status == AW_VERDICT_INCOMPLETE && !h->n_cells) {
		*tests = *errors = 1;
		return;
	}
	for (size_t j = 0; j < h->n_cells; j++) {
		const struct aw_ci_cell *c = &h->cells[j];
		const struct aw_ci_metric *ms[2] = {&c->p50, &c->p99};
		bool any = false;

		for (int k = 0; k < 2; k++) {
			enum aw_verdict v = ms[k]->verdict;

			if (!ms[k]->present)
				continue;
			any = true;
			(*tests)++;
			*failures += (v == AW_VERDICT_REGRESSED && listing_of(c) == L_REGRESSION) ||
			             junit_inconclusive(c, ms[k]);
			*skipped += v == AW_VERDICT_NEW || v == AW_VERDICT_MISSING;
		}
		if (!any) {
			(*tests)++;
			*failures += listing_of(c) == L_REGRESSION || junit_inconclusive(c, NULL);
			*skipped +=
			    c->verdict == AW_VERDICT_NEW || c->verdict == AW_VERDICT_MISSING;
		}
	}
}

static void junit_host(struct sink *s, const struct aw_ci_report *r, const struct aw_ci_host *h,
                       const char *base_url)
{
	size_t tests, failures, errors, skipped;

	junit_counts(h, &tests, &failures, &errors, &skipped);
	put(s, "  <testsuite name=\"atomwatch: ");
	put_xml(s, h->name);
	putf(s, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\" time=\"0\">\n",
	     tests, failures, errors, skipped);
	put(s, "    <properties>\n      <property name=\"commit\" value=\"");
	put_xml(s, r->commit);
	put(s, "\"/>\n      <property name=\"baseline\" value=\"");
	put_xml(s, r->baseline);
	putf(s, "\"/>\n      <property name=\"status\" value=\"%s\"/>\n",
	     aw_verdict_name(h->status));
	if (r->report) {
		put(s, "      <property name=\"report\" value=\"");
		put_href(s, base_url, r->report, put_xml_plain);
		put(s, "\"/>\n");
	}
	put(s, "    </properties>\n");
	if (h->status == AW_VERDICT_INCOMPLETE && !h->n_cells) {
		put(s, "    <testcase classname=\"");
		put_xml(s, h->name);
		put(s, "\" name=\"run of ");
		put_xml(s, r->commit);
		put(s, "\" time=\"0\">\n      <error type=\"incomplete\" message=\"");
		put_xml(s, h->reason ? h->reason : "no run of the commit");
		put(s, "\"/>\n    </testcase>\n");
	}
	for (size_t j = 0; j < h->n_cells; j++) {
		const struct aw_ci_cell *c = &h->cells[j];

		if (c->p50.present)
			junit_metric(s, r, h, c, "p50", &c->p50, base_url);
		if (c->p99.present)
			junit_metric(s, r, h, c, "p99", &c->p99, base_url);
		if (!c->p50.present && !c->p99.present)
			junit_metric(s, r, h, c, "p50", NULL, base_url);
	}
	put(s, "  </testsuite>\n");
}

int aw_ci_format_junit(const struct aw_ci_report *r, const char *base_url, struct aw_buf *out)
{
	struct sink s = {out, 0};
	size_t tests = 0, failures = 0, errors = 0, skipped = 0;

	for (size_t i = 0; i < r->n_hosts; i++) {
		size_t t, f, e, k;

		junit_counts(&r->hosts[i], &t, &f, &e, &k);
		tests += t;
		failures += f;
		errors += e;
		skipped += k;
	}
	put(&s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	putf(&s,
	     "<testsuites name=\"atomwatch %s\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" "
	     "skipped=\"%zu\" time=\"0\">\n",
	     r->compare ? "compare" : "gate", tests, failures, errors, skipped);
	for (size_t i = 0; i < r->n_hosts; i++)
		junit_host(&s, r, &r->hosts[i], base_url);
	put(&s, "</testsuites>\n");
	return s.rc;
}

/* ---- GitHub annotations ---- */

struct gh_ctx {
	const char *base_url;
	const char *command; /* "::error title=" */
	const char *what;    /* "regressed"; NULL: the cell's own verdict word in the title */
};

static void gh_regression(struct sink *s, const struct aw_ci_report *r, const struct aw_ci_host *h,
                          const struct aw_ci_cell *c, const char *metric,
                          const struct aw_ci_metric *m, void *cls)
{
	const struct gh_ctx *g = cls;
	const char *base_url = g->base_url;
	char a[32], b[32], d[64];
	struct aw_buf tmp;
	struct sink t = {&tmp, 0};

	aw_buf_init(&tmp, LIMIT_SCRATCH);
	putf(&t, "atomwatch: %s %s [%s] %s", h->name, c->key, metric,
	     m ? fmt_change(d, sizeof(d), m)
	       : (g->what ? aw_verdict_name(AW_VERDICT_REGRESSED) : c->verdict_name));
	put(s, g->command);
	put_gh(s, tmp.data, true);
	put(s, "::");
	aw_buf_reset(&tmp);
	putf(&t, "%s: %s [%s] %s", h->name, c->key, metric,
	     g->what ? g->what
	             : "is inconclusive: its change reaches its threshold, the re-measurements "
	               "left its evidence split, so the gate cannot vouch for it");
	if (m) {
		putf(&t, " from %s to %s (%s; ", fmt_ns(a, sizeof(a), m->baseline),
		     fmt_ns(b, sizeof(b), m->head), fmt_change(d, sizeof(d), m));
		evidence(&t, m, true);
		put(&t, ")");
	}
	putf(&t, " against %s.", r->baseline);
	put_gh(s, tmp.data, false);
	if (host_chart(h) || r->report) {
		put(s, " ");
		put_href(s, base_url, host_chart(h) ? host_chart(h) : r->report, put_gh_data);
	}
	put(s, "\n");
	if (t.rc && !s->rc)
		s->rc = t.rc;
	aw_buf_release(&tmp);
}

int aw_ci_format_annotations(const struct aw_ci_report *r, const char *base_url, struct aw_buf *out)
{
	struct sink s = {out, 0};
	struct gh_ctx err = {base_url, "::error title=", "regressed"};
	struct gh_ctx inc = {base_url, "::error title=", NULL};
	struct gh_ctx sus = {base_url, "::warning title=", "is suspect (regressed, unconfirmed)"};
	struct gh_ctx warn = {base_url, "::warning title=", "regressed (gate level warn)"};

	each_regression(&s, r, MD_MAX_ROWS, gh_regression, &err);
	each_listed(&s, r, L_INCONCLUSIVE, MD_MAX_ROWS, gh_regression, &inc);
	each_listed(&s, r, L_SUSPECT, MD_MAX_ROWS, gh_regression, &sus);
	each_listed(&s, r, L_WARNING, MD_MAX_ROWS, gh_regression, &warn);
	for (size_t i = 0; i < r->n_hosts; i++) {
		const struct aw_ci_host *h = &r->hosts[i];

		if (h->status != AW_VERDICT_INCOMPLETE)
			continue;
		put(&s, "::error title=");
		put_gh(&s, "atomwatch: ", true);
		put_gh(&s, h->name, true);
		put_gh(&s, " did not report", true);
		put(&s, "::");
		put_gh(&s, h->name, false);
		put(&s, ": ");
		put_gh(&s, h->reason ? h->reason : "no run of the commit", false);
		put(&s, "\n");
	}
	return s.rc;
}
