#include "core/rng.h"

#include <math.h>
#include <string.h>

#include "core/clones.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void kv_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        uint32_t n3 = (uint32_t)p0;
        c0 = n0, c1 = n1, c2 = n2, c3 = n3;
        k0 += PHILOX_W0, k1 += PHILOX_W1;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

static void draw(uint64_t seed, uint32_t stream, uint64_t i, uint32_t attempt,
                 uint32_t out[4])
{
    /* Counter: element index (64 bits), stream, attempt; key: the seed. */
    uint32_t ctr[4] = {(uint32_t)i, (uint32_t)(i >> 32), stream, attempt};
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    kv_philox4x32(ctr, key, out);
}

static double u53(uint32_t hi, uint32_t lo)
{
    /* top 21 bits of hi, all 32 of lo: 53 bits, exact in a double */
    return (double)(((uint64_t)(hi >> 11) << 32) | lo) * 0x1p-53;
}

double kv_rng_uniform(uint64_t seed, uint32_t stream, uint64_t i)
{
    uint32_t o[4];
    draw(seed, stream, i, 0, o);
    return u53(o[0], o[1]);
}

double kv_rng_log(double x)
{
    if (!(x > 0)) return x == 0 ? -INFINITY : NAN;
    if (isinf(x)) return x;
    int e;
    double m = frexp(x, &e); /* exact: x = m * 2^e, m in [0.5, 1) */
    if (m < 0.70710678118654752440) {
        m *= 2.0;
        e -= 1;
    }
    /* log(m) = 2 atanh(z), z = (m-1)/(m+1), |z| <= 0.1716: the odd series
     * converges by a factor z^2 <= 0.0295 per term; 12 terms reach 2^-60. */
    double z = (m - 1.0) / (m + 1.0), z2 = z * z;
    /* 1/(2k+1) as literals: decimal-to-double conversion is correctly rounded
     * by every C compiler, so these are the same bits everywhere. */
    static const double inv[] = {1.0 / 23, 1.0 / 21, 1.0 / 19, 1.0 / 17, 1.0 / 15, 1.0 / 13,
                                 1.0 / 11, 1.0 / 9,  1.0 / 7,  1.0 / 5,  1.0 / 3};
    double sum = 0.0;
    for (int k = 0; k < 11; k++) sum = (sum + inv[k]) * z2;
    double lm = 2.0 * z + 2.0 * z * sum;
    const double ln2_hi = 6.93147180369123816490e-01; /* 0x3fe62e42fee00000 */
    const double ln2_lo = 1.90821492927058770002e-10; /* 0x3dea39ef35793c76 */
    return (double)e * ln2_hi + ((double)e * ln2_lo + lm);
}

double kv_rng_normal(uint64_t seed, uint32_t stream, uint64_t i)
{
    for (uint32_t attempt = 0;; attempt++) {
        uint32_t o[4];
        draw(seed, stream, i, attempt, o);
        double u = 2.0 * u53(o[0], o[1]) - 1.0;
        double v = 2.0 * u53(o[2], o[3]) - 1.0;
        double s = u * u + v * v;
        if (s > 0.0 && s < 1.0)
            return u * sqrt(-2.0 * kv_rng_log(s) / s);
        /* Rejection happens with probability 1 - pi/4; after 64 attempts the
         * chance is 1e-43, but keep going rather than return a biased value. */
    }
}

/* kv_rng_normal_block: the same values as kv_rng_normal, lanes of BLK at a
 * time in loops without branches, which the compiler turns into vector code
 * (and, on x86-64, an AVX2 clone picked at load time). Only IEEE +,-,*,/ and
 * sqrt, in kv_rng_log's order, with -ffp-contract=off: the same bits on any
 * vector width. Rejected lanes queue for their next draw, redrawn BLK at a
 * time. kv_philox4x32 and kv_rng_log stay the reference: unit.rng checks
 * the lanes against kv_rng_normal bit for bit. */
#define BLK 32

