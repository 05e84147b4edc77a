/* kv-spvkhr's rewrite (spirv_khr.h): the gdn bf16-coopmat modules as glslc
 * compiles them (NV float16 matrices) must come out as KHR bfloat16 matrices
 * whose every multiply-add takes an A, a B and an accumulator, with no NV
 * instruction left; modules it cannot rewrite safely are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "spirv/spirv_khr.h"

enum { OP_CAPABILITY = 17, OP_EXTENSION = 10, OP_TYPE_INT = 21, OP_TYPE_FLOAT = 22, OP_CONSTANT = 43,
       OP_UNDEF = 1, OP_TYPE_CM_NV = 5358, OP_MULADD_NV = 5361, OP_TYPE_CM = 4456, OP_LOAD_CM = 4457,
       OP_MULADD_CM = 4459, OP_LOAD = 61, CAP_FLOAT16 = 9 };

static uint32_t *slurp_spv(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    assert_true(size > 20 && size % 4 == 0);
    uint32_t *w = malloc((size_t)size);
    assert_non_null(w);
    assert_int_equal(fread(w, 4, (size_t)size / 4, f), (size_t)size / 4);
    fclose(f);
    *n = (size_t)size / 4;
    return w;
}

struct facts {
    int cap_coopmat, cap_bf16, cap_bf16_cm, cap_float16, ext_khr, ext_bf16, ext_nv, nv_ops;
    int bf16_types, f16_types, muladds, loads;
};

/* Check the rewritten module m: every multiply-add's operands have the uses
 * A, B, accumulator; every load's layout is the constant 0 or 1. */
static struct facts inspect(const uint32_t *m, size_t n)
{
    struct facts f = {0};
    uint32_t bound = m[3];
    uint32_t *type = calloc(bound, 4), *use = calloc(bound, 4), *cval = calloc(bound, 4);
    uint8_t *is_const = calloc(bound, 1);
    assert_true(type && use && cval && is_const);
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 5; i < n; i += m[i] >> 16) {
            uint32_t op = m[i] & 0xffff, len = m[i] >> 16;
            assert_true(len > 0 && i + len <= n);
            const uint32_t *in = m + i;
            if (pass == 0) {
                if (op == OP_CONSTANT) is_const[in[2]] = 1, cval[in[2]] = in[3];
                if (op == OP_LOAD_CM || op == OP_MULADD_CM || op == OP_UNDEF || op == OP_LOAD) type[in[2]] = in[1];
                if (op == OP_TYPE_CM) {
                    assert_int_equal(len, 7);
                    assert_true(is_const[in[6]] && cval[in[6]] <= 2);
                    use[in[1]] = cval[in[6]] + 1; /* 0: not a matrix */
                }
                if (op >= OP_TYPE_CM_NV && op <= OP_TYPE_CM_NV + 4) f.nv_ops++;
                if (op == OP_CAPABILITY) {
                    f.cap_coopmat += in[1] == 6022, f.cap_bf16 += in[1] == 5116, f.cap_bf16_cm += in[1] == 5118;
                    f.cap_float16 += in[1] == CAP_FLOAT16;
                    f.nv_ops += in[1] == 5357;
                }
                if (op == OP_EXTENSION) {
                    const char *s = (const char *)(in + 1);
                    f.ext_khr += strcmp(s, "SPV_KHR_cooperative_matrix") == 0;
                    f.ext_bf16 += strcmp(s, "SPV_KHR_bfloat16") == 0;
                    f.ext_nv += strcmp(s, "SPV_NV_cooperative_matrix") == 0;
                }
                if (op == OP_TYPE_FLOAT && in[2] == 16) {
                    if (len == 4 && in[3] == 0) f.bf16_types++;
                    else if (len == 3) f.f16_types++;
                }
                continue;
            }
            if (op == OP_MULADD_CM) {
                f.muladds++;
                assert_int_equal(use[in[1]], 3);
                assert_int_equal(use[type[in[3]]], 1);
                assert_int_equal(use[type[in[4]]], 2);
                assert_int_equal(use[type[in[5]]], 3);
            }
            if (op == OP_LOAD_CM) {
                f.loads++;
                assert_true(use[in[1]] != 0);
                assert_true(is_const[in[4]] && cval[in[4]] <= 1);
            }
        }
    /* Every matrix type's use operand is one of the three constants. */
    for (uint32_t id = 0; id < bound; id++) assert_true(use[id] <= 3);
    free(type), free(use), free(cval), free(is_const);
    return f;
}

