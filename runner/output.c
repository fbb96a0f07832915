/* Human and spreadsheet forms of a result: a per-CPU table in the spirit of percpu_bench, and
 * CSV (RFC 4180). The JSON form is the result document itself (common/result.c). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aw/buf.h"
#include "aw/stats.h"
#include "internal.h"

/* The key without its "cpu=N" part: the table's row label under a per-CPU heading. */
static void row_label(const struct aw_cell *c, char *out, size_t len)
{
	const char *k = c->key, *cpu = strstr(k, "cpu=");
	size_t n = 0;

	if (!cpu) {
		snprintf(out, len, "%s", k);
		return;
	}
	n = (size_t)(cpu - k);
	if (n >= len)
		n = len - 1;
	memcpy(out, k, n);
	out[n] = '\0';
	cpu += strcspn(cpu, " ");
	cpu += strspn(cpu, " ");
	snprintf(out + n, len - n, "%s", cpu);
	n = strlen(out);
	while (n && out[n - 1] == ' ')
		out[--n] = '\0';
}

static int cmp_cpu(const void *a, const void *b)
{
	const struct aw_cell *x = *(const struct aw_cell *const *)a;
	const struct aw_cell *y = *(const struct aw_cell *const *)b;
	unsigned cx = (unsigned)x->cpu, cy = (unsigned)y->cpu; /* AW_NONE sorts last */

	if (cx != cy)
		return cx < cy ? -1 : 1;
	return x < y ? -1 : x > y; /* stable: keep the plan's order within a CPU */
}

static void num(struct aw_buf *b, double v, int *rc)
{
	if (!*rc)
		*rc = isnan(v) ? aw_buf_printf(b, " %9s", "-") : aw_buf_printf(b, " %9.3f", v);
}

/* One line per reference kernel: how fast the machine was beside the cells, and how much that
 * moved during the run. */
static int reference_lines(const struct aw_result *r, struct aw_buf *out)
{
	unsigned kernels = r->references | (r->reference_kernel ? 1u << AW_REF_MULCHAIN : 0);
	double *v = malloc((r->n_cells ? r->n_cells : 1) * sizeof(*v));
	const char *gap = "\n";
	int rc = 0;

	if (!v)
		return -ENOMEM;
	for (int k = 0; !rc && k < AW_REF_COUNT; k++) {
		size_t n = 0;

		if (!(kernels & (1u << k)))
			continue;
		for (size_t i = 0; i < r->n_cells; i++)
			if (isfinite(r->cells[i].ref_ns[k]))
				v[n++] = r->cells[i].ref_ns[k];
		if (!n)
			continue;
		aw_sort_doubles(v, n);
		rc = aw_buf_printf(out,
		                   "%sreference %s beside %zu cells: %.4f ns per step (median; min "
		                   "%.4f, max %.4f)\n",
		                   gap, aw_ref_name((enum aw_ref)k), n,
		                   aw_quantile_sorted(v, n, 0.5), v[0], v[n - 1]);
		gap = "";
	}
	free(v);
	return rc;
}

