/* JSON text written straight into a buffer, byte for byte what jansson's json_dumps() with
 * JSON_COMPACT writes for the same values (escapes, number forms, failures), for replies too
 * large to build as a jansson tree first (a series of thousands of points). Not for use
 * outside collector/. */
#ifndef AW_COLLECTOR_JSON_WRITE_H
#define AW_COLLECTOR_JSON_WRITE_H

#include <stdint.h>

#include "aw/buf.h"

/* Appends `s` as a JSON string, null for NULL: '"' and '\\' backslash-escaped, \b \f \n \r \t
 * as such, other control characters as \u00XX (upper-case hex), everything else (UTF-8, '/')
 * as it is. Returns 0, -EINVAL when `s` is not valid UTF-8 (jansson refuses such a string),
 * or the buffer's error; on error the buffer may hold part of the string. */
int aw_json_put_str(struct aw_buf *b, const char *s);

/* Appends `v` as a JSON real: %.17g (an exact round trip), ".0" added when that has neither a
 * '.' nor an exponent, the exponent without '+' or leading zeros ("1e20", "1e-5"). Returns 0,
 * -EINVAL when `v` is not finite (jansson has no such real), or the buffer's error. */
int aw_json_put_real(struct aw_buf *b, double v);

/* Appends `v` as a JSON integer. Returns 0 or the buffer's error. */
int aw_json_put_int(struct aw_buf *b, int64_t v);

#endif
