/* The decision of an interleaved A/B cell from its rounds, and the levels of a round; see
 * aw/ab.h. The agent runs it at each look to know when a cell is decided, the collector once on
 * the whole document: the two agree because they run the same code on the same rounds. */
#include "aw/ab.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/signrank.h"
#include "aw/stats.h"

static const char *const level_names[AW_AB_LEVEL_COUNT] = {
    [AW_AB_LEVEL_NONE] = NULL,
    [AW_AB_LEVEL_ALONE] = "alone",
    [AW_AB_LEVEL_SHARED] = "shared",
    [AW_AB_LEVEL_MIXED] = "mixed",
};

const char *aw_ab_level_name(enum aw_ab_level l)
{
	return (unsigned)l < AW_AB_LEVEL_COUNT ? level_names[l] : NULL;
}

enum aw_ab_level aw_ab_level_parse(const char *name)
{
	if (name && !strcmp(name, level_names[AW_AB_LEVEL_ALONE]))
		return AW_AB_LEVEL_ALONE;
	if (name && !strcmp(name, level_names[AW_AB_LEVEL_SHARED]))
		return AW_AB_LEVEL_SHARED;
	return AW_AB_LEVEL_NONE;
}

enum aw_ab_level aw_ab_classify(double ref_before, double ref_after, double floor, double ratio)
{
	double limit = floor * ratio;

	if (!(ref_before > 0) || !(ref_after > 0) || !(limit > 0))
		return AW_AB_LEVEL_MIXED;
	if (ref_before <= limit && ref_after <= limit)
		return AW_AB_LEVEL_ALONE;
	if (ref_before > limit && ref_after > limit)
		return AW_AB_LEVEL_SHARED;
	return AW_AB_LEVEL_MIXED;
}

unsigned aw_ab_looks(unsigned max_rounds, unsigned *at, unsigned cap)
{
	unsigned n = 0, k = 12;

	/* 12, 16, 24, 32, 48, ...: by turns 4/3 and 3/2, so twice per doubling */
	while (k < max_rounds) {
		if (at && n < cap)
			at[n] = k;
		n++;
		k = n % 2 ? k / 3 * 4 : k / 2 * 3;
	}
	if (at && n < cap)
		at[n] = max_rounds;
	return n + 1;
}

static enum aw_ab_verdict rule_verdict(const struct aw_ab_estimate *e, double t)
{
	if (isnan(e->lo) || isnan(e->hi))
		return AW_AB_VERDICT_INCONCLUSIVE;
	if (e->lo > 0 && e->estimate > t)
		return AW_AB_VERDICT_REGRESSED;
	if (e->hi < 0 && e->estimate < -t)
		return AW_AB_VERDICT_IMPROVED;
	if (e->lo >= -t && e->hi <= t)
		return AW_AB_VERDICT_UNCHANGED;
	return AW_AB_VERDICT_INCONCLUSIVE;
}

static int estimate(const double *d, size_t n, double alpha, double t, struct aw_ab_estimate *e)
{
	struct aw_hl hl;

	if (aw_hodges_lehmann(d, n, alpha, &hl))
		return -ENOMEM;
	e->rounds = n;
	e->estimate = hl.estimate;
	e->lo = hl.lo;
	e->hi = hl.hi;
	e->p = hl.p;
	e->verdict = rule_verdict(e, t);
	return 0;
}

static double median(double *v, size_t n)
{
	aw_sort_doubles(v, n);
	return aw_quantile_sorted(v, n, 0.5);
}

/* The estimate a round's level gives (the cell's where its level has none). */
static double level_estimate(const struct aw_ab_decision *out, enum aw_ab_level level)
{
	double e = (unsigned)level < AW_AB_LEVEL_COUNT ? out->level[level].estimate : NAN;

	return isfinite(e) ? e : out->diff.estimate;
}

/* The layouts' centres, their spread and each one's verdict (at alpha, threshold t); each
 * layout's offset: its rounds' d less their level's estimate, so that a layout whose rounds
 * fell in one level more than another's differs by no level's effect. */
static int layouts(const struct aw_ab_round *rounds, size_t n, double alpha, double t,
                   struct aw_ab_decision *out)
{
	double *d = malloc((n ? n : 1) * sizeof(*d)), *a = malloc((n ? n : 1) * sizeof(*a)),
	       *b = malloc((n ? n : 1) * sizeof(*b));
	double lo = INFINITY, hi = -INFINITY;
	size_t with = 0;

