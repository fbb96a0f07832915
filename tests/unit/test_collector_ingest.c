/* The content hash that tells a repeated upload (200) from a conflicting one (409): equal for
 * the same values however the JSON was spelled, different for any changed value; and the
 * Prometheus exposition of the metrics. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"
#include "metrics.h"

static const char doc_a[] =
    "{\"schema\":\"atomwatch.result/1\",\"run_id\":\"11111111-1111-4111-8111-111111111111\","
    "\"project\":\"linux\",\"commit\":\"abcdef0\",\"ref\":\"main\",\"trigger\":\"ci\","
    "\"started_at\":\"2026-01-01T00:00:00Z\",\"finished_at\":\"2026-01-01T00:00:01Z\","
    "\"host\":{\"name\":\"h1\",\"arch\":\"aarch64\",\"cpu_model\":\"N1\",\"labels\":{}},"
    "\"matrix\":{\"name\":\"default\",\"version\":1,\"hash\":\"0123456789abcdef\"},"
    "\"cells\":[{\"key\":\"op=ldadd cpu=0\",\"op\":\"ldadd\",\"cpu\":0,\"unit\":\"ns\","
    "\"n\":200,\"min\":4,\"p50\":4.5,\"p95\":5,\"p99\":6,\"max\":9,\"status\":\"ok\"}]}";

/* The same values: other key order, spacing, number spelling, explicit nulls. */
static const char doc_b[] =
    "{ \"cells\": [ { \"status\": \"ok\", \"max\": 9.0, \"p99\": 6e0, \"p95\": 5.00,"
    " \"p50\": 45e-1, \"min\": 4.0, \"n\": 200, \"unit\": \"ns\", \"cpu\": 0, \"reader\": null,"
    " \"op\": \"ldadd\", \"key\": \"op=ldadd cpu=0\" } ],"
    " \"matrix\": {\"hash\": \"0123456789abcdef\", \"version\": 1, \"name\": \"default\"},"
    " \"host\": {\"labels\": {}, \"cpu_model\": \"N1\", \"arch\": \"aarch64\", \"name\": \"h1\"},"
    " \"finished_at\": \"2026-01-01T00:00:01Z\", \"started_at\": \"2026-01-01T00:00:00Z\","
    " \"trigger\": \"ci\", \"ref\": \"main\", \"commit\": \"abcdef0\", \"project\": \"linux\","
    " \"run_id\": \"11111111-1111-4111-8111-111111111111\", \"schema\": \"atomwatch.result/1\","
    " \"meta\": null }";

static struct aw_result *parse(const char *text)
{
	struct aw_verr e;
	json_t *j = json_loads(text, 0, NULL);
	struct aw_result *r;

	assert_non_null(j);
	r = aw_result_from_json(j, NULL, &e);
	if (!r)
		fail_msg("%s: %s", e.field, e.message);
	json_decref(j);
	return r;
}

static void test_content_hash(void **state)
{
	struct aw_result *a = parse(doc_a), *b = parse(doc_b);
	char ha[AW_SHA256_HEX_LEN + 1], hb[AW_SHA256_HEX_LEN + 1];

	(void)state;
	assert_int_equal(aw_ingest_content_hash(a, ha), 0);
	assert_int_equal(aw_ingest_content_hash(b, hb), 0);
	assert_int_equal(strlen(ha), 64);
	assert_string_equal(ha, hb);
	/* Any value changes it: a number, a string, an absent value, a host label. */
	b->cells[0].p95 = nextafter(5.0, 6.0);
	assert_int_equal(aw_ingest_content_hash(b, hb), 0);
	assert_string_not_equal(ha, hb);
	b->cells[0].p95 = 5.0;
	assert_int_equal(aw_set_str(&b->cells[0].reader, "srcu"), 0);
	assert_int_equal(aw_ingest_content_hash(b, hb), 0);
	assert_string_not_equal(ha, hb);
	assert_int_equal(aw_set_str(&b->cells[0].reader, NULL), 0);
	b->cells[0].mean = 4.5;
	assert_int_equal(aw_ingest_content_hash(b, hb), 0);
	assert_string_not_equal(ha, hb);
	b->cells[0].mean = NAN;
	json_object_set_new(json_object_get(b->host, "labels"), "rack", json_string("7"));
	assert_int_equal(aw_ingest_content_hash(b, hb), 0);
	assert_string_not_equal(ha, hb);
	json_object_del(json_object_get(b->host, "labels"), "rack");
	assert_int_equal(aw_ingest_content_hash(b, hb), 0);
	assert_string_equal(ha, hb);
	/* Strings are length-prefixed: moving a character between fields is a change. */
	assert_int_equal(aw_set_str(&b->project, "linu"), 0);
	assert_int_equal(aw_set_str(&b->commit, "xabcdef0"), 0);
	assert_int_equal(aw_ingest_content_hash(b, hb), 0);
	assert_string_not_equal(ha, hb);
	aw_result_free(&a);
	aw_result_free(&b);
}

