/* qdq-affine's inputs: w by its --dist, dy ~ N(0,1), each element's value
 * from (seed, stream, index) alone (core/rng.h). */
#include "kernels/qdq_inputs.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "core/dtype.h"
#include "core/rng.h"

/* The streams: w's and dy's are their tensors' indices in qdq_affine.c, as
 * they have been since the first generator (changed, every case's inputs
 * would change). */
enum { T_W = 0, T_DY = 1 };
enum { D_NORMAL = KV_QDQ_NORMAL, D_UNIFORM, D_OUTLIER, D_CONSTANT, D_SUBNORMAL, D_TIES, D_NONFINITE };

static double normal(const struct kv_qdq_inputs *c, uint32_t stream, int64_t i)
{
    return kv_rng_normal(c->seed, stream, (uint64_t)i);
}

/* One group of dist D_TIES: lo, lo + N*2^e (so s = 2^e exactly) and values
 * lo + (k + 1/2)*2^e exactly on the ties between codes k and k+1. */
static void ties_group(const struct kv_qdq_inputs *c, int64_t g, int64_t gs, double N, float *w)
{
    int e = (int)floor(kv_rng_uniform(c->seed, 7, (uint64_t)g) * 8.0) - 6;
    double lo = ldexp(floor(normal(c, 8, g) * 64.0), e); /* a multiple of 2^e: every sum below is exact */
    for (int64_t j = 0; j < gs; j++) {
        double k = floor(kv_rng_uniform(c->seed, T_W, (uint64_t)(g * gs + j)) * N);
        double v = j == 0 ? lo : j == 1 ? lo + N * ldexp(1, e) : lo + (k + 0.5) * ldexp(1, e);
        w[j] = (float)v;
    }
}

/* Seven kinds of group in turn: NaN, +Inf, -Inf, both infinities, a range
 * at the edge of float32 (in turn: one that overflows, every value FLT_MAX,
 * every value -FLT_MAX: an initial min or max short of the float range
 * shows), a negative NaN whose payload is its lowest bit alone (a NaN that a
 * mask missing a bit of the exponent or the mantissa takes for a finite
 * number or an infinity), and a plain one. */
static void nonfinite_group(const struct kv_qdq_inputs *c, int64_t g, int64_t gs, float *w)
{
    int64_t at = (int64_t)(kv_rng_uniform(c->seed, 9, (uint64_t)g) * (double)gs);
    for (int64_t j = 0; j < gs; j++) w[j] = (float)normal(c, T_W, g * gs + j);
    uint32_t odd_nan = 0xFF800001u;
    switch (g % 7) {
    case 0: w[at] = NAN; break;
    case 5: memcpy(&w[at], &odd_nan, 4); break;
    case 1: w[at] = INFINITY; break;
    case 2: w[at] = -INFINITY; break;
    case 3: w[at] = INFINITY, w[(at + 1) % gs] = -INFINITY; break;
    case 4: {
        const int64_t edge = (g / 7) % 3; /* overflowing, all FLT_MAX, all -FLT_MAX */
        if (edge == 0) w[at] = 3e38f, w[(at + 1) % gs] = -3e38f;
        else for (int64_t j = 0; j < gs; j++) w[j] = edge == 1 ? FLT_MAX : -FLT_MAX;
        break;
    }
    default: break;
    }
}

void kv_qdq_inputs(const struct kv_qdq_inputs *c)
{
    const int64_t groups = c->groups, gs = c->gs;
    const int dist = c->dist;
    const double scale = c->scale, N = c->N;
    float *w = c->w, *dy = c->dy;
    /* Batches of B elements, whole groups (a group has at most 1024, a power
     * of two), so that the normal samples come B at a time: drawn a group at
     * a time, short blocks spent about twice the draws on their rejected
     * lanes' tails (and 1024 a few percent more than 4096). Dynamic, 4
     * batches a chunk: the device may be opening on another thread (jobs.c). */
    enum { B = 4096 };
    const int64_t n = groups * gs;
    const int normals = dist == D_NORMAL || dist == D_OUTLIER || dist == D_SUBNORMAL;
#pragma omp parallel for schedule(dynamic, 4)
    for (int64_t i0 = 0; i0 < n; i0 += B) {
        const int64_t m = n - i0 < B ? n - i0 : B;
        double vw[B], vdy[B];
        if (normals) kv_rng_normal_block(c->seed, T_W, (uint64_t)i0, (size_t)m, vw);
        kv_rng_normal_block(c->seed, T_DY, (uint64_t)i0, (size_t)m, vdy);
        kv_store_f64_n(KV_F32, dy, (size_t)i0, vdy, (size_t)m);
        if (dist == D_NORMAL) { /* the loop below's values, in a loop without a branch */
            for (int64_t k = 0; k < m; k++) vw[k] *= scale;
            kv_store_f64_n(KV_F32, w, (size_t)i0, vw, (size_t)m);
            continue;
        }
        for (int64_t g = i0 / gs; g < (i0 + m) / gs; g++) {
            float *wg = w + g * gs;
            const double *vg = vw + (g * gs - i0);
            if (dist == D_TIES) ties_group(c, g, gs, N, wg);
            else if (dist == D_NONFINITE) nonfinite_group(c, g, gs, wg);
            const double cg = dist == D_CONSTANT ? normal(c, 10, g) : 0.0;
            for (int64_t j = 0; j < gs; j++) {
                int64_t i = g * gs + j;
                double v = normals ? vg[j] : 0.0;
                switch (dist) {
                case D_UNIFORM: v = (2.0 * kv_rng_uniform(c->seed, T_W, (uint64_t)i) - 1.0) * sqrt(3.0); break;
                case D_OUTLIER: v *= j == (g * 7) % gs ? 100.0 : 1.0; break;
                case D_CONSTANT: v = cg; break;
                /* Even groups all subnormal; odd ones near 2^-124, so s is near 2^-126;
                 * every fourth from 0 to N*2^-126, so s is exactly 2^-126, except,
                 * with one bit (N = 1, an exact division), every eighth from 0 to
                 * the largest subnormal: s = 2^-126 - 2^-149 becomes 1. */
                case D_SUBNORMAL:
                    v = g % 4 == 3 ? (j == 0   ? 0
                                      : j == 1 ? (N == 1 && g % 8 == 7 ? 0x1.fffffcp-127 : ldexp(N, -126))
                                               : ldexp(floor(N * kv_rng_uniform(c->seed, 11, (uint64_t)i)), -126))
                                   : ldexp(v, g % 2 ? -124 : -130);
                    break;
                default: break;
                }
                if (dist != D_TIES && dist != D_NONFINITE) wg[j] = (float)(v * scale);
                else if (scale != 1.0) wg[j] = (float)((double)wg[j] * scale);
            }
        }
    }
}