	if (!d || !a || !b) {
		free(d);
		free(a);
		free(b);
		return -ENOMEM;
	}
	for (int l = 0; l < AW_AB_MAX_LOADS; l++) {
		struct aw_ab_layout *lay = &out->layout[l];
		size_t m = 0;

		for (size_t i = 0; i < n; i++)
			if (rounds[i].layout == l && rounds[i].level != AW_AB_LEVEL_MIXED) {
				d[m] = rounds[i].ab - rounds[i].aa;
				b[m] = rounds[i].ab;
				a[m++] = rounds[i].aa;
			}
		lay->rounds = m;
		lay->diff = lay->ab = lay->aa = lay->offset = NAN;
		lay->verdict = AW_AB_VERDICT_INCONCLUSIVE;
		lay->interval = false;
		if (!m)
			continue;
		{
			struct aw_ab_estimate e;

			if (estimate(d, m, alpha, t, &e)) {
				free(d);
				free(a);
				free(b);
				return -ENOMEM;
			}
			lay->verdict = e.verdict;
			lay->interval = !isnan(e.lo) && !isnan(e.hi);
		}
		lay->diff = median(d, m);
		for (size_t i = 0, k = 0; i < n; i++)
			if (rounds[i].layout == l && rounds[i].level != AW_AB_LEVEL_MIXED)
				d[k++] = rounds[i].ab - rounds[i].aa -
				         level_estimate(out, rounds[i].level);
		lay->offset = median(d, m);
		lay->ab = median(b, m);
		lay->aa = median(a, m);
		out->n_layouts = (size_t)l + 1;
		lo = fmin(lo, lay->diff);
		hi = fmax(hi, lay->diff);
		with++;
	}
	out->layout_spread = with >= 2 ? hi - lo : NAN;
	free(d);
	free(a);
	free(b);
	return 0;
}

static size_t with_rounds(const struct aw_ab_decision *out)
{
	size_t k = 0;

	for (size_t l = 0; l < out->n_layouts; l++)
		k += out->layout[l].rounds > 0;
	return k;
}

/* The loads' own spread and the half-width it gives every interval (aw_ab_decide()): the
 * spread of the layouts' offsets (each layout's median of head copy over base copy, the A/A
 * bias and the levels' effects removed), about their mean on L - 1 degrees of freedom. The two
 * copies of a layout are loaded at one moment and may share its fortune (the memory they got): only
 * their difference is a sample of what the layouts do to the comparison. */
static void loads(struct aw_ab_decision *out)
{
	double m = 0, ss = 0;
	size_t l_n = with_rounds(out);

	out->loads_sd = NAN;
	out->loads_hw = 0;
	if (l_n < 2)
		return;
	for (size_t l = 0; l < out->n_layouts; l++)
		if (out->layout[l].rounds)
			m += out->layout[l].offset;
	m /= (double)l_n;
	for (size_t l = 0; l < out->n_layouts; l++)
		if (out->layout[l].rounds)
			ss += (out->layout[l].offset - m) * (out->layout[l].offset - m);
	out->loads_sd = sqrt(ss / (double)(l_n - 1));
	out->loads_hw = aw_t_quantile(out->alpha_each / 2, (double)(l_n - 1)) * out->loads_sd /
	                sqrt((double)l_n);
}

/* Widens e's interval to at least its estimate +- hw and judges it again; whether the verdict
 * changed. */
static bool widen(struct aw_ab_estimate *e, double hw, double t)
{
	enum aw_ab_verdict was = e->verdict;

	if (!(hw > 0) || isnan(e->lo) || isnan(e->hi))
		return false;
	e->lo = fmin(e->lo, e->estimate - hw);
	e->hi = fmax(e->hi, e->estimate + hw);
	e->verdict = rule_verdict(e, t);
	return e->verdict != was;
}

/* "alone regressed (+7.10%), shared unchanged (+0.02%)": each level's verdict, for the reason. */
static void describe_levels(const struct aw_ab_decision *out, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int l = AW_AB_LEVEL_ALONE; l <= AW_AB_LEVEL_SHARED && used < size; l++) {
		const struct aw_ab_estimate *e = &out->level[l];
		int w;

		if (!e->rounds)
			w = snprintf(buf + used, size - used, "%sno %s rounds", used ? ", " : "",
			             aw_ab_level_name((enum aw_ab_level)l));
		else if (isnan(e->lo))
			w = snprintf(buf + used, size - used, "%s%s in %zu round%s, too few",
			             used ? ", " : "", aw_ab_level_name((enum aw_ab_level)l),
			             e->rounds, e->rounds == 1 ? "" : "s");
		else
			w = snprintf(buf + used, size - used, "%s%s %s (%+.2f%%)", used ? ", " : "",
			             aw_ab_level_name((enum aw_ab_level)l),
			             aw_ab_verdict_name(e->verdict), 100 * expm1(e->estimate));
		if (w < 0)
			break;
		used += (size_t)w;
	}
}

