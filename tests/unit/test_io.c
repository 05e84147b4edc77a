/* Readers of .npy, .npz and JSON fixtures: every accepted form round-trips
 * to the right values, and every malformed one is a clean KV_EDATA. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/files.h"
#include "formats/fixture.h"
#include "formats/npy.h"
#include "formats/npz.h"

/* An .npy image with the given version, header dict and payload. */
static size_t npy(unsigned char *out, int version, const char *dict, const void *data, size_t bytes)
{
    size_t pre = version == 1 ? 10 : 12, dl = strlen(dict);
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (unsigned char)version;
    out[7] = 0;
    size_t hlen = dl + 1;
    out[8] = (unsigned char)(hlen & 0xff);
    out[9] = (unsigned char)(hlen >> 8);
    if (version > 1) out[10] = out[11] = 0;
    memcpy(out + pre, dict, dl);
    out[pre + dl] = '\n';
    memcpy(out + pre + hlen, data, bytes);
    return pre + hlen + bytes;
}

static void npy_forms(void **s)
{
    (void)s;
    unsigned char buf[512];
    struct kv_tensor t;
    float f[3] = {1.5f, -2, 3};
    size_t n = npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", f, sizeof f);
    assert_int_equal(kv_npy_parse("a", buf, n, &t), KV_OK);
    assert_int_equal(t.dtype, KV_F32);
    assert_int_equal(t.ndim, 1);
    assert_true(((float *)t.data)[1] == -2);
    kv_tensor_free(&t);
    /* big-endian doubles, version 2 */
    unsigned char be[16];
    double d[2] = {0.25, -8};
    for (int i = 0; i < 2; i++)
        for (int b = 0; b < 8; b++) be[i * 8 + b] = ((unsigned char *)&d[i])[7 - b];
    n = npy(buf, 2, "{'descr': '>f8', 'fortran_order': False, 'shape': (2,)}", be, 16);
    assert_int_equal(kv_npy_parse("b", buf, n, &t), KV_OK);
    assert_true(((double *)t.data)[0] == 0.25 && ((double *)t.data)[1] == -8);
    kv_tensor_free(&t);
    /* Fortran order, version 3: column-major 2x3 [[0,1,2],[3,4,5]] */
    int32_t fo[6] = {0, 3, 1, 4, 2, 5};
    n = npy(buf, 3, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", fo, sizeof fo);
    assert_int_equal(kv_npy_parse("c", buf, n, &t), KV_OK);
    for (int i = 0; i < 6; i++) assert_int_equal(((int32_t *)t.data)[i], i);
    kv_tensor_free(&t);
    /* u1, u2, V2 (ml_dtypes bfloat16), f2 */
    uint16_t w[2] = {0x3f80, 0xc000};
    n = npy(buf, 1, "{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }", w, 4);
    assert_int_equal(kv_npy_parse("d", buf, n, &t), KV_OK);
    assert_int_equal(t.dtype, KV_U16);
    kv_tensor_free(&t);
    n = npy(buf, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }", w, 4);
    assert_int_equal(kv_npy_parse("e", buf, n, &t), KV_OK);
    assert_int_equal(t.dtype, KV_U8);
    kv_tensor_free(&t);
    n = npy(buf, 1, "{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", w, 4);
    assert_int_equal(kv_npy_parse("f", buf, n, &t), KV_OK);
    assert_int_equal(t.dtype, KV_F16);
    kv_tensor_free(&t);
}

static void npy_roundtrip(void **s)
{
    (void)s;
    struct kv_tensor a, b;
    memset(&a, 0, sizeof a);
    int64_t shape[3] = {2, 3, 5};
    assert_int_equal(kv_tensor_alloc(&a, "a", KV_F32, 3, shape), KV_OK);
    for (size_t i = 0; i < a.count; i++) ((float *)a.data)[i] = (float)i * 0.5f;
    char *buf;
    size_t size;
    assert_int_equal(kv_npy_encode(&a, &buf, &size), KV_OK);
    assert_int_equal(size % 64, (a.count * 4) % 64); /* header padded to 64 bytes */
    assert_int_equal(kv_npy_parse("rt", buf, size, &b), KV_OK);
    assert_int_equal(b.ndim, 3);
    assert_memory_equal(b.shape, shape, sizeof shape);
    assert_memory_equal(b.data, a.data, a.count * 4);
    free(buf);
    kv_tensor_free(&a);
    kv_tensor_free(&b);
}

static void expect_bad(const unsigned char *buf, size_t n, const char *needle)
{
    struct kv_tensor t;
    assert_int_equal(kv_npy_parse("bad.npy", buf, n, &t), KV_EDATA);
    if (!strstr(kv_error_msg(), needle)) {
        fprintf(stderr, "message '%s' lacks '%s'\n", kv_error_msg(), needle);
        fail();
    }
    assert_non_null(strstr(kv_error_msg(), "bad.npy"));
}

static void npy_bad(void **s)
{
    (void)s;
    unsigned char buf[512];
    float f[3] = {0};
    size_t n = npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", f, sizeof f);
    expect_bad(buf, 5, "truncated");
    unsigned char wrong[64];
    memcpy(wrong, buf, 64);
    wrong[1] = 'X';
    expect_bad(wrong, n, "wrong magic");
    expect_bad(buf, n - 1, "header claims 12 bytes of data");
    expect_bad(buf, 40, "header of");
    unsigned char big[600];
    memcpy(big, buf, n);
    memset(big + n, 0, 8);
    expect_bad(big, n + 8, "8 bytes after the data");
    buf[6] = 4;
    expect_bad(buf, n, "unsupported .npy format version 4");
    const struct { const char *dict, *needle; } cases[] = {
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", "unsupported dtype '<c8'"},
        {"{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", "object arrays"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", "structured"},
        {"{'descr': '<f4', 'shape': (3,), }", "lacks fortran_order"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4611686018427387904), }", "overflows"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", "overflows"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }", "empty array"},
        {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (3,), }", "fortran_order"},
        {"[1, 2]", "not a dict"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,2,3,4,5), }", "dimensions"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'extra': 1}", "unknown key"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        n = npy(buf, 1, cases[i].dict, f, sizeof f);
        expect_bad(buf, n, cases[i].needle);
    }
}

