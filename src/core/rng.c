#include "core/rng.h"

#include <math.h>
#include <string.h>

#include "core/clones.h"
#include "core/dtype.h"

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
 * (GCC on x86-64: hand-written AVX-512 and AVX2 lanes below, picked at run
 * time, kv_rng_lanes; the clones elsewhere). Only IEEE +,-,*,/ and
 * sqrt, in kv_rng_log's order, with -ffp-contract=off: the same bits on any
 * vector width. A block is made in two passes: draw (Philox, u and s, and
 * which lanes are rejected; rejected lanes queue for their next draw,
 * redrawn BLK at a time), then, once every lane of the block holds its
 * accepted draw, finish (the logarithm, the two divisions and the square
 * root, once a value: the costly part no longer redone for the fifth of
 * draws that are rejected). kv_philox4x32 and kv_rng_log stay the
 * reference: unit.rng checks the lanes against kv_rng_normal bit for bit. */
#define BLK 32

/* Lane l: element idx[l]'s draw number att[l] (its counter) into u[l] and
 * s[l] = u^2 + v^2. Returns the rejected lanes, bit l for lane l (s then
 * 0.5). */
KV_CLONES static uint32_t draw_lanes(uint64_t seed, uint32_t stream, const uint64_t *idx, const uint32_t *att,
                                     double *u, double *s)
{
    unsigned char bad[BLK];
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
    for (int l = 0; l < BLK; l++) {
        /* u53 as exact conversions of 32-bit halves: hi's 21 bits times 2^32, plus lo */
        double a = ((double)(int32_t)(c0[l] >> 11) * 4294967296.0 +
                    ((double)(int32_t)(c1[l] >> 1) * 2.0 + (double)(int32_t)(c1[l] & 1u))) * 0x1p-53;
        double b = ((double)(int32_t)(c2[l] >> 11) * 4294967296.0 +
                    ((double)(int32_t)(c3[l] >> 1) * 2.0 + (double)(int32_t)(c3[l] & 1u))) * 0x1p-53;
        double v = 2.0 * b - 1.0;
        u[l] = 2.0 * a - 1.0;
        double sl = u[l] * u[l] + v * v;
        int ok = (sl > 0.0) & (sl < 1.0);
        bad[l] = (unsigned char)!ok;
        s[l] = ok ? sl : 0.5; /* a normal number in (0, 1): the lane is redone */
    }
    uint32_t rej = 0;
    for (int l = 0; l < BLK; l++) rej |= (uint32_t)bad[l] << l;
    return rej;
}

