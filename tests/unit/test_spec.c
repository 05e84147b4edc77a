/* The spec engine: the math language's parser, the evaluator (each function
 * and reduction against values computed here, rounding points, IEEE cases)
 * and the bound rules (each against its hand-derived bound). Specs are made
 * from text; no device is needed. */
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
#include "core/judge.h"
#include "core/rng.h"
#include "specs/spec.h"
#include "specs/sx.h"
#include "spec_make.h"

static const float A[4] = {0.5f, -1.25f, 3.0f, 0.0078125f}, B[4] = {2.0f, 0.75f, -0.5f, 1.5f},
                   C[4] = {1.0f, -0.9375f, -1.5f, 4.0f};
static const int32_t LAB[4] = {2, 0, 3, 1};

/* A spec of parameter n (default dflt), f32 inputs of shape n (names, each
 * a letter: "ab" makes a and b), output o[i] = math and the prepare list
 * (JSON strings, without the brackets); NULL where it does not parse. */
static struct kv_spec *prep_spec(int dflt, const char *names, const char *prepare, const char *math)
{
    char text[4096], ins[512] = "";
    for (size_t k = 0, o = 0; names[k]; k++)
        o += (size_t)snprintf(ins + o, sizeof ins - o,
                              "{\"name\": \"%c\", \"role\": \"input\", \"dtype\": \"f32\", \"shape\": \"n\"}, ",
                              names[k]);
    snprintf(text, sizeof text,
             "{\"kernel\": \"p\", \"params\": [{\"name\": \"n\", \"type\": \"int\", \"default\": %d}],"
             " \"tensors\": [%s{\"name\": \"o\", \"role\": \"output\", \"dtype\": \"f32\", \"shape\": \"n\"}],"
             " \"prepare\": [%s], \"math\": [\"o[i] = %s\"], \"stages\": [{\"name\": \"s\", \"shader\": \"none.comp\"}]}",
             dflt, ins, prepare, math);
    struct kv_spec *s = NULL;
    return kv_spec_parse("p.kernel.json", text, strlen(text), 1, &s) == KV_OK ? s : NULL;
}


static void test_parse(void **st)
{
    (void)st;
    struct kv_spec *s = make(OUT("o", "n"), "\"o[i] = a[i] * 2 + b[i] * (3 - c[i]) / 4\"", KV_OK);
    const struct kv_sx *e = s->stmt[0].rhs;
    assert_int_equal(e->op, KV_SX_ADD); /* precedence: * and / bind tighter than + and - */
    assert_int_equal(e->kid[0]->op, KV_SX_MUL);
    assert_int_equal(e->kid[1]->op, KV_SX_DIV);
    assert_int_equal(e->kid[1]->kid[0]->op, KV_SX_MUL);
    assert_int_equal(e->kid[1]->kid[0]->kid[1]->op, KV_SX_SUB);
    struct kv_case c;
    run(s, &c, 4, A, B, C, LAB, 0);
    for (int i = 0; i < 4; i++) near(c.y[4][i], (double)A[i] * 2 + (double)B[i] * (3 - (double)C[i]) / 4, 1e-15);
    kv_case_free(&c);
    kv_spec_free(s);
    /* errors name the statement and the column */
    make(OUT("o", "n"), "\"o[i] = a[i] +\"", KV_EDATA);
    assert_non_null(strstr(kv_error_msg(), "t.kernel.json: math[0] column 14: expression missing"));
    make(OUT("o", "n"), "\"o[i] = a[i, i]\"", KV_EDATA);
    assert_non_null(strstr(kv_error_msg(), "math[0] column 8: 'a' takes 1 index, not 2"));
    make(OUT("o", "n"), "\"o[i] = sum(i in 0..n, a[i])\"", KV_EDATA);
    assert_non_null(strstr(kv_error_msg(), "column 12: index 'i' is already in use"));
    make(OUT("o", "n"), "\"o[i] = round(f64, a[i])\"", KV_EDATA);
    assert_non_null(strstr(kv_error_msg(), "column 14: round() takes bf16, f16 or f32 first"));
    make(OUT("o", "n"), "\"o[i] = normal()\"", KV_EDATA);
    assert_non_null(strstr(kv_error_msg(), "a random draw is for input preparation"));
}