static char *slurp(const char *path, size_t *size)
{
    char *buf;
    assert_int_equal(kv_read_file(path, 1 << 26, &buf, size), KV_OK);
    return buf;
}

static void npz_members(void **s)
{
    (void)s;
    const char *files[] = {KV_FIXTURES_DIR "/rmsnorm-bwd/odd_3x7.npz", KV_FIXTURES_DIR "/rmsnorm-bwd/odd_3x7_stored.npz"};
    for (int i = 0; i < 2; i++) {
        struct kv_npz *z;
        assert_int_equal(kv_npz_open(files[i], &z), KV_OK);
        assert_int_equal(kv_npz_count(z), 3);
        struct kv_tensor t;
        int found;
        assert_int_equal(kv_npz_read(z, "x", &t, &found), KV_OK);
        assert_true(found);
        assert_int_equal(t.ndim, 2);
        assert_int_equal(t.shape[0], 3);
        assert_int_equal(t.shape[1], 7);
        kv_tensor_free(&t);
        assert_int_equal(kv_npz_read(z, "nope", &t, &found), KV_OK);
        assert_false(found);
        kv_npz_close(z);
    }
}

static void npz_corrupt(void **s)
{
    (void)s;
    size_t size;
    char *buf = slurp(KV_FIXTURES_DIR "/rmsnorm-bwd/odd_3x7.npz", &size);
    /* Flip bytes inside the first member's deflate stream (after its 30-byte
     * local header and name). */
    char *bad = malloc(size);
    int saw_error = 0;
    for (size_t at = 40; at < 90; at += 7) {
        memcpy(bad, buf, size);
        bad[at] ^= 0x5a;
        struct kv_npz *z = NULL;
        enum kv_status st = kv_npz_open_mem("c.npz", bad, size, &z);
        if (st == KV_OK) {
            struct kv_tensor t;
            int found;
            const char *names[] = {"x", "w", "dy"};
            for (int m = 0; m < 3; m++) {
                st = kv_npz_read(z, names[m], &t, &found);
                if (st == KV_OK) kv_tensor_free(&t);
                else {
                    assert_int_equal(st, KV_EDATA);
                    assert_non_null(strstr(kv_error_msg(), "c.npz: member"));
                    saw_error = 1;
                }
            }
            kv_npz_close(z);
        } else {
            assert_int_equal(st, KV_EDATA);
            saw_error = 1;
        }
    }
    assert_true(saw_error);
    struct kv_npz *z;
    assert_int_equal(kv_npz_open_mem("t.npz", buf, size / 2, &z), KV_EDATA); /* truncated archive */
    assert_non_null(strstr(kv_error_msg(), "t.npz: not a readable .npz archive"));
    free(bad);
    free(buf);
}

