/* Fixed-size CPU sets and Linux CPU-list syntax ("0-3,8"). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/util.h"
#include "internal.h"

void aw_cpuset_clear(struct aw_cpuset *s)
{
	memset(s, 0, sizeof(*s));
}

void aw_cpuset_set(struct aw_cpuset *s, int cpu)
{
	if (cpu >= 0 && cpu < AW_MAX_CPUS)
		s->bits[cpu / 64] |= UINT64_C(1) << (cpu % 64);
}

bool aw_cpuset_has(const struct aw_cpuset *s, int cpu)
{
	return cpu >= 0 && cpu < AW_MAX_CPUS && (s->bits[cpu / 64] >> (cpu % 64)) & 1;
}

int aw_cpuset_count(const struct aw_cpuset *s)
{
	int n = 0;

	for (size_t i = 0; i < sizeof(s->bits) / sizeof(s->bits[0]); i++)
		n += __builtin_popcountll(s->bits[i]);
	return n;
}

int aw_cpuset_next(const struct aw_cpuset *s, int after)
{
	for (int cpu = after + 1; cpu < AW_MAX_CPUS; cpu++) {
		uint64_t w = s->bits[cpu / 64] >> (cpu % 64);

		if (!w) {
			cpu |= 63; /* skip the rest of this word */
			continue;
		}
		return cpu + __builtin_ctzll(w);
	}
	return -1;
}

static int parse_cpu(const char **p, int *out)
{
	long v = 0;
	const char *s = *p;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	while (isdigit((unsigned char)*s)) {
		v = v * 10 + (*s++ - '0');
		if (v >= AW_MAX_CPUS)
			return -ERANGE;
	}
	*p = s;
	*out = (int)v;
	return 0;
}

int aw_cpulist_parse(const char *s, struct aw_cpuset *out, char **err)
{
	const char *p = s;
	int rc;

	aw_cpuset_clear(out);
	while (*p && !isspace((unsigned char)*p)) {
		int lo, hi;

		rc = parse_cpu(&p, &lo);
		if (rc)
			goto bad;
		hi = lo;
		if (*p == '-') {
			p++;
			rc = parse_cpu(&p, &hi);
			if (rc)
				goto bad;
			if (hi < lo) {
				rc = -EINVAL;
				goto bad;
			}
		}
		for (int c = lo; c <= hi; c++)
			aw_cpuset_set(out, c);
		if (*p == ',') {
			p++;
			if (!*p || isspace((unsigned char)*p)) {
				rc = -EINVAL;
				goto bad;
			}
		} else if (*p && !isspace((unsigned char)*p)) {
			rc = -EINVAL;
			goto bad;
		}
	}
	while (isspace((unsigned char)*p))
		p++;
	if (*p || p == s) {
		rc = -EINVAL;
		goto bad;
	}
	return 0;
bad:
	if (rc == -ERANGE)
		return aw_errorf(err, rc, "CPU number in '%s' is too large (limit %d)", s,
		                 AW_MAX_CPUS - 1);
	return aw_errorf(err, -EINVAL, "bad CPU list '%s' (expected e.g. 0,2-3)", s);
}

void aw_cpulist_format(const struct aw_cpuset *s, char *buf, size_t len)
{
	size_t n = 0;
	int cpu = aw_cpuset_next(s, -1);

	if (len)
		buf[0] = '\0';
	while (cpu >= 0 && n < len) {
		int end = cpu, m;

		while (aw_cpuset_has(s, end + 1))
			end++;
		if (end == cpu)
			m = snprintf(buf + n, len - n, "%s%d", n ? "," : "", cpu);
		else
			m = snprintf(buf + n, len - n, "%s%d-%d", n ? "," : "", cpu, end);
		if (m < 0)
			return;
		n += (size_t)m;
		cpu = aw_cpuset_next(s, end);
	}
}
