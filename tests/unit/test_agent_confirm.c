/* The adaptive confirmation's decisions without a collector: when the next re-measurement is
 * due (suspects, the most runs, the time budget, always one), and the suspects reply read into
 * its model (keys, anchors, status, budget; an older reply without anchors; broken replies). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent.h"

static void test_check(void **state)
{
	struct aw_confirm_opts o = {.max_runs = 3, .budget_s = 10};

	(void)state;
	assert_int_equal(aw_confirm_check(&o, 0, 0, 0), AW_CONFIRM_NO_SUSPECT);
	assert_int_equal(aw_confirm_check(&o, 2, 0, 0), AW_CONFIRM_GO_ON);
	/* the first re-measurement whatever the budget */
	assert_int_equal(aw_confirm_check(&o, 1, 0, 1e9), AW_CONFIRM_GO_ON);
	assert_int_equal(aw_confirm_check(&o, 1, 1, 9.99), AW_CONFIRM_GO_ON);
	assert_int_equal(aw_confirm_check(&o, 1, 1, 10), AW_CONFIRM_BUDGET);
	assert_int_equal(aw_confirm_check(&o, 1, 2, 0.5), AW_CONFIRM_GO_ON);
	assert_int_equal(aw_confirm_check(&o, 1, 3, 0.5), AW_CONFIRM_MAX_RUNS);
	/* no suspect left comes first, then the most runs, then the budget */
	assert_int_equal(aw_confirm_check(&o, 0, 3, 1e9), AW_CONFIRM_NO_SUSPECT);
	assert_int_equal(aw_confirm_check(&o, 1, 3, 1e9), AW_CONFIRM_MAX_RUNS);
	o.max_runs = 1;
	assert_int_equal(aw_confirm_check(&o, 4, 0, 0), AW_CONFIRM_GO_ON);
	assert_int_equal(aw_confirm_check(&o, 4, 1, 0), AW_CONFIRM_MAX_RUNS);
	assert_string_equal(aw_confirm_stop_name(AW_CONFIRM_NO_SUSPECT), "no suspect left");
	assert_string_equal(aw_confirm_stop_name(AW_CONFIRM_BUDGET), "time budget spent");
	assert_string_equal(aw_confirm_stop_name(AW_CONFIRM_DEFERRED),
	                    "upload deferred to the spool");
}

static const char *run_id = "11111111-1111-4111-8111-111111111111";

static void test_reply(void **state)
{
	struct aw_suspects s;
	char *err = NULL;
	json_t *doc;

	(void)state;
	doc = json_loads("{\"status\":\"unconfirmed\",\"confirm_budget\":10,\"suspects\":[\"a\","
	                 "\"b\",7],\"anchors\":[\"op=plain cpu=0\",\"op=plain cpu=1\"]}",
	                 0, NULL);
	assert_non_null(doc);
	assert_int_equal(aw_suspects_from_json(doc, run_id, &s, &err), 0);
	assert_int_equal(s.n_keys, 2);
	assert_string_equal(s.keys[0], "a");
	assert_string_equal(s.keys[1], "b");
	assert_null(s.keys[2]);
	assert_true(s.has_anchors);
	assert_int_equal(s.n_anchors, 2);
	assert_string_equal(s.anchors[1], "op=plain cpu=1");
	assert_null(s.anchors[2]);
	assert_string_equal(s.status, "unconfirmed");
	assert_int_equal(s.confirm_budget, 10);
	aw_suspects_release(&s);
	assert_null(s.keys);
	json_decref(doc);

	/* an older collector: no anchors, no budget */
	doc = json_loads("{\"status\":\"pass\",\"suspects\":[]}", 0, NULL);
	assert_int_equal(aw_suspects_from_json(doc, run_id, &s, &err), 0);
	assert_int_equal(s.n_keys, 0);
	assert_non_null(s.keys);
	assert_false(s.has_anchors);
	assert_int_equal(s.n_anchors, 0);
	assert_int_equal(s.confirm_budget, 0);
	assert_string_equal(s.status, "pass");
	aw_suspects_release(&s);
	json_decref(doc);

	/* unreadable: no suspects list, anchors of the wrong type, not an object */
	doc = json_loads("{\"status\":\"pass\"}", 0, NULL);
	assert_int_equal(aw_suspects_from_json(doc, run_id, &s, &err), -EPROTO);
	assert_non_null(strstr(err, run_id));
	assert_null(s.keys);
	free(err);
	err = NULL;
	json_decref(doc);
	doc = json_loads("{\"suspects\":[],\"anchors\":\"op=plain cpu=0\"}", 0, NULL);
	assert_int_equal(aw_suspects_from_json(doc, run_id, &s, &err), -EPROTO);
	free(err);
	err = NULL;
	json_decref(doc);
	assert_int_equal(aw_suspects_from_json(NULL, run_id, &s, &err), -EPROTO);
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_check),
	    cmocka_unit_test(test_reply),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