static void json_fixture(void **s)
{
    (void)s;
    struct kv_fixture fx;
    const char *good = "{\"kernel\":\"rmsnorm-bwd\",\"params\":{\"eps\":0,\"dist\":\"normal\"},\"seed\":3,"
                       "\"inputs\":{\"w\":{\"dtype\":\"f32\",\"shape\":[3],\"data\":[1,\"NaN\",\"-Infinity\"]}},"
                       "\"expected\":{\"dw\":{\"dtype\":\"f64\",\"shape\":[1,3],\"data\":[1,2,3]}}}";
    assert_int_equal(kv_fixture_parse("g.json", good, strlen(good), &fx), KV_OK);
    assert_string_equal(fx.kernel, "rmsnorm-bwd");
    assert_int_equal(fx.n_params, 2);
    assert_string_equal(fx.pval[1], "normal");
    assert_int_equal(fx.n_inputs, 1);
    assert_int_equal(fx.n_tensors, 2);
    assert_true(isnan(((float *)fx.t[0].data)[1]));
    assert_true(isinf(((float *)fx.t[0].data)[2]));
    assert_true(fx.has_seed && fx.seed == 3);
    kv_fixture_free(&fx);
    const struct { const char *text, *needle; } bad[] = {
        {"{", "not valid JSON"},
        {"[]", "a fixture is a JSON object"},
        {"{\"inputs\":{}}", "\"kernel\" is missing"},
        {"{\"kernel\":1,\"inputs\":{}}", "\"kernel\" is missing or not a string"},
        {"{\"kernel\":\"k\"}", "\"inputs\" is missing"},
        {"{\"kernel\":\"k\",\"inputs\":[]}", "\"inputs\" is not an object"},
        {"{\"kernel\":\"k\",\"params\":[],\"inputs\":{}}", "\"params\" is not an object"},
        {"{\"kernel\":\"k\",\"params\":{\"a\":true},\"inputs\":{}}", "params.a is not a number"},
        {"{\"kernel\":\"k\",\"seed\":-1,\"inputs\":{}}", "\"seed\" is not"},
        {"{\"kernel\":\"k\",\"inputs\":{\"x\":1}}", "inputs.x is not an object"},
        {"{\"kernel\":\"k\",\"inputs\":{\"x\":{\"shape\":[1],\"data\":[1]}}}", "inputs.x.dtype is missing"},
        {"{\"kernel\":\"k\",\"inputs\":{\"x\":{\"dtype\":\"f128\",\"shape\":[1],\"data\":[1]}}}", "inputs.x.dtype 'f128'"},
        {"{\"kernel\":\"k\",\"inputs\":{\"x\":{\"dtype\":\"f32\",\"data\":[1]}}}", "inputs.x.shape is missing"},
        {"{\"kernel\":\"k\",\"inputs\":{\"x\":{\"dtype\":\"f32\",\"shape\":[-1],\"data\":[1]}}}", "shape[0] is not a positive"},
        {"{\"kernel\":\"k\",\"inputs\":{\"x\":{\"dtype\":\"f32\",\"shape\":[2.5],\"data\":[1]}}}", "shape[0] is not a positive"},
        {"{\"kernel\":\"k\",\"inputs\":{\"x\":{\"dtype\":\"f32\",\"shape\":[3000000000,3000000000,3000000000],\"data\":[]}}}", "product overflows"},
        {"{\"kernel\":\"k\",\"inputs\":{\"x\":{\"dtype\":\"f32\",\"shape\":[2]}}}", "inputs.x.data is missing"},
        {"{\"kernel\":\"k\",\"inputs\":{\"x\":{\"dtype\":\"f32\",\"shape\":[2],\"data\":[1]}}}", "has 1 values, its shape needs 2"},
        {"{\"kernel\":\"k\",\"inputs\":{\"x\":{\"dtype\":\"f32\",\"shape\":[1],\"data\":[\"one\"]}}}", "data[0] is not a number"},
        {"{\"kernel\":\"k\",\"inputs\":{\"x\":{\"dtype\":\"u8\",\"shape\":[1],\"data\":[256]}}}", "is not a u8"},
        {"{\"kernel\":\"k\",\"inputs\":{\"x\":{\"dtype\":\"i32\",\"shape\":[1],\"data\":[0.5]}}}", "is not a i32"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(kv_fixture_parse("b.json", bad[i].text, strlen(bad[i].text), &fx), KV_EDATA);
        if (!strstr(kv_error_msg(), bad[i].needle) || !strstr(kv_error_msg(), "b.json")) {
            fprintf(stderr, "case %zu: message '%s' lacks '%s'\n", i, kv_error_msg(), bad[i].needle);
            fail();
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(npy_forms), cmocka_unit_test(npy_roundtrip), cmocka_unit_test(npy_bad),
        cmocka_unit_test(npz_members), cmocka_unit_test(npz_corrupt), cmocka_unit_test(json_fixture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
