/* kv_touch_pages: one zero written at the start of the range and at each
 * 4 KiB page boundary inside it, on any number of threads, and nothing
 * outside the range; nothing at all below 8 MiB. */
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/tensor.h"

enum { FILL = 0xAB };

/* Whether buf (n bytes, FILL before the call) holds a zero exactly where
 * kv_touch_pages(p, bytes) should have written one, FILL elsewhere. */
static int written_as_expected(const unsigned char *buf, size_t n, const unsigned char *p, size_t bytes, int any)
{
    for (size_t i = 0; i < n; i++) {
        const unsigned char *q = buf + i;
        const int inside = q >= p && q < p + bytes, first = q == p || ((uintptr_t)q & 4095) == 0;
        if (buf[i] != (any && inside && first ? 0 : FILL)) return 0;
    }
    return 1;
}

static void touches_its_range_alone(void **s)
{
    (void)s;
    const size_t n = (12u << 20) + 8192;
    unsigned char *buf = malloc(n);
    assert_non_null(buf);
    const size_t offsets[] = {0, 1, 4099, 4096};
    const size_t lens[] = {(10u << 20) + 777, 8u << 20, (12u << 20) - 4096};
    for (int th = 1; th <= 4; th *= 2) {
        omp_set_num_threads(th);
        for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++)
            for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
                memset(buf, FILL, n);
                kv_touch_pages(buf + offsets[o], lens[l]);
                assert_true(written_as_expected(buf, n, buf + offsets[o], lens[l], 1));
            }
    }
    memset(buf, FILL, n); /* under 8 MiB: left to the writers */
    kv_touch_pages(buf + 3, (8u << 20) - 1);
    assert_true(written_as_expected(buf, n, buf + 3, (8u << 20) - 1, 0));
    kv_touch_pages(NULL, 16u << 20);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(touches_its_range_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