/* out[l] = u[l] sqrt(-2 log(s[l]) / s[l]) for the accepted draws (u, s). */
KV_CLONES static void finish_lanes(const double *u, const double *s, double *out)
{
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    for (int l = 0; l < BLK; l++) {
        /* frexp by bits: s = m * 2^e, m in [0.5, 1); e as an exact double */
        uint64_t bits, mb, eb;
        memcpy(&bits, &s[l], sizeof bits);
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
        out[l] = u[l] * sqrt(-2.0 * lg / s[l]);
    }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#include <immintrin.h>
#define KV_RNG_X86 1
/* 1/(2k+1), k = 11 .. 1, the logarithm's series from its far end */
static const double inv_odd[] = {1.0 / 23, 1.0 / 21, 1.0 / 19, 1.0 / 17, 1.0 / 15, 1.0 / 13,
                                 1.0 / 11, 1.0 / 9,  1.0 / 7,  1.0 / 5,  1.0 / 3};
/* The lanes in AVX-512 (F, DQ): the same operations in the same order, so
 * the same bits; GCC writes the vector code above with 64-bit products
 * (vpmullq, three uops on Intel) and 32-bit conversions where one widening
 * product (vpmuludq) and one exact 64-bit conversion (vcvtuqq2pd) serve. */
#define V 8
static __attribute__((target("avx512f,avx512dq"))) uint32_t draw_lanes_avx512(uint64_t seed, uint32_t stream,
                                                                               const uint64_t *idx, const uint32_t *att,
                                                                               double *u, double *s)
{
    uint32_t rej = 0;
    const __m512i lo32 = _mm512_set1_epi64(0xffffffff), m0 = _mm512_set1_epi64(PHILOX_M0),
                  m1 = _mm512_set1_epi64(PHILOX_M1);
    __m512i c0[BLK / V], c1[BLK / V], c2[BLK / V], c3[BLK / V];
    for (int g = 0; g < BLK / V; g++) {
        __m512i i = _mm512_loadu_si512(idx + g * V);
        c0[g] = _mm512_and_si512(i, lo32), c1[g] = _mm512_srli_epi64(i, 32);
        c2[g] = _mm512_set1_epi64(stream);
        c3[g] = _mm512_cvtepu32_epi64(_mm256_loadu_si256((const __m256i *)(att + g * V)));
    }
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        __m512i vk0 = _mm512_set1_epi64(k0), vk1 = _mm512_set1_epi64(k1);
        /* the words' upper halves are left as they fall: the products read
         * only the lower halves, and the lower halves are the words */
        for (int g = 0; g < BLK / V; g++) {
            __m512i p0 = _mm512_mul_epu32(c0[g], m0), p1 = _mm512_mul_epu32(c2[g], m1);
            c0[g] = _mm512_xor_si512(_mm512_xor_si512(_mm512_srli_epi64(p1, 32), c1[g]), vk0);
            c1[g] = p1;
            c2[g] = _mm512_xor_si512(_mm512_xor_si512(_mm512_srli_epi64(p0, 32), c3[g]), vk1);
            c3[g] = p0;
        }
        k0 += PHILOX_W0, k1 += PHILOX_W1;
    }
    const __m512d one = _mm512_set1_pd(1.0), two = _mm512_set1_pd(2.0), ulp = _mm512_set1_pd(0x1p-53);
    for (int g = 0; g < BLK / V; g++) {
        /* u53: hi's top 21 bits and lo's 32, an integer below 2^53, converted exactly */
        __m512i hi0 = _mm512_slli_epi64(_mm512_srli_epi64(_mm512_and_si512(c0[g], lo32), 11), 32);
        __m512i hi2 = _mm512_slli_epi64(_mm512_srli_epi64(_mm512_and_si512(c2[g], lo32), 11), 32);
        __m512d a = _mm512_mul_pd(_mm512_cvtepu64_pd(_mm512_or_si512(hi0, _mm512_and_si512(c1[g], lo32))), ulp);
        __m512d b = _mm512_mul_pd(_mm512_cvtepu64_pd(_mm512_or_si512(hi2, _mm512_and_si512(c3[g], lo32))), ulp);
        __m512d uu = _mm512_sub_pd(_mm512_mul_pd(two, a), one), v = _mm512_sub_pd(_mm512_mul_pd(two, b), one);
        __m512d sl = _mm512_add_pd(_mm512_mul_pd(uu, uu), _mm512_mul_pd(v, v));
        __mmask8 ok = _mm512_cmp_pd_mask(sl, _mm512_setzero_pd(), _CMP_GT_OQ) &
                      _mm512_cmp_pd_mask(sl, one, _CMP_LT_OQ);
        rej |= (uint32_t)(uint8_t)~ok << (g * V);
        _mm512_storeu_pd(u + g * V, uu);
        _mm512_storeu_pd(s + g * V, _mm512_mask_blend_pd(ok, _mm512_set1_pd(0.5), sl));
    }
    return rej;
}

