#include "kernels/gdn_inputs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clones.h"
#include "core/dtype.h"
#include "core/rng.h"

#define BT 64

/* The random streams: those of gdn-wu's tensors k, v, beta, g (its enum). */
enum { R_K, R_V, R_BETA, R_G };

/* The Gram matrix of one chunk's key rows (nv of them, stored in kt
 * transposed: kt[e * BT + i] = k_i[e] as a double): G[i][j] = k_i . k_j for
 * j < i, each dot summed over e in order; the rows' dots side by side, in a
 * loop that vectorizes without reassociating any of them. */
KV_CLONES static void gram(const double *kt, int64_t nv, int64_t K, double G[BT][BT])
{
    for (int64_t i = 0; i < nv; i++) {
        double *restrict s = G[i];
        for (int64_t j = 0; j < i; j++) s[j] = 0;
        for (int64_t e = 0; e < K; e++) {
            const double a = kt[e * BT + i], *restrict kj = kt + e * BT;
            for (int64_t j = 0; j < i; j++) s[j] += a * kj[j];
        }
    }
}

/* X = (I + L)^-1 by forward substitution, row by row: X[i][j] = -sum over
 * m = j .. i-1 of L[i][m] X[m][j], each sum in that order from 0 (the
 * columns of a row side by side, in a loop that vectorizes). */
KV_CLONES static void solve_rows(const double L[BT][BT], int64_t nv, double X[BT][BT])
{
    for (int64_t i = 0; i < nv; i++) {
        double *restrict acc = X[i];
        for (int64_t j = 0; j < i; j++) acc[j] = 0;
        for (int64_t m = 0; m < i; m++) {
            const double a = L[i][m], *restrict xm = X[m];
            for (int64_t j = 0; j <= m; j++) acc[j] += a * xm[j];
        }
        for (int64_t j = 0; j < i; j++) acc[j] = -acc[j];
        acc[i] = 1;
    }
}

/* A = (I + L)^-1 of one chunk and value head h in float64 by forward
 * substitution, L strictly lower, L[i][j] = beta_i (k_i . k_j) exp(g_i -
 * g_j), from the inputs as stored and the chunk's Gram matrix G of its key
 * head. Columns past the end of a partial chunk are filled with 1: a kernel
 * must not use them (their rows do not exist), and one that reads rows past
 * T picks them up. Returns the chunk's inf-norm condition estimate. */
static double chunk_A(const struct kv_gdn_inputs *d, int64_t b, int64_t ch, int64_t h, const double G[BT][BT])
{
    const int64_t t0 = ch * BT, nv = d->T - t0 < BT ? d->T - t0 : BT;
    double L[BT][BT] = {{0}}, X[BT][BT] = {{0}};
    for (int64_t i = 0; i < nv; i++) {
        int64_t ri = (b * d->T + t0 + i) * d->H + h;
        for (int64_t j = 0; j < i; j++) {
            int64_t rj = (b * d->T + t0 + j) * d->H + h;
            L[i][j] = d->beta[ri] * G[i][j] * exp((double)d->g[ri] - (double)d->g[rj]);
        }
    }
    solve_rows(L, nv, X);
    double norm_il = 0, norm_x = 0;
    for (int64_t i = 0; i < nv; i++) {
        double ri = 1, rx = 0;
        for (int64_t j = 0; j < nv; j++) ri += fabs(L[i][j]), rx += fabs(X[i][j]);
        norm_il = fmax(norm_il, ri), norm_x = fmax(norm_x, rx);
        size_t row = (size_t)(((b * d->T + t0 + i) * d->H + h) * BT);
        /* a-bf16: A made in f32, then rounded to bf16, as FLA's solve_tril returns it */
        double a[BT];
        for (int64_t j = 0; j < BT; j++) a[j] = j < nv ? (float)X[i][j] : 1.0f;
        kv_store_f64_n(d->A->dtype, d->A->data, row, a, BT);
    }
    return norm_il * norm_x;
}

/* Every chunk's A: per key head's chunk, its Gram matrix once, then A for
 * each value head that shares the key head. The largest condition estimate,
 * or -1 out of memory. */
