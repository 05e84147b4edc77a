/* The golden fixtures' expected outputs (an independent numpy float64
 * implementation, scripts/gen-fixtures) agree with kverify's oracle to
 * float64 rounding: |y - e| <= 2 (n + 4) 2^-53 S for every element, where the
 * two differ only in summation order. NaN and Inf must match exactly.
 * (gdn-wy-bwd's dk takes the even neighbour at an exact bf16 midpoint where
 * the device's sum is exact: both implement that rule, each its own way.) */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/dtype.h"
#include "formats/fixture.h"
#include "formats/source.h"

static int check_fixture(const char *path)
{
    struct kv_fixture fx;
    assert_int_equal(kv_fixture_read(path, &fx), KV_OK);
    const struct kv_kernel *k = kv_kernel_find(fx.kernel);
    assert_non_null(k);
    struct kv_given g;
    memset(&g, 0, sizeof g);
    assert_int_equal(kv_given_inputs(k, path, &g), KV_OK);
    struct kv_case c;
    assert_int_equal(kv_case_init(&c, k, 1), KV_OK);
    int none[KV_MAX_PARAMS] = {0};
    assert_int_equal(kv_given_apply(&g, &c, none, 0), KV_OK);
    assert_int_equal(kv_case_alloc(&c), KV_OK);
    for (int t = 0; t < k->n_tensors; t++) {
        if (!kv_tensor_on(&c, t) || k->tensors[t].role != KV_INPUT) continue;
        assert_non_null(c.given[t]); /* every input is in the fixture */
        memcpy(c.t[t].data, c.given[t]->data, kv_tensor_bytes(&c.t[t]));
    }
    assert_int_equal(k->oracle(&c), KV_OK);
    int checked = 0;
    for (int i = fx.n_inputs; i < fx.n_tensors; i++) {
        int t = kv_case_tensor(&c, fx.tname[i]);
        assert_true(t >= 0);
        assert_int_equal(fx.t[i].dtype, KV_F64);
        assert_int_equal(fx.t[i].count, c.t[t].count);
        double n = c.bound[t].n;
        for (size_t j = 0; j < fx.t[i].count; j++) {
            double e = ((double *)fx.t[i].data)[j], y = c.y[t][j];
            if (isnan(e) || isnan(y)) {
                assert_true(isnan(e) && isnan(y));
                continue;
            }
            if (isinf(e) || isinf(y)) {
                assert_true(e == y);
                continue;
            }
            double tol = 2 * (n + 4) * 0x1p-53 * c.S[t][j] + 1e-300;
            if (fabs(y - e) > tol) {
                fprintf(stderr, "%s: %s[%zu]: oracle %.17g, fixture %.17g, tolerance %.3g\n", path, fx.tname[i], j,
                        y, e, tol);
                fail();
            }
        }
        checked++;
    }
    kv_case_free(&c);
    kv_given_free(&g);
    kv_fixture_free(&fx);
    return checked;
}

static void all_fixtures(void **s)
{
    (void)s;
    int files = 0;
    for (int kk = 0; kv_kernels[kk]; kk++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/%s", KV_FIXTURES_DIR, kv_kernels[kk]->name);
        DIR *d = opendir(dir);
        assert_non_null(d); /* every kernel has golden fixtures */
        struct dirent *e;
        int mine = 0;
        while ((e = readdir(d))) {
            size_t len = strlen(e->d_name);
            if (len < 5 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
            char path[2048];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            assert_true(check_fixture(path) > 0);
            mine++;
        }
        closedir(d);
        assert_true(mine >= 2);
        files += mine;
    }
    assert_true(files > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(all_fixtures)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