/* Each function's value, and its rounding budget (ev_ops.c) with an exact operand. */
static void test_functions(void **st)
{
    (void)st;
    struct kv_spec *s = make(OUT("e", "n") "," OUT("l", "n") "," OUT("q", "n") "," OUT("r", "n") "," OUT("t", "n") ","
                             OUT("g", "n") "," OUT("f", "n") "," OUT("m", "n") "," OUT("z", "n"),
                             "\"e[i] = exp(a[i])\", \"l[i] = log(abs(c[i]))\", \"q[i] = sqrt(abs(a[i]))\","
                             "\"r[i] = rsqrt(abs(b[i]))\", \"t[i] = tanh(a[i])\", \"g[i] = sigmoid(b[i])\","
                             "\"f[i] = floor(a[i]) + erf(b[i])\", \"m[i] = min(a[i], b[i]) + max(a[i], c[i])\","
                             "\"z[i] = sin(a[i]) + cos(b[i])\"",
                             KV_OK);
    struct kv_case c;
    run(s, &c, 4, A, B, C, LAB, 0);
    for (int i = 0; i < 4; i++) {
        const double a = A[i], b = B[i], cc = C[i];
        near(c.y[4][i], exp(a), 0), near(c.fix[4][i], 2 * u * (3 + 2 * fabs(a)) * exp(a), 1e-15);
        near(c.y[5][i], log(fabs(cc)), 0);
        near(c.fix[5][i], fabs(cc) >= 0.5 && fabs(cc) <= 2 ? 0x1p-21 : 6 * u * fabs(log(fabs(cc))), 1e-15);
        near(c.y[6][i], sqrt(fabs(a)), 0), near(c.fix[6][i], 9 * u * sqrt(fabs(a)), 1e-15);
        near(c.y[7][i], 1 / sqrt(fabs(b)), 0), near(c.fix[7][i], 4 * u / sqrt(fabs(b)), 1e-15);
        near(c.y[8][i], tanh(a), 0), near(c.fix[8][i], 4 * u * (3 + 2 * fmin(fabs(a), 9)), 1e-15);
        const double sg = 1 / (1 + exp(-b));
        near(c.y[9][i], sg, 1e-16);
        near(c.y[10][i], floor(a) + erf(b), 1e-16);
        near(c.y[11][i], fmin(a, b) + fmax(a, cc), 0);
        near(c.y[12][i], sin(a) + cos(b), 1e-16);
        near(c.fix[12][i], 2 * 0x1p-11 + u * fabs(sin(a) + cos(b)), 1e-12);
        assert_true(c.lam[4][i] == 0); /* no reduction: nothing scales with lambda */
    }
    kv_case_free(&c);
    kv_spec_free(s);
}

/* Reductions: sum, max, min; a range that depends on the element (a prefix
 * sum); where and a one-hot test on integer labels. */
static void test_reductions(void **st)
{
    (void)st;
    struct kv_spec *s = make(OUT("p", "n") "," OUT("x", "n") "," OUT("h", "n,n"),
                             "\"p[i] = sum(j in 0..i+1, a[j] * b[j])\","
                             "\"x[i] = max(j in 0..n, a[j]) - min(j in 0..n, c[j]) + s\","
                             "\"s = sum(j in 0..n, c[j])\","
                             "\"h[r, k] = where(lab[r] == k, 1, 0) * a[r]\"",
                             KV_OK);
    struct kv_case c;
    run(s, &c, 4, A, B, C, LAB, 0);
    double pre = 0, absum = 0;
    for (int i = 0; i < 4; i++) {
        pre += (double)A[i] * B[i];
        absum += fabs((double)A[i] * B[i]);
        near(c.y[4][i], pre, 1e-15);
        /* the hand bound of an (i+1)-term dot product: lambda*sqrt(n)*u*S + u*S (one rounding per product) */
        near(c.lam[4][i], i ? sqrt(i + 1.0) * u * absum : 0, 1e-12);
        near(c.fix[4][i], u * absum, 1e-12);
        near(c.y[5][i], 3.0 - (-1.5) + (1.0 - 0.9375 - 1.5 + 4.0), 0);
        for (int k = 0; k < 4; k++) near(c.y[6][i * 4 + k], LAB[i] == k ? (double)A[i] : 0, 0);
    }
    kv_case_free(&c);
    kv_spec_free(s);
}

