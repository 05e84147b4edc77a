/* Number parsing: suffixes, ranges, junk and overflow are all caught. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/parse.h"

static void integers(void **s)
{
    (void)s;
    int64_t v;
    assert_int_equal(kv_parse_i64("--n", "12", 1, 100, &v), KV_OK);
    assert_int_equal(v, 12);
    assert_int_equal(kv_parse_i64("--n", "4K", 1, INT64_MAX, &v), KV_OK);
    assert_int_equal(v, 4096);
    assert_int_equal(kv_parse_i64("--n", "2M", 1, INT64_MAX, &v), KV_OK);
    assert_int_equal(v, 2 << 20);
    assert_int_equal(kv_parse_i64("--n", "1G", 1, INT64_MAX, &v), KV_OK);
    assert_int_equal(v, 1 << 30);
    const char *bad[] = {"", "abc", "12x", "1.5", "0x10", "99999999999999999999", "-", "4KK", "9999999999999G"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(kv_parse_i64("--n", bad[i], 0, INT64_MAX, &v), KV_EUSAGE);
    assert_int_equal(kv_parse_i64("--n", "0", 1, 100, &v), KV_EUSAGE);
    assert_int_equal(kv_parse_i64("--n", "-5", 1, 100, &v), KV_EUSAGE);
    assert_int_equal(kv_parse_i64("--n", "101", 1, 100, &v), KV_EUSAGE);
    assert_int_equal(kv_parse_i64("--n", NULL, 1, 100, &v), KV_EUSAGE);
    assert_non_null(strstr(kv_error_msg(), "--n"));
}

static void floats(void **s)
{
    (void)s;
    double v;
    assert_int_equal(kv_parse_f64("--eps", "1e-6", 0, 1, &v), KV_OK);
    assert_true(v == 1e-6);
    assert_int_equal(kv_parse_f64("--eps", "0", 0, 1, &v), KV_OK);
    const char *bad[] = {"", "nan", "inf", "-inf", "1e999", "1.5x", "x", "2"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(kv_parse_f64("--eps", bad[i], 0, 1, &v), KV_EUSAGE);
}

static void ranges(void **s)
{
    (void)s;
    uint64_t lo, hi;
    assert_int_equal(kv_parse_range("--seeds", "3..5", &lo, &hi), KV_OK);
    assert_true(lo == 3 && hi == 5);
    assert_int_equal(kv_parse_range("--seeds", "7", &lo, &hi), KV_OK);
    assert_true(lo == 7 && hi == 7);
    assert_int_equal(kv_parse_range("--seeds", "5..3", &lo, &hi), KV_EUSAGE);
    assert_int_equal(kv_parse_range("--seeds", "..3", &lo, &hi), KV_EUSAGE);
    assert_int_equal(kv_parse_range("--seeds", "3..", &lo, &hi), KV_EUSAGE);
}

/* A message can wrap the previous one (kv_error_msg() as an argument). */
static void error_wraps_itself(void **s)
{
    (void)s;
    kv_error(KV_EUSAGE, "--eps: -1 is out of range");
    assert_int_equal(kv_error(KV_EDATA, "f.json: params: %s", kv_error_msg()), KV_EDATA);
    assert_string_equal(kv_error_msg(), "f.json: params: --eps: -1 is out of range");
    kv_error(KV_EDATA, "two\nlines");
    assert_string_equal(kv_error_msg(), "two lines");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(integers), cmocka_unit_test(floats), cmocka_unit_test(ranges),
        cmocka_unit_test(error_wraps_itself),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
