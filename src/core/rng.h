/* Counter-based random numbers: Philox4x32-10 (Salmon et al., SC'11).
 * Element i of stream s under seed k is a pure function of (k, s, i), so a case
 * is defined by (kernel, params, seed) on every machine, in any order, on any
 * number of threads. Everything here uses only IEEE-754 +,-,*,/ and sqrt
 * (correctly rounded everywhere); no libm transcendental enters a sample. */
#ifndef KV_RNG_H
#define KV_RNG_H

#include <stddef.h>
#include <stdint.h>

void kv_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* Uniform double in [0, 1) with 53 random bits. */
double kv_rng_uniform(uint64_t seed, uint32_t stream, uint64_t i);
/* The generator of every generated input, as reports name it: element i of
 * a tensor's stream depends only on (seed, stream, i). */
#define KV_RNG_NAME "philox4x32-10 (seed, tensor, index); normals by Marsaglia's polar method"
/* Standard normal sample (Marsaglia's polar method on Philox draws). */
double kv_rng_normal(uint64_t seed, uint32_t stream, uint64_t i);
/* out[k] = kv_rng_normal(seed, stream, i0 + k) for k < n, bit for bit, in
 * vector code: several times faster per sample. */
void kv_rng_normal_block(uint64_t seed, uint32_t stream, uint64_t i0, size_t n, double *out);
/* dst[i] = (float)(kv_rng_normal(seed, stream, i) * mul) for i < n, in parallel blocks. */
void kv_rng_normal_f32(uint64_t seed, uint32_t stream, size_t n, double mul, float *dst);
/* dst[i] = bf16 of that float (round to nearest even), for i < n, in parallel blocks. */
void kv_rng_normal_bf16(uint64_t seed, uint32_t stream, size_t n, double mul, uint16_t *dst);
/* Which lanes kv_rng_normal_block uses (the same bits at any level, faster
 * higher): 2, AVX-512; 1, AVX2; 0, the portable loop. cap >= 0 lowers the
 * level to at most cap for the rest of the process (a test's switch, called
 * before any threads); a negative cap only asks. */
int kv_rng_lanes(int cap);
/* Natural logarithm from IEEE operations only, within 1 ulp of log(). */
double kv_rng_log(double x);

#endif