/* Nodes whose variables hold one value across a block's lanes (a[r], and
 * c[j] a[r] inside the sum, in blocks of 256 elements of rows of 600: two
 * blocks within row 0, then one across rows 0 and 1, then one within row
 * 1) are made once per block and kept for the next block only at the same
 * values of their variables: every element's value and magnitude are the
 * ones made here, in the spec's order. Made in blocks as the judge asks
 * for them (one context, kept between the calls), in an order that comes
 * back to a row after a block across two others: the same values. */
static void test_uniform_blocks(void **st)
{
    (void)st;
    enum { N = 600 };
    float a[N], b[N], cc[N];
    int32_t lab[N];
    for (int i = 0; i < N; i++)
        a[i] = (float)(i % 13) * 0.25f - 1.5f, b[i] = 1.0f / (float)(i + 1), cc[i] = (float)(i % 5) - 2.0f, lab[i] = i;
    struct kv_spec *s = make(OUT("h", "n, n"), "\"h[r, k] = a[r] * b[r] + sum(j in 0..3, c[j] * a[r]) + b[k]\"", KV_OK);
    struct kv_case c;
    run(s, &c, N, a, b, cc, lab, 0);
    for (int r = 0; r < N; r++) {
        double sum = 0, sumS = 0;
        for (int j = 0; j < 3; j++) sum += (double)cc[j] * a[r], sumS += fabs((double)cc[j]) * fabs((double)a[r]);
        for (int k = 0; k < N; k++) {
            const size_t i = (size_t)r * N + (size_t)k;
            near(c.y[4][i], ((double)a[r] * b[r] + sum) + b[k], 0);
            near(c.S[4][i], (fabs((double)a[r]) * fabs((double)b[r]) + sumS) + fabs((double)b[k]), 0);
        }
    }
    struct kv_case d;
    run_blocked(s, &d, N, a, b, cc, lab, 0, 4);
    const size_t at[] = {5 * N, 2 * N + 500, 5 * N + 256, 5 * N + 512, 2 * N + 256};
    for (size_t q = 0; q < sizeof at / sizeof at[0]; q++) {
        double y[256], S[256];
        const struct kv_oracle_block blk = {y, S, NULL, NULL, NULL, NULL, NULL};
        assert_int_equal(kv_spec_block(&d, 4, at[q], at[q] + 256, 0, &blk), KV_OK);
        for (size_t j = 0; j < 256; j++) near(y[j], c.y[4][at[q] + j], 0), near(S[j], c.S[4][at[q] + j], 0);
    }
    kv_case_free(&d);
    kv_case_free(&c);
    kv_spec_free(s);
}

/* Random draws in input preparation: each element's normal is its own
 * index's scalar draw (kv_rng_normal), though drawn a block of consecutive
 * elements at a time; into an input directly, and into a temp (held: a
 * statement with a draw is never recomputed where read) read in reverse. */