/* Lane l: element idx[l]'s draw number att[l] (its counter). */
KV_CLONES static void normal_lanes(uint64_t seed, uint32_t stream, const uint64_t *idx, const uint32_t *att,
                                   double *out, unsigned char *bad)
{
    /* the 32-bit words in 64-bit lanes, so that the widening products vectorize */
    uint64_t c0[BLK], c1[BLK], c2[BLK], c3[BLK], k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int l = 0; l < BLK; l++) c0[l] = (uint32_t)idx[l], c1[l] = idx[l] >> 32, c2[l] = stream, c3[l] = att[l];
    for (int r = 0; r < 10; r++) {
        for (int l = 0; l < BLK; l++) {
            uint64_t p0 = (uint64_t)PHILOX_M0 * (c0[l] & 0xffffffffu), p1 = (uint64_t)PHILOX_M1 * (c2[l] & 0xffffffffu);
            c0[l] = (p1 >> 32) ^ c1[l] ^ k0, c1[l] = p1 & 0xffffffffu;
            c2[l] = (p0 >> 32) ^ c3[l] ^ k1, c3[l] = p0 & 0xffffffffu;
        }
        k0 = (k0 + PHILOX_W0) & 0xffffffffu, k1 = (k1 + PHILOX_W1) & 0xffffffffu;
    }
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    double u[BLK], v[BLK], sv[BLK];
    for (int l = 0; l < BLK; l++) {
        /* u53 as exact conversions of 32-bit halves: hi's 21 bits times 2^32, plus lo */
        double a = ((double)(int32_t)(c0[l] >> 11) * 4294967296.0 +
                    ((double)(int32_t)(c1[l] >> 1) * 2.0 + (double)(int32_t)(c1[l] & 1u))) * 0x1p-53;
        double b = ((double)(int32_t)(c2[l] >> 11) * 4294967296.0 +
                    ((double)(int32_t)(c3[l] >> 1) * 2.0 + (double)(int32_t)(c3[l] & 1u))) * 0x1p-53;
        u[l] = 2.0 * a - 1.0, v[l] = 2.0 * b - 1.0;
        double s = u[l] * u[l] + v[l] * v[l];
        int ok = (s > 0.0) & (s < 1.0);
        bad[l] = (unsigned char)!ok;
        sv[l] = ok ? s : 0.5; /* a normal number in (0, 1): the lane is redone */
    }
    for (int l = 0; l < BLK; l++) {
        /* frexp by bits: sv = m * 2^e, m in [0.5, 1); e as an exact double */
        uint64_t bits, mb, eb;
        memcpy(&bits, &sv[l], sizeof bits);
        mb = (bits & 0x000fffffffffffffull) | 0x3fe0000000000000ull;
        eb = (bits >> 52) | 0x4330000000000000ull;
        double m, e;
        memcpy(&m, &mb, sizeof m);
        memcpy(&e, &eb, sizeof e);
        e = (e - 4503599627370496.0) - 1022.0;
        double m2 = m * 2.0, e1 = e - 1.0;
        int small = m < 0.70710678118654752440;
        m = small ? m2 : m;
        e = small ? e1 : e;
        double z = (m - 1.0) / (m + 1.0), z2 = z * z, sum = 0.0;
        sum = (sum + 1.0 / 23) * z2;
        sum = (sum + 1.0 / 21) * z2;
        sum = (sum + 1.0 / 19) * z2;
        sum = (sum + 1.0 / 17) * z2;
        sum = (sum + 1.0 / 15) * z2;
        sum = (sum + 1.0 / 13) * z2;
        sum = (sum + 1.0 / 11) * z2;
        sum = (sum + 1.0 / 9) * z2;
        sum = (sum + 1.0 / 7) * z2;
        sum = (sum + 1.0 / 5) * z2;
        sum = (sum + 1.0 / 3) * z2;
        double lm = 2.0 * z + 2.0 * z * sum;
        double lg = e * ln2_hi + (e * ln2_lo + lm);
        out[l] = u[l] * sqrt(-2.0 * lg / sv[l]);
    }
}

/* Rejected lanes waiting for their next draw. */
struct redo {
    uint64_t idx[2 * BLK];
    uint32_t att[2 * BLK];
    size_t pos[2 * BLK];
    int n;
};

/* The first min(n, BLK) waiting lanes drawn again; those rejected once more wait after the rest. */
static void redo_lanes(uint64_t seed, uint32_t stream, struct redo *r, double *out)
{
    int m = r->n < BLK ? r->n : BLK;
    uint64_t idx[BLK];
    uint32_t att[BLK];
    double v[BLK];
    unsigned char bad[BLK];
    for (int l = 0; l < BLK; l++) idx[l] = r->idx[l < m ? l : 0], att[l] = r->att[l < m ? l : 0];
    normal_lanes(seed, stream, idx, att, v, bad);
    struct redo next = {.n = 0};
    for (int l = m; l < r->n; l++)
        next.idx[next.n] = r->idx[l], next.att[next.n] = r->att[l], next.pos[next.n++] = r->pos[l];
    for (int l = 0; l < m; l++) {
        out[r->pos[l]] = v[l];
        if (bad[l]) next.idx[next.n] = idx[l], next.att[next.n] = att[l] + 1, next.pos[next.n++] = r->pos[l];
    }
    *r = next;
}

void kv_rng_normal_block(uint64_t seed, uint32_t stream, uint64_t i0, size_t n, double *out)
{
    uint64_t idx[BLK];
    const uint32_t att[BLK] = {0};
    double v[BLK];
    unsigned char bad[BLK];
    struct redo r = {.n = 0};
    for (size_t o = 0; o < n; o += BLK) {
        for (int l = 0; l < BLK; l++) idx[l] = i0 + o + (uint64_t)l;
        normal_lanes(seed, stream, idx, att, v, bad);
        size_t m = n - o < BLK ? n - o : BLK;
        for (size_t l = 0; l < m; l++) {
            out[o + l] = v[l];
            if (bad[l]) r.idx[r.n] = idx[l], r.att[r.n] = 1, r.pos[r.n++] = o + l;
        }
        if (r.n >= BLK) redo_lanes(seed, stream, &r, out);
    }
    while (r.n > 0) redo_lanes(seed, stream, &r, out);
}

void kv_rng_normal_f32(uint64_t seed, uint32_t stream, size_t n, double mul, float *dst)
{
    enum { B = 1024 };
#pragma omp parallel for schedule(static)
    for (size_t i0 = 0; i0 < n; i0 += B) {
        double v[B];
        size_t m = n - i0 < B ? n - i0 : B;
        kv_rng_normal_block(seed, stream, i0, m, v);
        for (size_t k = 0; k < m; k++) dst[i0 + k] = (float)(v[k] * mul);
    }
}