int aw_output_table(const struct aw_result *r, struct aw_buf *out)
{
	const struct aw_cell **order = NULL;
	const json_t *host = r->host, *changing = json_object_get(host, "changing");
	size_t width = 24;
	const char *timer = json_string_value(json_object_get(changing, "timer"));
	int rc = 0, cur_cpu = -2, below = 0;
	char label[256];

	order = malloc((r->n_cells ? r->n_cells : 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_cells; i++) {
		order[i] = &r->cells[i];
		row_label(order[i], label, sizeof(label));
		if (strlen(label) > width)
			width = strlen(label);
	}
	qsort(order, r->n_cells, sizeof(*order), cmp_cpu);
	rc =
	    aw_buf_printf(out,
	                  "atomwatch %s: matrix %s v%lld, profile %s (hash %.12s)\n"
	                  "host %s: %s, %s; timer %s at %.3f MHz\n"
	                  "net ns per op (per lock+unlock pair for readers), the empty loop's time "
	                  "subtracted\n",
	                  aw_runner_version(), r->matrix_name, (long long)r->matrix_version,
	                  r->matrix_profile ? r->matrix_profile : "-", r->matrix_hash,
	                  json_string_value(json_object_get(host, "name")),
	                  json_string_value(json_object_get(host, "cpu_model")),
	                  json_string_value(json_object_get(host, "arch")), timer ? timer : "?",
	                  json_number_value(json_object_get(changing, "timer_hz")) / 1e6);
	for (size_t i = 0; !rc && i < r->n_cells; i++) {
		const struct aw_cell *c = order[i];

		if (c->cpu != cur_cpu) {
			cur_cpu = c->cpu;
			if (cur_cpu == AW_NONE)
				rc = aw_buf_printf(out, "\n Not pinned:\n====================\n");
			else
				rc = aw_buf_printf(out,
				                   "\n CPU: %d - Latency Percentiles:\n"
				                   "====================\n",
				                   cur_cpu);
			if (!rc)
				rc = aw_buf_printf(out, "%-*s %9s %9s %9s %9s %9s  %-21s %9s\n",
				                   (int)width, "cell", "min", "p50", "p95", "p99",
				                   "max", "95% CI of p50", "base");
		}
		row_label(c, label, sizeof(label));
		if (!rc)
			rc = aw_buf_printf(out, "%-*s", (int)width, label);
		if (!rc && c->status != AW_CELL_OK) {
			rc = aw_buf_printf(out, " %s: %s\n", aw_cell_status_name(c->status),
			                   c->reason ? c->reason : "");
			continue;
		}
		num(out, c->min, &rc);
		if (!rc)
			rc =
			    aw_buf_printf(out, " %8.3f%c", c->p50, c->below_resolution ? '*' : ' ');
		num(out, c->p95, &rc);
		num(out, c->p99, &rc);
		num(out, c->max, &rc);
		if (!rc && !isnan(c->ci_lo))
			rc = aw_buf_printf(out, "  [%8.3f, %8.3f]  ", c->ci_lo, c->ci_hi);
		else if (!rc)
			rc = aw_buf_printf(out, "  %-21s", "-");
		num(out, c->baseline_ns, &rc);
		if (!rc)
			rc = aw_buf_puts(out, "\n");
		below |= c->below_resolution;
	}
	if (!rc && below)
		rc = aw_buf_puts(out, "\n* below resolution: cannot be told apart from the empty "
		                      "loop; reported as 0\n");
	if (!rc && (r->references || r->reference_kernel))
		rc = reference_lines(r, out);
	free(order);
	return rc;
}

static int csv_str(struct aw_buf *b, const char *s)
{
	int rc;

	if (!s)
		return aw_buf_puts(b, ",");
	if (!strpbrk(s, ",\"\n\r"))
		return aw_buf_printf(b, "%s,", s);
	rc = aw_buf_puts(b, "\"");
	for (; !rc && *s; s++)
		rc = *s == '"' ? aw_buf_puts(b, "\"\"") : aw_buf_append(b, s, 1);
	return rc ? rc : aw_buf_puts(b, "\",");
}

static int csv_num(struct aw_buf *b, double v)
{
	return isnan(v) ? aw_buf_puts(b, ",") : aw_buf_printf(b, "%.4f,", v);
}

static int csv_int(struct aw_buf *b, long long v)
{
	return v == AW_NONE ? aw_buf_puts(b, ",") : aw_buf_printf(b, "%lld,", v);
}

int aw_output_csv(const struct aw_result *r, struct aw_buf *out)
{
	int rc = aw_buf_puts(out, "key,op,reader,cpu,contender_cpu,c,d,status,n,batch,min,p50,p95,"
	                          "p99,max,mean,stddev,ci_lo,ci_hi,baseline_ns,below_resolution,"
	                          "reason\n");

	for (size_t i = 0; !rc && i < r->n_cells; i++) {
		const struct aw_cell *c = &r->cells[i];

		if ((rc = csv_str(out, c->key)) || (rc = csv_str(out, c->op)) ||
		    (rc = csv_str(out, c->reader)) || (rc = csv_int(out, c->cpu)) ||
		    (rc = csv_int(out, c->contender_cpu)) || (rc = csv_int(out, c->c)) ||
		    (rc = csv_int(out, c->d)) ||
		    (rc = csv_str(out, aw_cell_status_name(c->status))) ||
		    (rc = csv_int(out, (long long)c->n)) ||
		    (rc = csv_int(out, (long long)c->batch)) || (rc = csv_num(out, c->min)) ||
		    (rc = csv_num(out, c->p50)) || (rc = csv_num(out, c->p95)) ||
		    (rc = csv_num(out, c->p99)) || (rc = csv_num(out, c->max)) ||
		    (rc = csv_num(out, c->mean)) || (rc = csv_num(out, c->stddev)) ||
		    (rc = csv_num(out, c->ci_lo)) || (rc = csv_num(out, c->ci_hi)) ||
		    (rc = csv_num(out, c->baseline_ns)) ||
		    (rc = csv_str(out, c->below_resolution ? "true" : "false")) ||
		    (rc = csv_str(out, c->reason)))
			break;
		out->data[out->len - 1] = '\n'; /* the last field's comma ends the line */
	}
	return rc;
}