static void test_metrics_text(void **state)
{
	static const char *const routes[] = {"/api/v1/results", "/api/v1/runs/{id}", "other"};
	struct aw_metrics_gauges g = {.in_flight = 2, .waiters = 3, .queue_depth = 4};
	struct aw_buf out;

	(void)state;
	aw_metrics_init(routes, 3);
	aw_metrics_request(0, "POST", 201);
	aw_metrics_request(0, "POST", 201);
	aw_metrics_request(1, "GET", 404);
	aw_metrics_request(2, "DELETE", 405);
	aw_metrics_request(2, "GET", 418);    /* an unlisted status */
	aw_metrics_request(7, "GET", 200);    /* an unknown route: ignored */
	aw_metrics_ingest_latency(1500000);   /* 1.5 ms */
	aw_metrics_ingest_latency(300000000); /* 0.3 s */
	aw_metrics_run(STORE_CREATED);
	aw_metrics_run(STORE_CONFLICT);
	aw_buf_init(&out, 1 << 20);
	assert_int_equal(aw_metrics_format(&out, &g), 0);
	assert_non_null(strstr(out.data, "# TYPE atomwatch_http_requests_total counter\n"));
	assert_non_null(strstr(out.data, "atomwatch_http_requests_total{route=\"/api/v1/results\","
	                                 "method=\"POST\",status=\"201\"} 2\n"));
	assert_non_null(strstr(out.data, "{route=\"/api/v1/runs/{id}\",method=\"GET\","
	                                 "status=\"404\"} 1\n"));
	assert_non_null(strstr(out.data, "{route=\"other\",method=\"other\",status=\"405\"} 1\n"));
	assert_non_null(strstr(out.data, "{route=\"other\",method=\"GET\",status=\"other\"} 1\n"));
	assert_non_null(
	    strstr(out.data, "atomwatch_ingest_duration_seconds_bucket{le=\"0.001\"} 0\n"));
	assert_non_null(
	    strstr(out.data, "atomwatch_ingest_duration_seconds_bucket{le=\"0.0025\"} 1\n"));
	assert_non_null(
	    strstr(out.data, "atomwatch_ingest_duration_seconds_bucket{le=\"0.25\"} 1\n"));
	assert_non_null(
	    strstr(out.data, "atomwatch_ingest_duration_seconds_bucket{le=\"0.5\"} 2\n"));
	assert_non_null(
	    strstr(out.data, "atomwatch_ingest_duration_seconds_bucket{le=\"+Inf\"} 2\n"));
	assert_non_null(strstr(out.data, "atomwatch_ingest_duration_seconds_sum 0.301500\n"));
	assert_non_null(strstr(out.data, "atomwatch_ingest_duration_seconds_count 2\n"));
	assert_non_null(strstr(out.data, "atomwatch_runs_stored_total{outcome=\"created\"} 1\n"));
	assert_non_null(strstr(out.data, "atomwatch_runs_stored_total{outcome=\"duplicate\"} 0\n"));
	assert_non_null(strstr(out.data, "atomwatch_http_requests_in_flight 2\n"));
	assert_non_null(strstr(out.data, "atomwatch_jobs_waiting 3\n"));
	assert_non_null(strstr(out.data, "atomwatch_ingest_queue_depth 4\n"));
	aw_buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_content_hash),
	    cmocka_unit_test(test_metrics_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