static double all_A(const struct kv_gdn_inputs *d)
{
    const int64_t NT = (d->T + BT - 1) / BT, ratio = d->H / d->Hg;
    double cond = 0;
    int failed = 0;
#pragma omp parallel reduction(max : cond) reduction(| : failed)
    {
        double *kt = malloc(sizeof(double) * BT * (size_t)d->K), (*G)[BT] = malloc(sizeof(double[BT][BT]));
        failed |= !kt || !G;
#pragma omp for schedule(dynamic)
        for (int64_t item = 0; item < d->B * NT * d->Hg; item++) {
            if (!kt || !G) continue;
            const int64_t b = item / (NT * d->Hg), ch = (item / d->Hg) % NT, kh = item % d->Hg;
            const int64_t t0 = ch * BT, nv = d->T - t0 < BT ? d->T - t0 : BT;
            for (int64_t i = 0; i < nv; i++) {
                const uint16_t *ki = d->k + ((b * d->T + t0 + i) * d->Hg + kh) * d->K;
                for (int64_t e = 0; e < d->K; e++) kt[e * BT + i] = kv_bf16_to_f32(ki[e]);
            }
            gram(kt, nv, d->K, G);
            for (int64_t h = kh * ratio; h < (kh + 1) * ratio; h++) cond = fmax(cond, chunk_A(d, b, ch, h, G));
        }
        free(kt), free(G);
    }
    return failed ? -1 : cond;
}

/* --dist nonfinite: after A is made from the finite k, put a NaN, a +Inf and
 * a -Inf in v, in k and in A, and a NaN in beta, at seeded places: the staging's
 * NaN and Inf paths run, and the outputs they reach are NaN or +-Inf in the
 * oracle too (0 * Inf and Inf - Inf included), the rest stay finite.
 * nan_only (gdn-wu's bf16-coopmat) gets NaNs in place of the infinities: its
 * exact three-part split of A multiplies a zero part by an infinite staged
 * value, NaN where the result is +-Inf (a documented limit of that variant). */
static void nonfinite(const struct kv_gdn_inputs *d)
{
    static const uint16_t fma_bits[3] = {0x7FC1, 0x7F80, 0xFF80}; /* NaN with a payload, +Inf, -Inf */
    static const uint16_t cm_bits[3] = {0x7FC1, 0xFFC3, 0x7FC5};
    const uint16_t *bits = d->nan_only ? cm_bits : fma_bits;
    const uint64_t nk = (uint64_t)(d->B * d->T * d->Hg * d->K), nv = (uint64_t)(d->B * d->T * d->H * d->V),
                   nb = (uint64_t)(d->B * d->T * d->H);
    for (uint32_t i = 0; i < 3; i++) {
        d->v[(uint64_t)(kv_rng_uniform(d->seed, 40 + i, 0) * (double)nv) % nv] = bits[i];
        d->k[(uint64_t)(kv_rng_uniform(d->seed, 50 + i, 0) * (double)nk) % nk] = bits[i];
    }
    d->beta[(uint64_t)(kv_rng_uniform(d->seed, 60, 0) * (double)nb) % nb] = NAN;
    /* and a NaN, a +Inf, a -Inf and a NaN whose payload is its lowest bit
     * alone (a signalling NaN) in A itself, each in the lower triangle of a row
     * inside the sequence: A's own non-finite paths (the three-part split
     * keeps an infinity's hi part alone, and any NaN a NaN) */
    static const uint32_t a_f32[4] = {0x7FC00000u, 0x7F800000u, 0xFF800000u, 0x7F800001u};
    static const uint16_t a_bf16[4] = {0x7FC0, 0x7F80, 0xFF80, 0x7F81};
    for (uint32_t i = 0; i < 4; i++) {
        uint64_t r = (uint64_t)(kv_rng_uniform(d->seed, 61 + i, 0) * (double)nb) % nb;
        uint64_t t = (r / (uint64_t)d->H) % (uint64_t)d->T, row = t % BT;
        uint64_t j = (uint64_t)(kv_rng_uniform(d->seed, 65 + i, 0) * (double)(row + 1)) % (row + 1);
        size_t at = (size_t)(r * BT + j);
        if (d->A->dtype == KV_F32) memcpy((char *)d->A->data + 4 * at, &a_f32[i], 4);
        else memcpy((char *)d->A->data + 2 * at, &a_bf16[i], 2);
    }
}

/* --dist dense: the strictly upper triangle of each chunk's A (within its
 * rows) gets seeded N(0, 1/16) values; g decays 16 times slower, so that the
 * later rows of a chunk weigh in about as the first do. */
static void dense_A(const struct kv_gdn_inputs *d)
{
    const int64_t rows = d->B * d->T * d->H;
#pragma omp parallel for schedule(dynamic, 16)
    for (int64_t r = 0; r < rows; r++) {
        int64_t t = (r / d->H) % d->T, i = t % BT, t0 = t - i, nv = d->T - t0 < BT ? d->T - t0 : BT;
        for (int64_t j = i + 1; j < nv; j++)
            kv_store_f64(d->A->dtype, d->A->data, (size_t)(r * BT + j),
                         (float)(0.25 * kv_rng_normal(d->seed, 70, (uint64_t)(r * BT + j))));
    }
}

/* Normals drawn at a time (a block of 128 alone draws a quarter slower). */
#define DRAWS 4096