static void test_draws(void **st)
{
    (void)st;
    struct kv_spec *s = prep_spec(300, "ab", "\"a[i in n] = normal()\", \"z[i in n] = 0.5 * normal()\", \"b[i] = z[n - 1 - i]\"",
                                  "a[i] + b[i]");
    assert_non_null(s);
    struct kv_case c;
    new_case(s, &c, 7);
    assert_int_equal(s->k.inputs(&c), KV_OK);
    const float *a = c.t[0].data, *b = c.t[1].data;
    /* statement k's draw at node id d: stream 1000 + 64 k + d (eval.c) */
    for (int i = 0; i < 300; i++) {
        assert_true(a[i] == (float)kv_rng_normal(7, 1000, (uint64_t)i));
        assert_true(b[i] == (float)(0.5 * kv_rng_normal(7, 1000 + 64 + 1, (uint64_t)(299 - i))));
    }
    kv_case_free(&c);
    kv_spec_free(s);
}

/* A prepare statement's product of two inputs (BLAS makes it, contract.c):
 * its value alone is held (its errors are nobody's), rounded into the input. */
static void test_prepare_product(void **st)
{
    (void)st;
    const char *text =
        "{\"kernel\": \"p\", \"params\": [{\"name\": \"n\", \"type\": \"int\", \"default\": 5},"
        " {\"name\": \"k\", \"type\": \"int\", \"default\": 7}],"
        " \"tensors\": [{\"name\": \"a\", \"role\": \"input\", \"dtype\": \"f32\", \"shape\": \"n, k\"},"
        " {\"name\": \"b\", \"role\": \"input\", \"dtype\": \"f32\", \"shape\": \"k, n\"},"
        " {\"name\": \"p\", \"role\": \"input\", \"dtype\": \"f32\", \"shape\": \"n, n\"},"
        " {\"name\": \"o\", \"role\": \"output\", \"dtype\": \"f32\", \"shape\": \"n, n\"}],"
        " \"prepare\": [\"a[i in n, m in k] = normal()\", \"b[m in k, j in n] = normal()\","
        " \"p[i, j] = sum(m in 0..k, a[i, m] * b[m, j])\"],"
        " \"math\": [\"o[i, j] = 2 * p[i, j]\"], \"stages\": [{\"name\": \"s\", \"shader\": \"none.comp\"}]}";
    struct kv_spec *s = NULL;
    assert_int_equal(kv_spec_parse("p.kernel.json", text, strlen(text), 1, &s), KV_OK);
    struct kv_case c;
    new_case(s, &c, 3);
    assert_int_equal(s->k.inputs(&c), KV_OK);
    const float *a = c.t[0].data, *b = c.t[1].data, *p = c.t[2].data;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) {
            double d = 0;
            for (int m = 0; m < 7; m++) d += (double)a[i * 7 + m] * b[m * 5 + j];
            near(p[i * 5 + j], (float)d, 0x1p-23);
        }
    assert_int_equal(s->k.oracle(&c), KV_OK);
    for (int e = 0; e < 25; e++) near(c.y[3][e], 2.0 * p[e], 0);
    kv_case_free(&c);
    kv_spec_free(s);
}

/* A prepare statement is evaluated for its values alone: && and || whose
 * left operand decides every lane leave the right one out (and where()'s
 * branch not taken), unless its evaluation could fail: an index out of range
 * there still stops the preparation. */
static void test_prepare_values(void **st)
{
    (void)st;
    char prepare[512];
    for (int bad = 0; bad < 2; bad++) {
        snprintf(prepare, sizeof prepare,
                 "\"a[i in n] = where(n == 1 && %s, 7, 3)\", \"b[i in n] = where(n > 1 || uniform() < 2, 5, 9)\"",
                 bad ? "b[floor(uniform() * 2 * n)] > 0" : "uniform() < 2");
        struct kv_spec *s = prep_spec(300, "ab", prepare, "a[i] + b[i]");
        assert_non_null(s);
        struct kv_case c;
        new_case(s, &c, 5);
        if (bad) {
            assert_int_equal(s->k.inputs(&c), KV_EDATA);
            assert_non_null(strstr(kv_error_msg(), "outside [0, 300)"));
        } else {
            assert_int_equal(s->k.inputs(&c), KV_OK);
            for (int i = 0; i < 300; i++)
                assert_true(((float *)c.t[0].data)[i] == 3 && ((float *)c.t[1].data)[i] == 5);
        }
        kv_case_free(&c);
        kv_spec_free(s);
    }
}