static void gdn_modules_become_khr_bf16(void **s)
{
    (void)s;
    const char *names[] = {KV_SPIRV_DIR "/gdn_wu_u.cm.spv", KV_SPIRV_DIR "/gdn_wu_w.cm.spv",
                           KV_SPIRV_DIR "/gdn_wy_bwd_wy.cm.spv", KV_SPIRV_DIR "/gdn_wy_bwd_wy.cmal.spv"};
    for (int k = 0; k < 4; k++) {
        size_t n, n_out;
        uint32_t *in = slurp_spv(names[k], &n), *out;
        char err[256];
        for (int bf16 = 0; bf16 < 2; bf16++) {
            assert_int_equal(kv_spirv_nv_to_khr(in, n, bf16, &out, &n_out, err, sizeof err), 0);
            struct facts f = inspect(out, n_out);
            assert_int_equal(f.nv_ops, 0);
            assert_int_equal(f.ext_nv, 0);
            assert_int_equal(f.cap_coopmat, 1);
            assert_int_equal(f.ext_khr, 1);
            assert_true(f.muladds > 0 && f.loads > 0);
            if (bf16) {
                assert_int_equal(f.cap_bf16, 1), assert_int_equal(f.cap_bf16_cm, 1), assert_int_equal(f.ext_bf16, 1);
                assert_int_equal(f.bf16_types, 1), assert_int_equal(f.f16_types, 0);
                assert_int_equal(f.cap_float16, 0);
            } else {
                assert_int_equal(f.cap_bf16, 0), assert_int_equal(f.ext_bf16, 0), assert_int_equal(f.bf16_types, 0);
                assert_int_equal(f.f16_types, 1);
            }
            free(out);
        }
        free(in);
    }
}

/* A hand-made NV module: uint, the constants 16 and 3, f16 and f32 matrix
 * types and a multiply-add of undefined values, arranged by `kind`. */
static int rewrite_small(int kind, char *err)
{
    uint32_t w[64] = {0x07230203u, 0x00010500u, 0, 20, 0}, n = 5, *out = NULL;
#define I(len, op) w[n++] = ((uint32_t)(len) << 16) | (op)
    I(2, OP_CAPABILITY), w[n++] = 5357;
    I(4, OP_TYPE_INT), w[n++] = 1, w[n++] = 32, w[n++] = 0;
    I(4, OP_CONSTANT), w[n++] = 1, w[n++] = 2, w[n++] = 16;
    I(4, OP_CONSTANT), w[n++] = 1, w[n++] = 3, w[n++] = 3;
    I(3, OP_TYPE_FLOAT), w[n++] = 4, w[n++] = 16;
    I(3, OP_TYPE_FLOAT), w[n++] = 8, w[n++] = 32;
    I(6, OP_TYPE_CM_NV), w[n++] = 5, w[n++] = 4, w[n++] = 3, w[n++] = 2, w[n++] = 2;
    I(6, OP_TYPE_CM_NV), w[n++] = 9, w[n++] = 8, w[n++] = 3, w[n++] = 2, w[n++] = 2;
    I(3, OP_UNDEF), w[n++] = 5, w[n++] = 6;
    I(3, OP_UNDEF), w[n++] = 9, w[n++] = 10;
    if (kind == 0) /* the f16 type is an accumulator and an operand */
        I(6, OP_MULADD_NV), w[n++] = 5, w[n++] = 11, w[n++] = 6, w[n++] = 6, w[n++] = 6;
    else /* A and B of one type; B not loaded */
        I(6, OP_MULADD_NV), w[n++] = 9, w[n++] = 11, w[n++] = 6, w[n++] = 6, w[n++] = 10;
    if (kind == 3) w[n - 6] = (9u << 16) | OP_MULADD_NV; /* runs past the end */
    if (kind == 4) n -= 3, w[n - 3] = (3u << 16) | OP_MULADD_NV; /* too short for its operands */
    if (kind == 5) w[n - 5] = 99; /* a result type beyond the bound */
#undef I
    size_t n_out = 0;
    int r = kv_spirv_nv_to_khr(w, n, 1, &out, &n_out, err, 256);
    free(out);
    return r;
}

