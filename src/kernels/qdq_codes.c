#include "kernels/qdq_codes.h"

#include <float.h>
#include <math.h>

#include "core/clones.h"
#include "core/compare.h"


static float flush(float x) { return fabsf(x) < FLT_MIN ? 0.0f : x; }
static int is_pow2(double x) { int e; return x > 0 && frexp(x, &e) == 0.5; }

struct kv_qdq_enc kv_qdq_encode(const float *w, int64_t gs, double N, int ftz)
{
    struct kv_qdq_enc e = {0, 0, 0, INFINITY, -INFINITY, 1.0f, 0, 0};
    int nan = 0, finite = 0;
    for (int64_t j = 0; j < gs; j++) {
        float v = ftz ? flush(w[j]) : w[j];
        if (isnan(v)) nan = 1;
        if (!isfinite(v)) continue;
        finite = 1;
        if (v < e.lo) e.lo = v;
        if (v > e.hi) e.hi = v;
    }
    float r = (float)((double)e.hi - (double)e.lo); /* correctly rounded (53 >= 2*24+2) */
    e.poison = nan || !finite || isinf(r);
    if (e.poison) return e;
    if (ftz) r = flush(r);
    e.x = (double)r / N;
    float s = (float)e.x;
    e.one = !(s >= FLT_MIN);
    /* floats within 2.5 ulp (2^-149 each, on both sides) of x on both sides
     * of 2^-126: by 1 (a power of two) the division is exact */
    e.flip = N != 1 && fabs(e.x - QDQ_FMIN) <= 3 * 0x1p-149;
    e.s = e.one ? 1.0f : s;
    e.win = (N == 1 || e.one ? 0 : 6 * QDQ_U) + (is_pow2(e.s) ? 0 : 5 * QDQ_U);
    return e;
}

struct kv_qdq_grp kv_qdq_group_of(const struct kv_qdq_enc *e, const struct kv_qdq_enc *f, double N)
{
    struct kv_qdq_grp r = {f->s, f->lo, 0, 0, -1};
    if (e->poison || f->poison) return r;
    const int zero = (e->flip && !e->one) || (f->flip && !f->one), range = (e->flip && e->one) || (f->flip && f->one);
    /* the device's low value is either model's (a flush moves it by under
     * 2^-126); a normal scale near 2^-126 is under 2^-125, times a code <= N */
    r.zc = range ? QDQ_FMIN * (1 + 2 * N) : zero ? QDQ_FMIN : 0;
    r.flags = range ? KV_FLUSH_RANGE : zero ? KV_FLUSH_ZERO : 0;
    r.inf = !range && (zero || e->one != f->one) ? (int)N | KV_FLUSH_ONE : -1;
    /* a range's entry holds N (every code to it), which the forward reads
     * as a code of the flushed scale. Where both scales are 1, a device's
     * scale is 1 (the oracle's own codes and values) or normal and under
     * 2^-125, which zc holds: the forward reads that bound, not a step of
     * N x 1 */
    if (range && f->one && e->one) r.fs = 2 * QDQ_FMIN;
    return r;
}

/* z's code: z clamped to [0, N] and rounded half away from zero (up:
 * the clamped z is not negative), as the shaders do; selects, no branch. */
static inline __attribute__((always_inline)) double code_of(double z, double N)
{
    const double zc = z < 0 ? 0 : z, zcc = zc > N ? N : zc, t = floor(zcc);
    return t + (zcc - t >= 0.5 ? 1.0 : 0.0);
}

/* The other code of quotient z (rounded to code) where z is within win of a
 * tie and in range, else -1 (and where off): a chain of selects with one
 * compare each, which the vectorizer takes (not an int made of the
 * compares). */
static inline __attribute__((always_inline)) double tie_other(double z, double code, double win, double N, int off)
{
    const double fz = floor(z);
    double other = code == fz + 1 ? fz : fz + 1;
    other = off ? -1.0 : other;
    other = fabs(z) <= DBL_MAX ? other : -1.0;
    other = win > 0 ? other : -1.0;
    other = fabs(z - (fz + 0.5)) <= win ? other : -1.0;
    other = z > 0.5 - win ? other : -1.0;
    other = z < N - 0.5 + win ? other : -1.0;
    return other;
}

