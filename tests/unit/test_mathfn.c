/* kv_exp and kv_log give libm's exp and log bit for bit (over a million
 * arguments across their ranges, and the special ones); on glibc they are
 * its wrapper-free entry points; the probe that picks them tells a function
 * that differs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "core/mathfn.h"
#include "core/rng.h"

static void same_bits(double x, double a, double b)
{
    if (memcmp(&a, &b, sizeof a) != 0) fail_msg("at %a: %a against libm's %a", x, a, b);
}

static void agree_with_libm(void **st)
{
    (void)st;
    static const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, 5e-324, -5e-324, 0x1p-1022, 1.0,
                                     709.782712893384, 709.7827128933841, -745.1332191019411, -745.1332191019412,
                                     -708.3964185322641, 0x1.fffffffffffffp1023, -1.0, 1.0000000000000002};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
        same_bits(special[i], kv_exp(special[i]), exp(special[i]));
        same_bits(special[i], kv_log(special[i]), log(special[i]));
    }
    for (uint64_t i = 0; i < 1000000; i++) {
        const double u = kv_rng_uniform(7, 0, i), x = (2 * u - 1) * (i % 4 ? 50 : 760);
        same_bits(x, kv_exp(x), exp(x));
        const double y = ldexp(u + 0.5, (int)(i % 2100) - 1070); /* positive, subnormal to huge */
        same_bits(y, kv_log(y), log(y));
    }
}

#if defined(__GLIBC__) && defined(__x86_64__)
static void glibc_entry_points(void **st)
{
    (void)st;
    /* glibc on x86-64 keeps __exp_finite and __log_finite: picked */
    assert_true(kv_exp != exp);
    assert_true(kv_log != log);
}
#endif

static double exp_off(double x) { return x == 0.5 ? nextafter(exp(x), 0) : exp(x); }

static void probe_tells_a_difference(void **st)
{
    (void)st;
    assert_true(kv_mathfn_probe(exp, exp));
    assert_false(kv_mathfn_probe(exp_off, exp)); /* one argument, one unit in the last place */
    assert_false(kv_mathfn_probe(expm1, exp));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(agree_with_libm),
#if defined(__GLIBC__) && defined(__x86_64__)
        cmocka_unit_test(glibc_entry_points),
#endif
        cmocka_unit_test(probe_tells_a_difference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