/* Every operation evaluated for values alone gives the value that every
 * part's evaluation gives (KVERIFY_TEST_FULL_PREPARE=1): the inputs the
 * same, bit for bit. */
static void test_prepare_ops(void **st)
{
    (void)st;
    struct kv_spec *s = prep_spec(
        777, "abde",
        "\"z[i in n] = 3 * normal()\", \"u[i in n] = uniform()\","
        " \"a[i] = where(!(u[i] < 0.5) || z[i] > 2, 7 % 3 + pow(u[i] + 1, 2.5), min(z[i], max(-1, -z[i])))\","
        " \"b[i] = floor(u[i] * 10) + sigmoid(z[i]) - tanh(z[i]) * exp(-abs(z[i])) + sqrt(u[i]) / rsqrt(u[i] + 1)"
        " + log(u[i] + 1) + erf(z[i]) + sin(z[i]) * cos(z[i]) + round(bf16, z[i] / 7) + (z[i] >= 1 && u[i] != 0.25)\","
        " \"d[i] = sum(j in 0..n, z[j] * u[j]) - max(j in 0..n, z[j]) + min(j in 0..i + 1, u[j] - z[i])\","
        /* short ranges: lanes across the outer elements (ev_reduce.c's reduce_outer) */
        " \"e[i] = sum(j in 0..9, z[(i + j) % n] * u[i]) + max(j in 0..5, z[(i + 3 * j) % n])"
        " - min(j in 0..4, u[(i + j) % n] - z[i])\"",
        "a[i] + b[i] + d[i] + e[i]");
    assert_non_null(s);
    struct kv_case c[2];
    for (int full = 0; full < 2; full++) {
        if (full) setenv("KVERIFY_TEST_FULL_PREPARE", "1", 1);
        new_case(s, &c[full], 9);
        assert_int_equal(s->k.inputs(&c[full]), KV_OK);
        unsetenv("KVERIFY_TEST_FULL_PREPARE");
    }
    for (int t = 0; t < 4; t++) assert_memory_equal(c[0].t[t].data, c[1].t[t].data, 777 * sizeof(float));
    for (int full = 0; full < 2; full++) kv_case_free(&c[full]);
    kv_spec_free(s);
}

/* round(): the spec oracle rounds, the exact one does not; the bound gains
 * one ulp of the type where the operand carries an error (a flip). */
static void test_rounding(void **st)
{
    (void)st;
    struct kv_spec *s = make(OUT("o", "n"), "\"o[i] = round(bf16, a[i] * c[i] / 3) + round(bf16, b[i])\"", KV_OK);
    assert_true(s->k.has_exact);
    struct kv_case c;
    run(s, &c, 4, A, B, C, LAB, 0);
    for (int i = 0; i < 4; i++) {
        const double q = (double)A[i] * C[i] / 3, want = kv_bf16_to_f32(kv_f32_to_bf16((float)q)) + B[i];
        near(c.y[4][i], want, 0);
        const double pq = u * fabs((double)A[i] * C[i]), dq = 5 * u * fabs(q) + pq / 3;
        near(c.fix[4][i], dq + kv_ulp(KV_BF16, q) + u * fabs(want), 1e-12);
    }
    kv_case_free(&c);
    run(s, &c, 4, A, B, C, LAB, 1);
    for (int i = 0; i < 4; i++) near(c.y[4][i], (double)A[i] * C[i] / 3 + B[i], 1e-16);
    kv_case_free(&c);
    kv_spec_free(s);
}

