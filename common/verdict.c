/* The verdict name tables (the history's and the A/B's); see verdict.h. */
#include "aw/verdict.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const names[AW_VERDICT_COUNT] = {
    [AW_VERDICT_UNKNOWN] = "unknown",
    [AW_VERDICT_PASS] = "pass",
    [AW_VERDICT_FAIL] = "fail",
    [AW_VERDICT_INCOMPLETE] = "incomplete",
    [AW_VERDICT_UNCHANGED] = "unchanged",
    [AW_VERDICT_REGRESSED] = "regressed",
    [AW_VERDICT_IMPROVED] = "improved",
    [AW_VERDICT_NOISY] = "noisy",
    [AW_VERDICT_NEW] = "new",
    [AW_VERDICT_MISSING] = "missing",
    [AW_VERDICT_SUSPECT] = "suspect",
    [AW_VERDICT_INCONCLUSIVE] = "inconclusive",
    [AW_VERDICT_UNCONFIRMED] = "unconfirmed",
    [AW_VERDICT_HOST_CHANGED] = "host changed",
};

static const char *const gate_names[AW_GATE_COUNT] = {
    [AW_GATE_FAIL] = "fail",
    [AW_GATE_WARN] = "warn",
    [AW_GATE_OFF] = "off",
};

static const char *const ab_names[AW_AB_VERDICT_COUNT] = {
    [AW_AB_VERDICT_UNKNOWN] = "unknown",           [AW_AB_VERDICT_UNCHANGED] = "unchanged",
    [AW_AB_VERDICT_REGRESSED] = "regressed",       [AW_AB_VERDICT_IMPROVED] = "improved",
    [AW_AB_VERDICT_INCONCLUSIVE] = "inconclusive", [AW_AB_VERDICT_NEW] = "new",
    [AW_AB_VERDICT_MISSING] = "missing",           [AW_AB_VERDICT_FAILED] = "failed",
};

const char *aw_verdict_name(enum aw_verdict v)
{
	return (unsigned)v < AW_VERDICT_COUNT ? names[v] : names[AW_VERDICT_UNKNOWN];
}

enum aw_verdict aw_verdict_parse(const char *name)
{
	for (unsigned v = 0; name && v < AW_VERDICT_COUNT; v++)
		if (!strcmp(name, names[v]))
			return (enum aw_verdict)v;
	return AW_VERDICT_UNKNOWN;
}

bool aw_verdict_is_cell(enum aw_verdict v)
{
	return (v >= AW_VERDICT_CELL_FIRST && v <= AW_VERDICT_CELL_LAST) ||
	       v == AW_VERDICT_HOST_CHANGED;
}

bool aw_verdict_is_status(enum aw_verdict v)
{
	return v == AW_VERDICT_PASS || v == AW_VERDICT_FAIL || v == AW_VERDICT_INCOMPLETE ||
	       v == AW_VERDICT_UNCONFIRMED || v == AW_VERDICT_INCONCLUSIVE;
}

const char *aw_gate_name(enum aw_gate g)
{
	return (unsigned)g < AW_GATE_COUNT ? gate_names[g] : gate_names[AW_GATE_FAIL];
}

int aw_gate_parse(const char *name, enum aw_gate *out)
{
	for (unsigned g = 0; name && g < AW_GATE_COUNT; g++) {
		if (!strcmp(name, gate_names[g])) {
			*out = (enum aw_gate)g;
			return 0;
		}
	}
	return -EINVAL;
}

/* ns with the precision a person reads: "0.037 ns", "4.60 ns", "23.7 ns", "150 ns". */
static void ns_text(char *buf, size_t size, const char *sign, double v)
{
	double a = fabs(v);

	snprintf(buf, size,
	         a < 0.1   ? "%s%.3f ns"
	         : a < 10  ? "%s%.2f ns"
	         : a < 100 ? "%s%.1f ns"
	                   : "%s%.0f ns",
	         sign, a);
}

bool aw_change_in_ns(double baseline, bool absolute)
{
	return absolute || (isfinite(baseline) && baseline < AW_RESOLUTION_NS);
}

const char *aw_change_text(char *buf, size_t size, double baseline, double head, double change,
                           bool absolute)
{
	char h[32];

	if (size)
		buf[0] = '\0';
	if (isfinite(baseline) && baseline < AW_RESOLUTION_NS) {
		if (!isfinite(head))
			return NULL;
		ns_text(h, sizeof(h), "", head);
		if (head < AW_RESOLUTION_NS)
			snprintf(buf, size, "below resolution");
		else
			snprintf(buf, size, "below resolution -> %s", h);
		return buf;
	}
	if (absolute) {
		if (!isfinite(baseline) || !isfinite(head))
			return NULL;
		ns_text(buf, size, head < baseline ? "-" : "+", head - baseline);
		return buf;
	}
	if (!isfinite(change) && isfinite(baseline) && isfinite(head) && baseline > 0)
		change = head / baseline - 1;
	if (!isfinite(change))
		return NULL;
	snprintf(buf, size, "%+.1f%%", change * 100);
	return buf;
}

const char *aw_ab_verdict_name(enum aw_ab_verdict v)
{
	return (unsigned)v < AW_AB_VERDICT_COUNT ? ab_names[v] : ab_names[AW_AB_VERDICT_UNKNOWN];
}

enum aw_ab_verdict aw_ab_verdict_parse(const char *name)
{
	for (unsigned v = 0; name && v < AW_AB_VERDICT_COUNT; v++)
		if (!strcmp(name, ab_names[v]))
			return (enum aw_ab_verdict)v;
	return AW_AB_VERDICT_UNKNOWN;
}

bool aw_ab_verdict_decides(enum aw_ab_verdict v)
{
	return v == AW_AB_VERDICT_UNCHANGED || v == AW_AB_VERDICT_REGRESSED ||
	       v == AW_AB_VERDICT_IMPROVED;
}
