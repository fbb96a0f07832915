/* The control cell of every run; see control.h. */
#include "control.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aw/util.h"

int aw_control_key(int cpu, char *out, size_t size)
{
	int n =
	    snprintf(out, size, "subject=%s op=%s cpu=%d", AW_CONTROL_SUBJECT, AW_CONTROL_OP, cpu);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int aw_control_measure(struct aw_runner *r, struct aw_result *res, char **err)
{
	struct aw_cell *c;
	char *why = NULL;
	int cpu = 0, n, rc;

	n = aw_runner_cpus(r, "first", &cpu, 1, &why);
	if (n < 1) {
		rc = aw_errorf(err, n < 0 ? n : -ENODEV, "the control: no CPU to measure on: %s",
		               why ? why : "none online");
		free(why);
		return rc;
	}
	c = aw_result_add_cell(res);
	if (!c || aw_set_str(&c->subject, AW_CONTROL_SUBJECT) || aw_set_str(&c->op, AW_CONTROL_OP))
		return aw_errorf(err, -ENOMEM, "out of memory");
	c->cpu = cpu;
	if (aw_cell_make_key(c))
		return aw_errorf(err, -ENOMEM, "out of memory");
	if (!aw_runner_selected(r, c->key)) {
		aw_cell_release(c);
		res->n_cells--;
		return 0;
	}
	rc = aw_runner_measure_call(r, aw_control_chain, NULL, NULL, c);
	if (rc)
		return aw_errorf(err, rc, "cannot measure the control: %s", strerror(-rc));
	return 0;
}