/* Non-finite values follow IEEE arithmetic; a NaN term makes a max NaN. */
static void test_ieee(void **st)
{
    (void)st;
    struct kv_spec *s = make(OUT("d", "n") "," OUT("m", "n") "," OUT("q", "n"),
                             "\"d[i] = a[i] / b[i] - c[i] / c[i]\", \"m[i] = max(j in 0..n, a[j]) + 0 * b[i]\","
                             "\"q[i] = sqrt(c[i] - c[i])\"",
                             KV_OK);
    const float a[4] = {1, -1, 0, NAN}, b[4] = {0, 0, 0, 1}, cc[4] = {INFINITY, 1, 1, 1};
    struct kv_case c;
    run(s, &c, 4, a, b, cc, LAB, 0);
    assert_true(isnan(c.y[4][0]));                         /* Inf - Inf/Inf... 1/0 - NaN */
    assert_true(isinf(c.y[4][1]) && c.y[4][1] < 0);        /* -1/0 - 1 */
    assert_true(isnan(c.y[4][2]));                         /* 0/0 */
    assert_true(isnan(c.y[4][3]));                         /* NaN */
    for (int i = 0; i < 4; i++) assert_true(isnan(c.y[5][i]));
    assert_false(isnan(c.fix[4][1]));                      /* an error of 0 times Inf stays 0 */
    /* sqrt's derivative at an exact 0 is Inf: times the error 0, still 0 (lane 0: Inf - Inf) */
    for (int i = 1; i < 4; i++)
        assert_true(c.y[6][i] == 0 && c.fix[6][i] == 0 && c.lam[6][i] == 0);
    kv_case_free(&c);
    kv_spec_free(s);
}

/* Comparisons that the operands' errors could flip carry the distance
 * between where()'s branches; an exact one carries none. Where every lane
 * takes one branch and one lane's condition may flip, the other branch is
 * still evaluated: its distance, made for this case, counts. */
static void test_flip(void **st)
{
    (void)st;
    struct kv_spec *s = make(OUT("o", "n"), "\"o[i] = where(a[i] * b[i] > c[i], 10 + a[i], 3)\"", KV_OK);
    const float a[2][4] = {{0.5f, 3, 1, 1}, {0.25f, 0.25f, 0.25f, 0.25f}}, b[2][4] = {{2, 1, 1, 1}, {4, 1, 1, 1}};
    const float cc[2][4] = {{1, 1, 0.5f, 1}, {1, 1, 1, 1}};
    for (int k = 0; k < 2; k++) {
        struct kv_case c;
        run(s, &c, 4, a[k], b[k], cc[k], LAB, 0);
        /* a*b = 1 = c: the product's rounding error (u) could flip it, by 10 + a - 3 */
        assert_true(c.y[4][0] == 3 && fabs(c.fix[4][0] - (7 + a[k][0])) < 1e-5);
        if (k == 0) {
            assert_true(c.fix[4][1] < 1e-5 && c.y[4][1] == 13); /* 3 > 1 by far: 10 + 3 rounded alone */
            assert_true(c.fix[4][3] >= 7);
        } else { /* every lane takes 3 */
            for (int i = 1; i < 4; i++) assert_true(c.fix[4][i] == 0 && c.y[4][i] == 3);
        }
        kv_case_free(&c);
    }
    kv_spec_free(s);
}

/* The error rules, each operand's every part counted: a unary result
 * below f32's smallest normal may be flushed (its magnitude in fix); &&
 * flips where either operand may (the right one here: b*c = 1 within its
 * rounding); min takes the chosen operand's value and magnitude sum S and
 * the larger of the two errors; ! negates. */
