#include "core/rng.h"

#include <math.h>

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