/* A device whose min and max flush while its arithmetic keeps subnormals
 * (a group whose flushed encoding differs from the exact one; elsewhere its
 * codes are q's): the flushed model's range and scale (the same: a
 * subnormal range gives a subnormal scale, so 1, either way). Its code
 * differs from the flushed model's only where the element or its float32
 * difference from the low value is subnormal, which it keeps: there z as
 * the exact model computes it, and each of its codes (and the other across
 * a tie) that q, alt and the entry fq do not hold widens fq's span. Keeping
 * such a value moves z by under one code: so the entry's codes and these
 * lie within 3 of each other. */
static void minmax_flushed(const float *w, size_t n, double N, const struct kv_qdq_enc *f, const int *q,
                           const int *alt, int *fq)
{
    const double flo = f->lo, fs = f->s, fwin = f->win;
    for (size_t j = 0; j < n; j++) {
        const float v = w[j];
        const double md = (double)v - flo;
        if (fabsf(v) > FLT_MAX || (fabsf(v) >= FLT_MIN && fabsf((float)md) >= FLT_MIN)) continue;
        const double mz = md / fs;
        const double mcode = code_of(mz, N);
        const double msub = (double)(float)md == md ? 0 : QDQ_U;
        const double mother = tie_other(mz, mcode, (msub + fwin) * 1.001 * fabs(mz), N, 0);
        double a = kv_flush_code(fq[j]), b = kv_flush_other(fq[j]);
        const double codes[2] = {mcode, mother};
        for (int k = 0; k < 2; k++) {
            const double c = codes[k];
            if (c < 0 || c == q[j] || c == alt[j] || (c >= a && c <= b)) continue;
            a = c < a ? c : a, b = c > b ? c : b;
        }
        fq[j] = (int)a + (int)(b - a) * KV_FLUSH_PAIR;
    }
}

KV_CLONES void kv_qdq_codes(const float *w, size_t n, double N, const struct kv_qdq_enc *e,
                            const struct kv_qdq_enc *f, int *restrict q, int *restrict alt, int *restrict fq)
{
    const double lo = e->lo, s = e->s, ewin = e->win, flo = f->lo, fs = f->s, fwinf = f->win;
    const int ep = e->poison, fp = f->poison;
    for (size_t j = 0; j < n; j++) {
        const float v = w[j];
        const int inf = fabsf(v) > FLT_MAX;
        const double d = (double)v - lo, zd = d / s, z = inf ? (double)v : zd; /* divided in every lane */
        const double code = code_of(z, N);
        const double sub = (double)(float)d == d ? 0 : QDQ_U; /* the subtraction's part of the window */
        const double win = inf ? 0 : (sub + ewin) * 1.001 * fabs(z);
        q[j] = (int)(ep ? 0 : code); /* selected, then converted: a poisoned group's NaN is never converted */
        alt[j] = (int)tie_other(z, code, win, N, ep);
        /* the flushed model's code and its own other code across a tie (the
         * same window: a flush may move z onto a tie that the exact z is far
         * from): the other code alone where the code is q, else a pair */
        const float fv = fabsf(v) < FLT_MIN ? 0.0f : v, fd = (float)((double)fv - flo);
        const double zfd = (double)(fabsf(fd) < FLT_MIN ? 0.0f : fd) / fs, zf = inf ? (double)v : zfd;
        const double fcode = fp ? 0 : code_of(zf, N);
        const double fsub = (double)fd == (double)fv - flo ? 0 : QDQ_U;
        const double fwin = inf ? 0 : (fsub + fwinf) * 1.001 * fabs(zf);
        const double fother = tie_other(zf, fcode, fwin, N, fp);
        const double other = fother >= 0 ? fother : fcode; /* selects, one compare each */
        const double pair = (fother < fcode ? fother : fcode) + (double)KV_FLUSH_PAIR; /* the lower code, flagged */
        const double differs = fother >= 0 ? pair : fcode;
        fq[j] = (int)(fcode == code ? other : differs);
    }
    if (!ep && !fp && (lo != flo || s != fs || ewin != fwinf)) minmax_flushed(w, n, N, f, q, alt, fq);
}
