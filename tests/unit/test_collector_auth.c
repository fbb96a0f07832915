/* Tokens: shape, randomness, hashing as stored, constant-time comparison and the
 * Authorization header parser. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "auth.h"

static void test_generate(void **state)
{
	char a[AW_TOKEN_LEN + 1], b[AW_TOKEN_LEN + 1];

	(void)state;
	assert_int_equal(aw_token_generate(a), 0);
	assert_int_equal(aw_token_generate(b), 0);
	assert_int_equal(strlen(a), AW_TOKEN_LEN);
	assert_true(aw_token_well_formed(a));
	assert_true(aw_token_well_formed(b));
	assert_string_not_equal(a, b);
	assert_int_equal(strncmp(a, "awt_", 4), 0);
}

static void test_well_formed(void **state)
{
	char t[AW_TOKEN_LEN + 2];

	(void)state;
	memset(t, 'a', sizeof(t));
	memcpy(t, "awt_", 4);
	t[AW_TOKEN_LEN] = '\0';
	assert_true(aw_token_well_formed(t));
	t[10] = 'A'; /* uppercase hex is not what we hand out */
	assert_false(aw_token_well_formed(t));
	t[10] = 'g';
	assert_false(aw_token_well_formed(t));
	t[10] = 'a';
	t[AW_TOKEN_LEN] = 'a';
	t[AW_TOKEN_LEN + 1] = '\0';
	assert_false(aw_token_well_formed(t));
	assert_false(aw_token_well_formed(""));
	assert_false(aw_token_well_formed(NULL));
	assert_false(aw_token_well_formed("awt_"));
}

static void test_hash(void **state)
{
	char hex[AW_SHA256_HEX_LEN + 1];

	(void)state;
	/* SHA-256("abc"), FIPS 180-2 appendix B.1 */
	assert_int_equal(aw_token_hash("abc", hex), 0);
	assert_string_equal(hex,
	                    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_ct_equal(void **state)
{
	(void)state;
	assert_true(aw_ct_equal("abcdef", "abcdef", 6));
	assert_false(aw_ct_equal("abcdef", "abcdeF", 6));
	assert_false(aw_ct_equal("Abcdef", "abcdef", 6));
	assert_true(aw_ct_equal("abcdef", "abcxyz", 3));
	assert_true(aw_ct_equal("", "", 0));
}

static void test_bearer(void **state)
{
	(void)state;
	assert_string_equal(aw_bearer_token("Bearer awt_1"), "awt_1");
	assert_string_equal(aw_bearer_token("bearer   awt_1"), "awt_1");
	assert_string_equal(aw_bearer_token("BEARER\tx"), "x");
	assert_null(aw_bearer_token("Bearer"));
	assert_null(aw_bearer_token("Bearer "));
	assert_null(aw_bearer_token("Basic dXNlcjpwYXNz"));
	assert_null(aw_bearer_token("Bearerawt_1"));
	assert_null(aw_bearer_token(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_generate), cmocka_unit_test(test_well_formed),
	    cmocka_unit_test(test_hash),     cmocka_unit_test(test_ct_equal),
	    cmocka_unit_test(test_bearer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