int aw_ab_decide(const struct aw_ab_round *rounds, size_t n, const struct aw_ab_rule *rule,
                 struct aw_ab_decision *out)
{
	double t = log1p(rule->threshold), *d, *ab, *aa;
	unsigned estimands = rule->levels ? 3 : 1, looks = rule->looks ? rule->looks : 1;
	size_t m = 0, regressed = 0, improved = 0, undecided = 0, with_interval = 0;
	bool by_loads = false;
	char levels[128];
	int rc = -ENOMEM;

	assert(rule->threshold >= 0 && rule->alpha > 0 && rule->alpha < 1);
	memset(out, 0, sizeof(*out));
	out->alpha_each = rule->alpha / ((double)looks * estimands);
	d = malloc((n ? n : 1) * sizeof(*d));
	ab = malloc((n ? n : 1) * sizeof(*ab));
	aa = malloc((n ? n : 1) * sizeof(*aa));
	if (!d || !ab || !aa)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (rounds[i].level == AW_AB_LEVEL_MIXED)
			continue;
		d[m] = rounds[i].ab - rounds[i].aa;
		ab[m] = rounds[i].ab;
		aa[m++] = rounds[i].aa;
	}
	if (estimate(d, m, out->alpha_each, t, &out->diff) ||
	    estimate(ab, m, out->alpha_each, t, &out->ab) ||
	    estimate(aa, m, out->alpha_each, t, &out->aa))
		goto out;
	for (int l = 0; l < AW_AB_LEVEL_COUNT; l++) {
		size_t k = 0;

		if (rule->levels && (l == AW_AB_LEVEL_ALONE || l == AW_AB_LEVEL_SHARED))
			for (size_t i = 0; i < n; i++)
				if (rounds[i].level == (enum aw_ab_level)l)
					d[k++] = rounds[i].ab - rounds[i].aa;
		if (estimate(d, k, out->alpha_each, t, &out->level[l]))
			goto out;
	}
	if (layouts(rounds, n, out->alpha_each, t, out))
		goto out;
	loads(out);
	by_loads = widen(&out->diff, out->loads_hw, t);
	for (int l = AW_AB_LEVEL_ALONE; l <= AW_AB_LEVEL_SHARED; l++)
		by_loads |= widen(&out->level[l], out->loads_hw, t);
	/* the cell: every estimand with an interval has its say */
	for (int e = -1; e < AW_AB_LEVEL_COUNT; e++) {
		const struct aw_ab_estimate *est = e < 0 ? &out->diff : &out->level[e];

		if (e >= 0 && (!rule->levels || !est->rounds))
			continue;
		if (isnan(est->lo))
			continue;
		with_interval++;
		regressed += est->verdict == AW_AB_VERDICT_REGRESSED;
		improved += est->verdict == AW_AB_VERDICT_IMPROVED;
		undecided += est->verdict == AW_AB_VERDICT_INCONCLUSIVE;
	}
	if (rule->levels)
		describe_levels(out, levels, sizeof(levels));
	if (!with_interval) {
		out->verdict = AW_AB_VERDICT_INCONCLUSIVE;
		snprintf(out->reason, sizeof(out->reason), "too few rounds for an interval (%zu)",
		         m);
	} else if (regressed && improved) {
		out->verdict = AW_AB_VERDICT_INCONCLUSIVE;
		snprintf(out->reason, sizeof(out->reason), "the levels disagree: %s", levels);
	} else {
		out->verdict = regressed   ? AW_AB_VERDICT_REGRESSED
		               : improved  ? AW_AB_VERDICT_IMPROVED
		               : undecided ? AW_AB_VERDICT_INCONCLUSIVE
		                           : AW_AB_VERDICT_UNCHANGED;
		if (by_loads && out->verdict == AW_AB_VERDICT_INCONCLUSIVE) {
			int w =
			    snprintf(out->reason, sizeof(out->reason),
			             "the loads differ on their own (sd %.2f%% over %zu layouts): "
			             "the change is known to +-%.2f%% only",
			             100 * expm1(out->loads_sd), with_rounds(out),
			             100 * expm1(out->loads_hw));

			if (rule->levels && w > 0 && (size_t)w < sizeof(out->reason))
				snprintf(out->reason + w, sizeof(out->reason) - (size_t)w, "; %s",
				         levels);
		} else if (rule->levels)
			snprintf(out->reason, sizeof(out->reason), "%s", levels);
		else if (out->verdict == AW_AB_VERDICT_INCONCLUSIVE)
			snprintf(out->reason, sizeof(out->reason),
			         "the interval reaches past the threshold without deciding");
	}
	rc = 0;
out:
	free(d);
	free(ab);
	free(aa);
	return rc;
}