/* One key vector, L2-normalised unless random, from its normals z (K of
 * them, from its row's first index), or (z NULL, K past DRAWS) drawn here a
 * block at a time and normalised from their bf16 values. */
static void key_row(const struct kv_gdn_inputs *d, int64_t r, int random, const double *z)
{
    double nrm = 0, x[DRAWS];
    uint16_t *kr = d->k + r * d->K;
    if (z) {
        for (int64_t e = 0; e < d->K; e++) nrm += z[e] * z[e];
        for (int64_t e = 0; e < d->K; e++) x[e] = random ? z[e] : z[e] / sqrt(nrm);
        kv_store_f64_n(KV_BF16, d->k, (size_t)(r * d->K), x, (size_t)d->K);
        return;
    }
    for (int64_t e0 = 0; e0 < d->K; e0 += DRAWS) {
        const int64_t m = d->K - e0 < DRAWS ? d->K - e0 : DRAWS;
        kv_rng_normal_block(d->seed, R_K, (uint64_t)(r * d->K + e0), (size_t)m, x);
        for (int64_t e = 0; e < m; e++) nrm += x[e] * x[e], kr[e0 + e] = kv_f32_to_bf16((float)x[e]);
    }
    for (int64_t e = 0; !random && e < d->K; e++) kr[e] = kv_f32_to_bf16(kv_bf16_to_f32(kr[e]) / (float)sqrt(nrm));
}

/* Every key row, DRAWS / K rows' normals drawn in one block where K fits
 * one (each value depends on its index alone: the same values). */
static void all_keys(const struct kv_gdn_inputs *d, int random)
{
    const int64_t rows = d->B * d->T * d->Hg, per = d->K <= DRAWS ? DRAWS / d->K : 1;
#pragma omp parallel for schedule(dynamic, 4)
    for (int64_t r0 = 0; r0 < rows; r0 += per) {
        double z[DRAWS];
        const int64_t r1 = rows - r0 < per ? rows : r0 + per;
        if (d->K <= DRAWS) kv_rng_normal_block(d->seed, R_K, (uint64_t)(r0 * d->K), (size_t)((r1 - r0) * d->K), z);
        for (int64_t r = r0; r < r1; r++) key_row(d, r, random, d->K <= DRAWS ? z + (r - r0) * d->K : NULL);
    }
}

/* beta = sigmoid(N(0,1)); g = chunk-cumulative log(sigmoid(N(0,1))) (16
 * times slower where dense), clipped at -20: per chunk of a sequence, its
 * rows' normals drawn in blocks of whole time steps (rows (b T + t) H + h
 * of every head h), then each head's sum over the chunk's steps in order. */
static void beta_g(const struct kv_gdn_inputs *d, int dense)
{
    const int64_t NT = (d->T + BT - 1) / BT, H = d->H, steps = H <= DRAWS ? DRAWS / H : 1;
#pragma omp parallel for schedule(dynamic)
    for (int64_t item = 0; item < d->B * NT; item++) {
        const int64_t b = item / NT, t0 = item % NT * BT, n = d->T - t0 < BT ? d->T - t0 : BT;
        double zb[DRAWS], zg[DRAWS], acc[DRAWS];
        for (int64_t h0 = 0; h0 < H; h0 += DRAWS) { /* heads h0 .. h1 - 1 side by side */
            const int64_t h1 = H - h0 < DRAWS ? H : h0 + DRAWS, nh = h1 - h0;
            for (int64_t h = 0; h < nh; h++) acc[h] = 0;
            for (int64_t i0 = 0; i0 < n; i0 += steps) { /* steps i0 .. i1 - 1, nh heads each */
                const int64_t i1 = n - i0 < steps ? n : i0 + steps, r0 = (b * d->T + t0 + i0) * H + h0;
                const size_t m = (size_t)((i1 - i0) * nh); /* contiguous: every head, or one step */
                kv_rng_normal_block(d->seed, R_BETA, (uint64_t)r0, m, zb);
                kv_rng_normal_block(d->seed, R_G, (uint64_t)r0, m, zg);
                for (int64_t i = i0; i < i1; i++)
                    for (int64_t h = 0; h < nh; h++) {
                        const int64_t ri = (b * d->T + t0 + i) * H + h0 + h, q = (i - i0) * nh + h;
                        d->beta[ri] = (float)(1 / (1 + exp(-zb[q])));
                        acc[h] += -log1p(exp(-zg[q])) * (dense ? 1.0 / 16 : 1.0);
                        d->g[ri] = (float)fmax(acc[h], -20.0);
                    }
            }
        }
    }
}