static __attribute__((target("avx512f,avx512dq"))) void finish_lanes_avx512(const double *u, const double *s,
                                                                             double *out)
{
    const __m512d one = _mm512_set1_pd(1.0), two = _mm512_set1_pd(2.0);
    /* Step by step over the groups: each step's operations are independent,
     * so the log's long chain (22 dependent operations, a division, a square
     * root) runs several at a time rather than one. */
    __m512d sv[BLK / V], e[BLK / V], z[BLK / V], z2[BLK / V], sum[BLK / V];
    for (int g = 0; g < BLK / V; g++) {
        /* frexp by bits, as above: the exponent field is an exact integer */
        sv[g] = _mm512_loadu_pd(s + g * V);
        __m512i bits = _mm512_castpd_si512(sv[g]);
        __m512d m = _mm512_castsi512_pd(_mm512_or_si512(_mm512_and_si512(bits, _mm512_set1_epi64(0x000fffffffffffffll)),
                                                        _mm512_set1_epi64(0x3fe0000000000000ll)));
        e[g] = _mm512_sub_pd(_mm512_cvtepu64_pd(_mm512_srli_epi64(bits, 52)), _mm512_set1_pd(1022.0));
        __mmask8 small = _mm512_cmp_pd_mask(m, _mm512_set1_pd(0.70710678118654752440), _CMP_LT_OQ);
        m = _mm512_mask_blend_pd(small, m, _mm512_mul_pd(m, two));
        e[g] = _mm512_mask_blend_pd(small, e[g], _mm512_sub_pd(e[g], one));
        z[g] = _mm512_div_pd(_mm512_sub_pd(m, one), _mm512_add_pd(m, one)), z2[g] = _mm512_mul_pd(z[g], z[g]);
        sum[g] = _mm512_setzero_pd();
    }
    for (int k = 0; k < 11; k++)
        for (int g = 0; g < BLK / V; g++)
            sum[g] = _mm512_mul_pd(_mm512_add_pd(sum[g], _mm512_set1_pd(inv_odd[k])), z2[g]);
    for (int g = 0; g < BLK / V; g++) {
        __m512d z2x = _mm512_mul_pd(two, z[g]);
        __m512d lm = _mm512_add_pd(z2x, _mm512_mul_pd(z2x, sum[g]));
        __m512d lg = _mm512_add_pd(_mm512_mul_pd(e[g], _mm512_set1_pd(6.93147180369123816490e-01)),
                                   _mm512_add_pd(_mm512_mul_pd(e[g], _mm512_set1_pd(1.90821492927058770002e-10)), lm));
        __m512d q = _mm512_div_pd(_mm512_mul_pd(_mm512_set1_pd(-2.0), lg), sv[g]);
        _mm512_storeu_pd(out + g * V, _mm512_mul_pd(_mm512_loadu_pd(u + g * V), _mm512_sqrt_pd(q)));
    }
}
#undef V

/* The lanes in AVX2: GCC's AVX2 clone of them vectorizes the Philox rounds
 * (with each 64-bit product as shifts and adds) but leaves the logarithm,
 * the divisions and the square root scalar ("control flow in loop"). The
 * same operations in the same order as the portable lanes, four lanes a
 * vector: the widening products as vpmuludq, and each conversion of an
 * integer below 2^52 exact, as its bits under 2^52's exponent less 2^52. */
#define V 4
static __attribute__((target("avx2"))) __m256d exact_pd(__m256i i)
{
    const __m256i two52 = _mm256_set1_epi64x(0x4330000000000000ll);
    return _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(i, two52)), _mm256_set1_pd(0x1p52));
}