static void test_rules(void **st)
{
    (void)st;
    struct kv_spec *s = make(OUT("e", "n") "," OUT("g", "n") "," OUT("m", "n") "," OUT("z", "n"),
                             "\"e[i] = exp(a[i] - 100)\", \"g[i] = where(a[i] > 0 && b[i] * c[i] > 1, 10, 3)\","
                             "\"m[i] = min(c[i], a[i] + b[i])\", \"z[i] = !(a[i] > 0)\"",
                             KV_OK);
    const float a[4] = {0.5f, 1, -2, 1}, b[4] = {2, 2, 2, -0.75f}, cc[4] = {0.5f, 0.25f, 0.5f, 4};
    struct kv_case c;
    run(s, &c, 4, a, b, cc, LAB, 0);
    for (int i = 0; i < 4; i++) {
        const double x = (double)a[i] - 100, r = exp(x);
        assert_true(r < 0x1p-126);
        near(c.fix[4][i], r * (u * fabs(x)) + (2 * u * (3 + 2 * fabs(x)) * r + r), 1e-12);
        const int flips = (double)b[i] * cc[i] == 1;
        assert_true(c.y[5][i] == 3 && c.fix[5][i] == (flips ? 7 : 0));
        const double sum = (double)a[i] + b[i];
        near(c.y[6][i], fmin(cc[i], sum), 0);
        near(c.S[6][i], cc[i] < sum ? fabs(cc[i]) : fabs(a[i]) + fabs(b[i]), 0);
        near(c.fix[6][i], u * fabs(sum), 1e-12);
        assert_true(c.y[7][i] == (a[i] > 0 ? 0 : 1) && c.fix[7][i] == 0); /* ! of an exact comparison */
    }
    kv_case_free(&c);
    kv_spec_free(s);
}

/* + - * / carry the larger peak of their operands (pk: an f32 overflow on
 * the way flags the output, which may then be Inf or NaN), from the right
 * operand as from the left, into an output whose own value is small. */
static void test_peaks(void **st)
{
    (void)st;
    struct kv_spec *s = make(OUT("l", "n") "," OUT("r", "n") "," OUT("q", "n") "," OUT("d", "n") "," OUT("s", "n"),
                             "\"l[i] = b[i] * 1e30 * 1e30 * 0 + a[i]\", \"r[i] = a[i] - b[i] * 1e30 * 1e30 * 0\","
                             "\"q[i] = a[i] * (b[i] * 1e30 * 1e30 * 0 + 1)\", \"d[i] = a[i] / (b[i] * 1e30 * 1e30 * 0 + 1)\","
                             "\"s[i] = a[i] + b[i] * 1e30\"",
                             KV_OK);
    struct kv_case c;
    run(s, &c, 4, A, B, C, LAB, 0);
    for (int i = 0; i < 4; i++)
        for (int t = 4; t < 9; t++) /* s (8): 1e30 |b|, below f32's largest */
            assert_true(c.ovf[t][i] == (t < 8) && (t == 8 || fabs(c.y[t][i]) <= 3));
    kv_case_free(&c);
    kv_spec_free(s);
}

/* A where() branch no lane takes is left out only where its evaluation
 * cannot fail: an index out of range in it still stops the oracle (the
 * flip's case: test_flip). */
static void test_where_lazy(void **st)
{
    (void)st;
    struct kv_case c;
    struct kv_spec *s = make(OUT("o", "n"), "\"o[i] = where(a[i] > 1e30, a[lab[i]], a[i])\"", KV_OK);
    const int32_t bad[4] = {0, 1, 4, 2};
    new_case(s, &c, 1);
    memcpy(c.t[3].data, bad, sizeof bad);
    assert_int_equal(s->k.oracle(&c), KV_EDATA);
    assert_non_null(strstr(kv_error_msg(), "index 1 of a is 4, outside [0, 4) (at i=2)"));
    kv_case_free(&c);
    kv_spec_free(s);
}

/* Stage isolation: a later stage reads the earlier output rounded to its
 * dtype, and its chained allowance carries that output's allowed error. */