/* A value in {-1, 0, 1} from a uniform draw (0 a third of the time). */
static double trit(double u) { return u < 1.0 / 3 ? -1.0 : u < 2.0 / 3 ? 0.0 : 1.0; }

/* --dist grid: inputs on which every product and every partial sum of u and
 * w is exact in f32 (gdn-wu's oracle then allows an output its final
 * rounding alone), built so that an error in A's lowest bits flips that
 * rounding. k and v are -1, 0 or 1, beta 1 and g 0, so the staged values are
 * -1, 0 or 1. Row i of a chunk's A (each of its nv columns; 1 past them) is
 * m 2^-9 + f 2^-23 with integers m and f: m in [512, 576) on the diagonal, in
 * +-[32, 128) at two seeded columns, -1, 0 or 1 elsewhere; f is -1 or 1 an
 * eighth of the time each, else 0. A's entries are then multiples of 2^-23
 * whose magnitudes sum to under 1.75 (< 2^(-23+24)): each sum is exact. A
 * sum's multiple of 2^-9 is a bf16 midpoint for many sums past 0.5, and f's
 * few terms push it off by a few 2^-23: dropping or misplacing a low bit of
 * A (bf16-coopmat's three-part split) rounds it the other way. */
static void grid_inputs(const struct kv_gdn_inputs *d)
{
    const int64_t nk = d->B * d->T * d->Hg * d->K, nv = d->B * d->T * d->H * d->V, rows = d->B * d->T * d->H;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nk; i++) d->k[i] = kv_f32_to_bf16((float)trit(kv_rng_uniform(d->seed, 90, (uint64_t)i)));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nv; i++) d->v[i] = kv_f32_to_bf16((float)trit(kv_rng_uniform(d->seed, 91, (uint64_t)i)));
#pragma omp parallel for schedule(dynamic, 16)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t t = (r / d->H) % d->T, i = t % BT, t0 = t - i, n = d->T - t0 < BT ? d->T - t0 : BT;
        const int64_t j1 = (int64_t)(kv_rng_uniform(d->seed, 92, (uint64_t)r) * (double)n) % n;
        const int64_t j2 = (int64_t)(kv_rng_uniform(d->seed, 93, (uint64_t)r) * (double)n) % n;
        double a[BT];
        d->beta[r] = 1, d->g[r] = 0;
        for (int64_t j = 0; j < BT; j++) {
            const uint64_t e = (uint64_t)(r * BT + j);
            const double u = kv_rng_uniform(d->seed, 94, e), f = kv_rng_uniform(d->seed, 95, e);
            const double m = j == i ? 512 + floor(64 * u)
                             : j == j1 || j == j2 ? (u < 0.5 ? -1 : 1) * (32 + floor(96 * (2 * fmod(u, 0.5))))
                                                  : trit(u);
            a[j] = j >= n ? 1.0 : m * 0x1p-9 + (f < 0.125 ? -1 : f < 0.25 ? 1 : 0) * 0x1p-23;
        }
        kv_store_f64_n(d->A->dtype, d->A->data, (size_t)(r * BT), a, BT);
    }
}

enum kv_status kv_gdn_make_inputs(const struct kv_gdn_inputs *d, char *note, size_t note_size)
{
    if (d->dist == KV_GDN_GRID) {
        grid_inputs(d);
        return KV_OK;
    }
    const int random = d->dist == KV_GDN_RANDOM, dense = d->dist == KV_GDN_DENSE;
    all_keys(d, random);
    kv_rng_normal_bf16(d->seed, R_V, (size_t)(d->B * d->T * d->H * d->V), 1.0, d->v);
    beta_g(d, dense);
    const double cond = all_A(d);
    if (cond < 0) return kv_error(KV_EDEVICE, "out of host memory making A");
    if (cond > 1e4 || isnan(cond))
        snprintf(note, note_size, "A = (I+L)^-1 is ill-conditioned (inf-norm condition up to %.3g): "
                 "errors measure the inputs more than the kernel", cond);
    if (d->dist == KV_GDN_NONFINITE) nonfinite(d);
    if (dense) dense_A(d);
    return KV_OK;
}

enum kv_status kv_gdn_check_shape(int64_t B, int64_t T, int64_t H, int64_t Hg, int64_t K, int64_t V)
{
    if (H % Hg)
        return kv_error(KV_EUSAGE, "--heads %lld is not a multiple of --kv-heads %lld", (long long)H, (long long)Hg);
    int64_t rows = B * T, d = K > V ? K : V;
    if (d < BT) d = BT;
    const int64_t most = (int64_t)1 << 40;
    if (B > most / T || rows > most / H || rows * H > most / d)
        return kv_error(KV_EUSAGE, "--batch x --seq x --heads x max(--dk, --dv, 64) is more than 2^40 elements");
    return KV_OK;
}