static __attribute__((target("avx2"))) uint32_t draw_lanes_avx2(uint64_t seed, uint32_t stream, const uint64_t *idx,
                                                                const uint32_t *att, double *u, double *s)
{
    uint32_t rej = 0;
    const __m256i lo32 = _mm256_set1_epi64x(0xffffffff), m0 = _mm256_set1_epi64x(PHILOX_M0),
                  m1 = _mm256_set1_epi64x(PHILOX_M1);
    __m256i c0[BLK / V], c1[BLK / V], c2[BLK / V], c3[BLK / V];
    for (int g = 0; g < BLK / V; g++) {
        __m256i i = _mm256_loadu_si256((const __m256i *)(idx + g * V));
        c0[g] = _mm256_and_si256(i, lo32), c1[g] = _mm256_srli_epi64(i, 32);
        c2[g] = _mm256_set1_epi64x(stream);
        c3[g] = _mm256_cvtepu32_epi64(_mm_loadu_si128((const __m128i *)(att + g * V)));
    }
    /* half the groups at a time: their words and the constants fit AVX2's 16
     * registers (all the groups at once spilled words on every round); each
     * product's upper word moved down by a shuffle, which runs on two of
     * Zen's pipes where a shift runs on one: 30 -> 27 ns a normal on a Zen 1 */
    for (int h = 0; h < BLK / V; h += BLK / V / 2) {
        uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
        for (int r = 0; r < 10; r++) {
            __m256i vk0 = _mm256_set1_epi64x(k0), vk1 = _mm256_set1_epi64x(k1);
            for (int g = h; g < h + BLK / V / 2; g++) { /* upper halves left as they fall, as above */
                __m256i p0 = _mm256_mul_epu32(c0[g], m0), p1 = _mm256_mul_epu32(c2[g], m1);
                c0[g] = _mm256_xor_si256(_mm256_xor_si256(_mm256_shuffle_epi32(p1, 0xf5), c1[g]), vk0);
                c1[g] = p1;
                c2[g] = _mm256_xor_si256(_mm256_xor_si256(_mm256_shuffle_epi32(p0, 0xf5), c3[g]), vk1);
                c3[g] = p0;
            }
            k0 += PHILOX_W0, k1 += PHILOX_W1;
        }
    }
    const __m256d one = _mm256_set1_pd(1.0), two = _mm256_set1_pd(2.0), ulp = _mm256_set1_pd(0x1p-53),
                  two32 = _mm256_set1_pd(4294967296.0);
    for (int g = 0; g < BLK / V; g++) {
        /* u53: hi's top 21 bits times 2^32 plus lo's 32, each exact, so the sum is */
        __m256d a = _mm256_mul_pd(_mm256_add_pd(_mm256_mul_pd(exact_pd(_mm256_srli_epi64(_mm256_and_si256(c0[g], lo32), 11)), two32),
                                                exact_pd(_mm256_and_si256(c1[g], lo32))), ulp);
        __m256d b = _mm256_mul_pd(_mm256_add_pd(_mm256_mul_pd(exact_pd(_mm256_srli_epi64(_mm256_and_si256(c2[g], lo32), 11)), two32),
                                                exact_pd(_mm256_and_si256(c3[g], lo32))), ulp);
        __m256d uu = _mm256_sub_pd(_mm256_mul_pd(two, a), one), v = _mm256_sub_pd(_mm256_mul_pd(two, b), one);
        __m256d sl = _mm256_add_pd(_mm256_mul_pd(uu, uu), _mm256_mul_pd(v, v));
        __m256d ok = _mm256_and_pd(_mm256_cmp_pd(sl, _mm256_setzero_pd(), _CMP_GT_OQ), _mm256_cmp_pd(sl, one, _CMP_LT_OQ));
        rej |= (uint32_t)(~_mm256_movemask_pd(ok) & 15) << (g * V);
        _mm256_storeu_pd(u + g * V, uu);
        _mm256_storeu_pd(s + g * V, _mm256_blendv_pd(_mm256_set1_pd(0.5), sl, ok));
    }
    return rej;
}

