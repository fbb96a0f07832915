/* The collector's request line: "METHOD /path?query", the path percent-decoded as the HTTP
 * server does, routed as the service does, and the query's values decoded and given to the
 * validators the handlers use. */
#include <stdbool.h>

#include "aw/util.h"
#include "fuzz.h"
#include "httpd.h"
#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size), *path, *query, param_buf[1024];
	const char *method = "GET", *param = NULL, *route;
	bool known;
	int64_t id;

	if (!text)
		return 0;
	path = strchr(text, ' ');
	if (path) {
		*path++ = '\0';
		method = text;
	} else {
		path = text;
	}
	query = strchr(path, '?');
	if (query)
		*query++ = '\0';
	if (strlen(path) < 1024) { /* httpd.c answers 414 to longer ones */
		aw_httpd_unescape(path);
		route =
		    aw_collector_route(method, path, param_buf, sizeof(param_buf), &param, &known);
		if (route && param) {
			aw_valid_name(param);
			aw_valid_commit(param);
			aw_parse_id(param, &id);
		}
	}
	while (query && *query) {
		char *amp = strchr(query, '&'), *eq;

		if (amp)
			*amp++ = '\0';
		eq = strchr(query, '=');
		if (eq) {
			*eq++ = '\0';
			aw_httpd_unescape(eq);
			aw_valid_name(eq);
			aw_valid_commit(eq);
			aw_valid_ref(eq);
			aw_parse_id(eq, &id);
		}
		aw_httpd_unescape(query);
		query = amp;
	}
	free(text);
	return 0;
}
