/* kv_vk_cm_layout_known: the probe's verdict on the accumulators' element
 * layout (src/vk/cm_layout.c), which decides whether the KV_CM_EL builds run. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "vk/vk.h"

enum { N = 1 + 32 * 64 };

/* The probe's output for a layout: element e of lane l at (row, col) = at(l, e). */
static void fill(float *out, unsigned per_lane, void (*at)(unsigned l, unsigned e, unsigned *r, unsigned *c))
{
    for (int i = 0; i < N; i++) out[i] = NAN;
    out[0] = (float)per_lane;
    for (unsigned l = 0; l < 32; l++)
        for (unsigned e = 0; e < per_lane; e++) {
            unsigned r, c;
            at(l, e, &r, &c);
            out[1 + l * per_lane + e] = (float)(r * 16 + c);
        }
}
static void nv(unsigned l, unsigned e, unsigned *r, unsigned *c)
{
    unsigned p = e / 2;
    *r = l / 4 + 8 * (p >> 1);
    *c = 8 * (p & 1) + 2 * (l % 4) + e % 2;
}
static void transposed(unsigned l, unsigned e, unsigned *r, unsigned *c) { nv(l, e, c, r); }
static void pairs_swapped(unsigned l, unsigned e, unsigned *r, unsigned *c) /* row half by p & 1, column half by p >> 1 */
{
    unsigned p = e / 2;
    *r = l / 4 + 8 * (p & 1);
    *c = 8 * (p >> 1) + 2 * (l % 4) + e % 2;
}
static void row_major(unsigned l, unsigned e, unsigned *r, unsigned *c) /* lane l: row l / 2, 8 columns */
{
    *r = l / 2;
    *c = 8 * (l % 2) + e;
}
static void wave16(unsigned l, unsigned e, unsigned *r, unsigned *c) /* 16 elements a lane: lanes 0..15 only */
{
    *r = e;
    *c = l % 16;
}

static void accepts_the_layout(void **s)
{
    (void)s;
    float out[N];
    fill(out, 8, nv);
    assert_int_equal(kv_vk_cm_layout_known(out, N), 1);
}

static void rejects_other_layouts(void **s)
{
    (void)s;
    float out[N];
    void (*other[])(unsigned, unsigned, unsigned *, unsigned *) = {transposed, pairs_swapped, row_major};
    for (size_t i = 0; i < sizeof other / sizeof *other; i++) {
        fill(out, 8, other[i]);
        assert_int_equal(kv_vk_cm_layout_known(out, N), 0);
    }
    fill(out, 16, wave16);
    assert_int_equal(kv_vk_cm_layout_known(out, N), 0);
}

static void rejects_one_wrong_element(void **s)
{
    (void)s;
    float out[N];
    for (int at = 1; at <= 256; at += 17) {
        fill(out, 8, nv);
        out[at] += 1.0f;
        assert_int_equal(kv_vk_cm_layout_known(out, N), 0);
        fill(out, 8, nv);
        out[at] = NAN; /* an element the probe did not write */
        assert_int_equal(kv_vk_cm_layout_known(out, N), 0);
    }
}

static void rejects_a_short_output(void **s)
{
    (void)s;
    float out[N];
    fill(out, 8, nv);
    assert_int_equal(kv_vk_cm_layout_known(out, 256), 0);
    assert_int_equal(kv_vk_cm_layout_known(out, 257), 1);
    out[0] = 7.0f; /* another element count with the same first elements */
    assert_int_equal(kv_vk_cm_layout_known(out, N), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accepts_the_layout),
        cmocka_unit_test(rejects_other_layouts),
        cmocka_unit_test(rejects_one_wrong_element),
        cmocka_unit_test(rejects_a_short_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