static __attribute__((target("avx2"))) void finish_lanes_avx2(const double *u, const double *s, double *out)
{
    const __m256d one = _mm256_set1_pd(1.0), two = _mm256_set1_pd(2.0);
    __m256d sv[BLK / V], e[BLK / V], z[BLK / V], z2[BLK / V], sum[BLK / V];
    for (int g = 0; g < BLK / V; g++) {
        sv[g] = _mm256_loadu_pd(s + g * V);
        __m256i bits = _mm256_castpd_si256(sv[g]);
        __m256d m = _mm256_castsi256_pd(_mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi64x(0x000fffffffffffffll)),
                                                        _mm256_set1_epi64x(0x3fe0000000000000ll)));
        e[g] = _mm256_sub_pd(exact_pd(_mm256_srli_epi64(bits, 52)), _mm256_set1_pd(1022.0));
        __m256d small = _mm256_cmp_pd(m, _mm256_set1_pd(0.70710678118654752440), _CMP_LT_OQ);
        m = _mm256_blendv_pd(m, _mm256_mul_pd(m, two), small);
        e[g] = _mm256_blendv_pd(e[g], _mm256_sub_pd(e[g], one), small);
        z[g] = _mm256_div_pd(_mm256_sub_pd(m, one), _mm256_add_pd(m, one)), z2[g] = _mm256_mul_pd(z[g], z[g]);
        sum[g] = _mm256_setzero_pd();
    }
    for (int k = 0; k < 11; k++)
        for (int g = 0; g < BLK / V; g++)
            sum[g] = _mm256_mul_pd(_mm256_add_pd(sum[g], _mm256_set1_pd(inv_odd[k])), z2[g]);
    for (int g = 0; g < BLK / V; g++) {
        __m256d z2x = _mm256_mul_pd(two, z[g]);
        __m256d lm = _mm256_add_pd(z2x, _mm256_mul_pd(z2x, sum[g]));
        __m256d lg = _mm256_add_pd(_mm256_mul_pd(e[g], _mm256_set1_pd(6.93147180369123816490e-01)),
                                   _mm256_add_pd(_mm256_mul_pd(e[g], _mm256_set1_pd(1.90821492927058770002e-10)), lm));
        __m256d q = _mm256_div_pd(_mm256_mul_pd(_mm256_set1_pd(-2.0), lg), sv[g]);
        _mm256_storeu_pd(out + g * V, _mm256_mul_pd(_mm256_loadu_pd(u + g * V), _mm256_sqrt_pd(q)));
    }
}
#undef V

/* At most this level of lanes (a test's switch, to check the others). */
static int lanes_cap = 2;

int kv_rng_lanes(int cap)
{
    if (cap >= 0 && cap < lanes_cap) lanes_cap = cap;
    int have = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") ? 2
               : __builtin_cpu_supports("avx2")                                         ? 1
                                                                                        : 0;
    return have < lanes_cap ? have : lanes_cap;
}
#else
int kv_rng_lanes(int cap)
{
    (void)cap;
    return 0;
}
#endif

/* The lanes of the level kv_rng_lanes gives. */
static uint32_t draw_block(uint64_t seed, uint32_t stream, const uint64_t *idx, const uint32_t *att, double *u,
                           double *s, int level)
{
#ifdef KV_RNG_X86
    if (level == 2) return draw_lanes_avx512(seed, stream, idx, att, u, s);
    if (level == 1) return draw_lanes_avx2(seed, stream, idx, att, u, s);
#endif
    (void)level;
    return draw_lanes(seed, stream, idx, att, u, s);
}

static void finish_block(const double *u, const double *s, double *out, int level)
{
#ifdef KV_RNG_X86
    if (level == 2) finish_lanes_avx512(u, s, out);
    else if (level == 1) finish_lanes_avx2(u, s, out);
    else
#endif
        finish_lanes(u, s, out);
    (void)level;
}

/* A piece's rejected lanes waiting for their next draw: element base +
 * pos[q]'s draw number att[q]. Lanes are redone while BLK or more wait, and
 * a redo takes BLK and puts back at most BLK: fewer than 2 BLK ever wait. */
struct redo {
    uint64_t base;
    uint32_t pos[2 * BLK], att[2 * BLK];
    int n;
};

/* The lanes of rej (a mask of lanes l < BLK) join the queue for their next
 * draw: lane l is the piece's element pos[l] (pos NULL: pos0 + l), whose
 * draw att[l] (att NULL: 0) was rejected. Only the rejected lanes are
 * visited, a fifth of them. */
static void queue_rejected(struct redo *r, uint32_t rej, uint32_t pos0, const uint32_t *att, const uint32_t *pos)
{
    for (; rej; rej &= rej - 1) {
        const int l = __builtin_ctz(rej);
        r->pos[r->n] = pos ? pos[l] : pos0 + (uint32_t)l, r->att[r->n] = att ? att[l] + 1 : 1;
        r->n++;
    }
}

/* The first min(n, BLK) waiting lanes drawn again into u[pos], s[pos];
 * those rejected once more wait after the rest. A draw depends only on its
 * element and number, so the order in which lanes are redone changes
 * nothing. */
