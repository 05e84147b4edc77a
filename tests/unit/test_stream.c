/* kv_stream_fill: every 4-byte word of the range holds the word, on any
 * number of threads, past the parallel threshold and below it, at part
 * bounds and off them; nothing outside the range is written. */
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pipeline/stream.h"

enum { FILL = 0xAB };
#define WORD 0x7FC17FC1u

/* Whether buf (n bytes, FILL before the call) holds WORD in each word of
 * [p, p + bytes) and FILL elsewhere. */
static int filled_as_expected(const unsigned char *buf, size_t n, const unsigned char *p, size_t bytes)
{
    for (size_t i = 0; i < n; i++) {
        const unsigned char *q = buf + i;
        if (q >= p && q < p + bytes) {
            uint32_t w;
            memcpy(&w, buf + i, 4);
            if (w != WORD) return 0;
            i += 3;
        } else if (buf[i] != FILL) {
            return 0;
        }
    }
    return 1;
}

static void fills_its_range_alone(void **s)
{
    (void)s;
    const size_t n = (14u << 20) + 64;
    unsigned char *buf = malloc(n);
    assert_non_null(buf);
    const size_t offsets[] = {0, 4, (2u << 20) - 4};
    const size_t lens[] = {0, 4, 4100, (2u << 20) - 4, 2u << 20, 6u << 20, 8u << 20, (10u << 20) + 12};
    for (int th = 1; th <= 4; th *= 2) {
        omp_set_num_threads(th);
        for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++)
            for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
                memset(buf, FILL, n);
                kv_stream_fill(buf + offsets[o], lens[l], WORD);
                assert_true(filled_as_expected(buf, n, buf + offsets[o], lens[l]));
            }
    }
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fills_its_range_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