/* A B operand loaded from a function variable %13, beside a constant whose
 * value is 13: the literal is no use of %13, and the module is rewritten
 * (the B variable retyped to the B twin, the constant kept). */
static void literals_are_not_ids(void **s)
{
    (void)s;
    uint32_t w[80] = {0x07230203u, 0x00010500u, 0, 20, 0}, n = 5, *out = NULL;
#define I(len, op) w[n++] = ((uint32_t)(len) << 16) | (op)
    I(2, OP_CAPABILITY), w[n++] = 5357;
    I(4, OP_TYPE_INT), w[n++] = 1, w[n++] = 32, w[n++] = 0;
    I(4, OP_CONSTANT), w[n++] = 1, w[n++] = 2, w[n++] = 16;
    I(4, OP_CONSTANT), w[n++] = 1, w[n++] = 3, w[n++] = 3;
    I(4, OP_CONSTANT), w[n++] = 1, w[n++] = 15, w[n++] = 13; /* the value 13 */
    I(3, OP_TYPE_FLOAT), w[n++] = 4, w[n++] = 16;
    I(3, OP_TYPE_FLOAT), w[n++] = 8, w[n++] = 32;
    I(6, OP_TYPE_CM_NV), w[n++] = 5, w[n++] = 4, w[n++] = 3, w[n++] = 2, w[n++] = 2;
    I(6, OP_TYPE_CM_NV), w[n++] = 9, w[n++] = 8, w[n++] = 3, w[n++] = 2, w[n++] = 2;
    I(4, 32), w[n++] = 12, w[n++] = 7, w[n++] = 5;  /* OpTypePointer Function %5 */
    I(4, 59), w[n++] = 12, w[n++] = 13, w[n++] = 7; /* OpVariable %13 */
    I(3, OP_UNDEF), w[n++] = 5, w[n++] = 6;
    I(3, OP_UNDEF), w[n++] = 9, w[n++] = 10;
    I(4, OP_LOAD), w[n++] = 5, w[n++] = 14, w[n++] = 13;
    I(6, OP_MULADD_NV), w[n++] = 9, w[n++] = 11, w[n++] = 6, w[n++] = 14, w[n++] = 10;
#undef I
    size_t n_out = 0;
    char err[256] = "";
    assert_int_equal(kv_spirv_nv_to_khr(w, n, 1, &out, &n_out, err, sizeof err), 0);
    int kept = 0;
    for (size_t i = 5; i < n_out; i += out[i] >> 16)
        kept += (out[i] & 0xffff) == OP_CONSTANT && out[i + 2] == 15 && out[i + 3] == 13;
    assert_int_equal(kept, 1);
    assert_int_equal(inspect(out, n_out).muladds, 1);
    free(out);
}

static void unsafe_modules_are_refused(void **s)
{
    (void)s;
    char err[256];
    assert_int_equal(rewrite_small(0, err), -1);
    assert_non_null(strstr(err, "both an accumulator and an operand"));
    assert_int_equal(rewrite_small(1, err), -1);
    assert_non_null(strstr(err, "is not loaded"));
    assert_int_equal(rewrite_small(3, err), -1);
    assert_non_null(strstr(err, "truncated instruction"));
    assert_int_equal(rewrite_small(4, err), -1);
    assert_non_null(strstr(err, "truncated instruction"));
    assert_int_equal(rewrite_small(5, err), -1);
    assert_non_null(strstr(err, "id 99 beyond the bound"));
    uint32_t junk[8] = {0x12345678u, 0, 0, 4, 0, 0, 0, 0}, *out;
    size_t n_out;
    assert_int_equal(kv_spirv_nv_to_khr(junk, 8, 1, &out, &n_out, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a SPIR-V module"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gdn_modules_become_khr_bf16),
        cmocka_unit_test(literals_are_not_ids),
        cmocka_unit_test(unsafe_modules_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