static void redo_lanes(uint64_t seed, uint32_t stream, struct redo *r, double *u, double *s, int level)
{
    const int m = r->n < BLK ? r->n : BLK;
    uint64_t idx[BLK];
    uint32_t att[BLK], pos[BLK];
    double vu[BLK], vs[BLK];
    for (int l = 0; l < BLK; l++) {
        const int k = l < m ? l : 0;
        idx[l] = r->base + r->pos[k], att[l] = r->att[k], pos[l] = r->pos[k];
    }
    const uint32_t rej = draw_block(seed, stream, idx, att, vu, vs, level);
    memmove(r->pos, r->pos + m, (size_t)(r->n - m) * sizeof r->pos[0]);
    memmove(r->att, r->att + m, (size_t)(r->n - m) * sizeof r->att[0]);
    r->n -= m;
    for (int l = 0; l < m; l++) u[pos[l]] = vu[l], s[pos[l]] = vs[l];
    queue_rejected(r, m == BLK ? rej : rej & ((1u << m) - 1), 0, att, pos);
}

/* Elements drawn before they are finished: a piece of a block, whose draws
 * (u and s, 16 KiB) stay in cache between the two passes. */
#define PIECE 1024

void kv_rng_normal_block(uint64_t seed, uint32_t stream, uint64_t i0, size_t n, double *out)
{
    const int level = kv_rng_lanes(-1);
    const uint32_t att0[BLK] = {0};
    uint64_t idx[BLK];
    double u[PIECE], s[PIECE], v[BLK];
    struct redo r;
    for (size_t o = 0; o < n; o += PIECE) {
        const size_t m = n - o < PIECE ? n - o : PIECE;
        r.n = 0, r.base = i0 + o;
        /* whole blocks of lanes: those past the piece's end are drawn and finished, and not kept */
        for (size_t b = 0; b < m; b += BLK) {
            for (int l = 0; l < BLK; l++) idx[l] = i0 + o + b + (uint64_t)l;
            const uint32_t rej = draw_block(seed, stream, idx, att0, u + b, s + b, level);
            queue_rejected(&r, m - b >= BLK ? rej : rej & ((1u << (m - b)) - 1), (uint32_t)b, NULL, NULL);
            while (r.n >= BLK) redo_lanes(seed, stream, &r, u, s, level);
        }
        while (r.n > 0) redo_lanes(seed, stream, &r, u, s, level);
        for (size_t b = 0; b < m; b += BLK) {
            const size_t k = m - b < BLK ? m - b : BLK;
            finish_block(u + b, s + b, k == BLK ? out + o + b : v, level); /* a whole block straight into out */
            if (k < BLK) memcpy(out + o + b, v, k * sizeof *v);
        }
    }
}

/* Normals drawn at a time by the parallel fills below (a block of 128
 * alone draws a quarter slower, of 1024 a few percent). */
enum { FILL_BLOCK = 4096 };

/* kv_rng_normal_f32 (f32) or kv_rng_normal_bf16 into dst of dtype t. */
static void normal_fill(uint64_t seed, uint32_t stream, size_t n, double mul, enum kv_dtype t, void *dst)
{
#pragma omp parallel for schedule(dynamic, 4) /* dynamic: a thread may be busy elsewhere (the device opening) */
    for (size_t i0 = 0; i0 < n; i0 += FILL_BLOCK) {
        double v[FILL_BLOCK];
        size_t m = n - i0 < FILL_BLOCK ? n - i0 : FILL_BLOCK;
        kv_rng_normal_block(seed, stream, i0, m, v);
        for (size_t k = 0; k < m; k++) v[k] *= mul;
        kv_store_f64_n(t, dst, i0, v, m); /* (float)v, then bf16's rounding where t is bf16 */
    }
}

void kv_rng_normal_f32(uint64_t seed, uint32_t stream, size_t n, double mul, float *dst)
{
    normal_fill(seed, stream, n, mul, KV_F32, dst);
}

void kv_rng_normal_bf16(uint64_t seed, uint32_t stream, size_t n, double mul, uint16_t *dst)
{
    normal_fill(seed, stream, n, mul, KV_BF16, dst);
}