static void test_stages(void **st)
{
    (void)st;
    const char *text =
        "{\"kernel\": \"t2\", \"params\": [{\"name\": \"n\", \"type\": \"int\", \"default\": 3}],"
        " \"tensors\": [{\"name\": \"a\", \"role\": \"input\", \"dtype\": \"f32\", \"shape\": \"n\", \"dist\": \"normal\"},"
        " {\"name\": \"s\", \"role\": \"output\", \"dtype\": \"bf16\", \"shape\": \"1\", \"stage\": \"one\"},"
        " {\"name\": \"o\", \"role\": \"output\", \"dtype\": \"f32\", \"shape\": \"n\", \"stage\": \"two\"},"
        " {\"name\": \"w\", \"role\": \"output\", \"dtype\": \"f32\", \"shape\": \"n\", \"stage\": \"two\"}],"
        " \"math\": [\"s[z] = sum(j in 0..n, a[j]) + 0 * z\", \"o[i] = a[i] * s[0]\", \"w[i] = where(1.0078125 < s[0], 5, 3)\"],"
        " \"stages\": [{\"name\": \"one\", \"shader\": \"x.comp\"}, {\"name\": \"two\", \"shader\": \"y.comp\"}]}";
    struct kv_spec *s = NULL;
    assert_int_equal(kv_spec_parse("t2", text, strlen(text), 1, &s), KV_OK);
    /* default interfaces: the tensors each stage reads and writes, in order */
    assert_int_equal(s->stages[0].n_bindings, 2);
    assert_int_equal(s->stages[1].n_bindings, 4);
    struct kv_case c;
    new_case(s, &c, 1);
    const float a[3] = {1.0f, 0.00390625f, 0.0009765625f};
    memcpy(c.t[0].data, a, sizeof a);
    assert_int_equal(s->k.oracle(&c), KV_OK);
    const double sum = 1.0 + 0.00390625 + 0.0009765625, sb = kv_bf16_to_f32(kv_f32_to_bf16((float)sum));
    near(c.y[1][0], sum, 0);
    for (int i = 0; i < 3; i++) {
        near(c.y[2][i], a[i] * sb, 0);                         /* isolated: the rounded s */
        const double allowed = 8 * c.lam[1][0] + c.fix[1][0] + 0.5 * kv_ulp(KV_BF16, sum);
        near(c.slack_chain[2][i], a[i] * allowed, 1e-12);      /* chained: s's allowance, propagated */
        near(c.fix[2][i], u * fabs(a[i] * sb), 1e-12);
        /* a comparison counts the right operand's chained allowance too: s is 1.0078125
         * rounded (1 + 2^-7), equal to the exact left operand, so it may flip, by 5 - 3 */
        assert_true(sb == 1.0078125 && c.y[3][i] == 3 && c.fix[3][i] == 2);
    }
    kv_case_free(&c);
    kv_spec_free(s);
}

/* An index that data sends out of its range stops the oracle, naming the element. */
static void test_index_error(void **st)
{
    (void)st;
    struct kv_spec *s = make(OUT("o", "n"), "\"o[i] = a[lab[i]]\"", KV_OK);
    struct kv_case c;
    const int32_t bad[4] = {0, 1, 4, 2};
    run(s, &c, 4, A, B, C, LAB, 0);
    for (int i = 0; i < 4; i++) near(c.y[4][i], A[LAB[i]], 0);
    kv_case_free(&c);
    new_case(s, &c, 1);
    memcpy(c.t[3].data, bad, sizeof bad);
    assert_int_equal(s->k.oracle(&c), KV_EDATA);
    assert_non_null(strstr(kv_error_msg(), "math[0] column 8: index 1 of a is 4, outside [0, 4) (at i=2)"));
    kv_case_free(&c);
    kv_spec_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),     cmocka_unit_test(test_functions),   cmocka_unit_test(test_reductions),
        cmocka_unit_test(test_uniform_blocks), cmocka_unit_test(test_draws),
        cmocka_unit_test(test_rounding),  cmocka_unit_test(test_ieee),        cmocka_unit_test(test_flip),
        cmocka_unit_test(test_rules), cmocka_unit_test(test_peaks),
        cmocka_unit_test(test_stages),    cmocka_unit_test(test_index_error), cmocka_unit_test(test_where_lazy),
        cmocka_unit_test(test_prepare_product),
        cmocka_unit_test(test_prepare_values),
        cmocka_unit_test(test_prepare_ops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
