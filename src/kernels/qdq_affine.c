/* qdq-affine: affine quant-dequant init, forward and backward (kernels.md,
 * seed 002). Per group g of group_size elements, N = 2^bits - 1:
 *   init:    lo = min w_g, hi = max w_g, s = (hi - lo)/N, b = lo,
 *            q[i] = clamp(round_half_away((w[i] - b)/s), 0, N)        (u8)
 *   forward: qdq[i] = q[i]*s[g] + b[g]
 *   bwd:     d_scales[g] = sum_i q[i]*dy[i],  d_biases[g] = sum_i dy[i]
 * Behaviour the seed leaves open, decided here (man kverify: qdq-affine):
 * - a scale that is not a normal number (s < 2^-126: a constant group, or a
 *   range so small that s underflows) becomes 1. Vulkan lets a device flush
 *   subnormals and bounds division only for divisors >= 2^-126, so this is
 *   the one outcome every device agrees on;
 * - a group containing NaN, or no finite value, or whose range hi - lo
 *   overflows float32, has no affine encoding: scale and bias are NaN and its
 *   codes are 0, so forward gives NaN for the whole group;
 * - otherwise the range is that of the finite values and +-Inf clip like any
 *   value beyond it: +Inf gets code N, -Inf code 0.
 * A device may also flush subnormal operands and results to zero: float
 * outputs get an absolute allowance of 2^-126 per operation, codes may be
 * those of a model that flushes every subnormal, or of one whose min and
 * max alone flush (counted as "flushed"), and so may a scale that the first
 * makes 1, or a normal scale it finds where the exact one is not (a
 * positive subnormal low value flushed to 0 widens the range) and becomes
 * 1: that group's scale has an allowance about 1. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "core/clones.h"
#include "kernels/kernel.h"
#include "kernels/qdq_codes.h"
#include "kernels/qdq_inputs.h"

static const uint32_t init_sh[] =
#include "qdq_affine_init.sh.h"
    ;
static const uint32_t init_sh8[] =
#include "qdq_affine_init.sh8.h"
    ;
static const uint32_t fwd_sh[] =
#include "qdq_affine_forward.sh.h"
    ;
static const uint32_t dsc_sh[] =
#include "qdq_affine_bwd_scales.sh.h"
    ;
static const uint32_t dbi_sh[] =
#include "qdq_affine_bwd_biases.sh.h"
    ;

enum { P_GROUPS, P_GS, P_BITS, P_DIST, P_SCALE };
enum { T_W, T_DY, T_S, T_B, T_Q, T_QDQ, T_DS, T_DB };
enum { S_INIT, S_FWD, S_DSC, S_DBI };
/* The most elements a case may have (2^32 - 1024): see validate. */
#define KV_QDQ_MAX_N 4294966272u

static const struct kv_param_def params[] = {
    {"groups", KV_PARAM_INT, "4096", 1, 2147483647, NULL, "number of groups", 1},
    {"group-size", KV_PARAM_INT, "64", 2, 1024, NULL, "elements per group (a power of two)", 1},
    {"bits", KV_PARAM_INT, "4", 1, 8, NULL, "code width; codes 0 .. 2^bits-1", 1},
    {"dist", KV_PARAM_CHOICE, "normal", 0, 0, "normal|uniform|outlier|constant|subnormal|ties|nonfinite",
     "w ~ N(0,1); U(-sqrt3,sqrt3); N(0,1) with one x100 outlier per group; constant groups; "
     "subnormal, near-2^-126 and exactly-2^-126 ranges; values exactly on rounding ties; groups with NaN, +-Inf "
     "and ranges at the edge of float32 (overflowing, all FLT_MAX, all -FLT_MAX)", 1},
    {"scale", KV_PARAM_FLOAT, "1", 1e-30, 1e30, NULL, "multiplies w", 0},
};

static const struct kv_tensor_def tensors[] = {
    [T_W] = {"w", KV_F32, KV_INPUT, -1, "groups*group-size"},
    [T_DY] = {"dy", KV_F32, KV_INPUT, -1, "groups*group-size"},
    [T_S] = {"scales", KV_F32, KV_OUTPUT, S_INIT, "groups"},
    [T_B] = {"biases", KV_F32, KV_OUTPUT, S_INIT, "groups"},
    [T_Q] = {"q", KV_U8, KV_OUTPUT, S_INIT, "groups*group-size"},
    [T_QDQ] = {"qdq", KV_F32, KV_OUTPUT, S_FWD, "groups*group-size"},
    [T_DS] = {"d_scales", KV_F32, KV_OUTPUT, S_DSC, "groups"},
    [T_DB] = {"d_biases", KV_F32, KV_OUTPUT, S_DBI, "groups"},
};

static const struct kv_check_def checks[] = {
    {"roundtrip", T_QDQ, "|qdq - w| <= s/2 plus the allowed rounding, on the composed init -> forward result"},
};

struct push {
    uint32_t groups, group_size, bits;
};

/* Workgroups of 256 invocations take tiles of `tile` elements (init: 4 per
 * invocation; the others 16) and grid-stride over tiles. Tiles hold whole
 * groups: group_size divides 1024. */
static void launch_tiles(const struct kv_case *c, const uint32_t max[3], void *push, uint32_t groups[3],
                         uint32_t tile)
{
    struct push *p = push;
    p->groups = (uint32_t)c->p[P_GROUPS].i;
    p->group_size = (uint32_t)c->p[P_GS].i;
    p->bits = (uint32_t)c->p[P_BITS].i;
    groups[0] = kv_groups((uint64_t)c->p[P_GROUPS].i * (uint64_t)c->p[P_GS].i, tile, max[0]);
    groups[1] = groups[2] = 1;
}

static void launch_init(const struct kv_case *c, const uint32_t local[3], const uint32_t max[3], void *push,
                        uint32_t groups[3])
{
    (void)local;
    launch_tiles(c, max, push, groups, 1024);
}

static void launch(const struct kv_case *c, const uint32_t local[3], const uint32_t max[3], void *push,
                   uint32_t groups[3])
{
    (void)local;
    launch_tiles(c, max, push, groups, 4096);
}

#define PUSH_DOC "uint groups; uint group_size; uint bits;"
#define DISPATCH(T)                                                                                        \
    "groups = (min(ceil(groups*group_size / " T "), maxComputeWorkGroupCount.x), 1, 1); a workgroup "   \
    "handles elements [t*" T ", (t+1)*" T ") for tiles t = gl_WorkGroupID.x, +gl_NumWorkGroups.x, ..."

static const struct kv_stage_def stages[] = {
    [S_INIT] = {.name = "init", .subgroup = KV_SPIRV(init_sh), .fallback = KV_SPIRV(init_sh), .n_bindings = 4,
                .bindings = {T_W, T_S, T_B, T_Q}, .push_size = sizeof(struct push), .push_doc = PUSH_DOC,
                .dispatch_doc = DISPATCH("1024"), .launch = launch_init, .subgroup8 = KV_SPIRV(init_sh8),
                .fallback8 = KV_SPIRV(init_sh8), .addr = 1},
    [S_FWD] = {.name = "forward", .subgroup = KV_SPIRV(fwd_sh), .fallback = KV_SPIRV(fwd_sh), .n_bindings = 4,
               .bindings = {T_Q, T_S, T_B, T_QDQ}, .push_size = sizeof(struct push), .push_doc = PUSH_DOC,
               .dispatch_doc = DISPATCH("4096"), .launch = launch, .addr = 1},
    [S_DSC] = {.name = "bwd-scales", .subgroup = KV_SPIRV(dsc_sh), .fallback = KV_SPIRV(dsc_sh),
               .n_bindings = 3, .bindings = {T_Q, T_DY, T_DS}, .push_size = sizeof(struct push),
               .push_doc = PUSH_DOC, .dispatch_doc = DISPATCH("4096"), .launch = launch, .addr = 1},
    [S_DBI] = {.name = "bwd-biases", .subgroup = KV_SPIRV(dbi_sh), .fallback = KV_SPIRV(dbi_sh),
               .n_bindings = 2, .bindings = {T_DY, T_DB}, .push_size = sizeof(struct push),
               .push_doc = PUSH_DOC, .dispatch_doc = DISPATCH("4096"), .launch = launch, .addr = 1},
};

static enum kv_status validate(struct kv_case *c)
{
    int64_t g = c->p[P_GROUPS].i, gs = c->p[P_GS].i;
    if (gs & (gs - 1))
        return kv_error(KV_EUSAGE, "--group-size %lld is not a power of two (2, 4, ..., 1024)", (long long)gs);
    /* The shaders' flat indices are 32-bit unsigned, and the furthest any
     * reaches is its last tile's: element n - 1 + 1020 in init ((n + 1023) /
     * 1024 tiles of 1024), n + 3 in the others' quads. Up to 2^32 - 1024
     * elements none wraps. */
    if (g > (int64_t)KV_QDQ_MAX_N / gs)
        return kv_error(KV_EUSAGE, "--groups %lld x --group-size %lld = %lld elements, more than 2^32-1024",
                        (long long)g, (long long)gs, (long long)(g * gs));
    return KV_OK;
}

/* What oracle() allocates beyond y and S: the slack of scales, biases,
 * d_scales, d_biases and qdq (where qdq is whole); d_scales' chained slack
 * and the scales' alternative, a group each; qdq's chained slack (whole) or
 * each group's state (in blocks); q's tie and flush codes. */
static uint64_t oracle_host(const struct kv_case *c, uint32_t whole, uint32_t sampled, const uint64_t *len)
{
    (void)sampled;
    const uint64_t g = (uint64_t)c->p[P_GROUPS].i, qdq = whole >> T_QDQ & 1;
    return sizeof(double) * (len[T_S] + len[T_B] + len[T_DS] + len[T_DB] + 2 * g +
                             (qdq ? 2 * len[T_QDQ] : 3 * g)) +
           2 * sizeof(int16_t) * len[T_Q];
}

/* ---- inputs (qdq_inputs.c) ---- */

static enum kv_status inputs(struct kv_case *c)
{
    const struct kv_qdq_inputs x = {c->seed, c->p[P_GROUPS].i, c->p[P_GS].i, c->p[P_DIST].c, c->p[P_SCALE].f,
                                    ldexp(1, (int)c->p[P_BITS].i) - 1, c->t[T_W].data, c->t[T_DY].data};
    kv_qdq_inputs(&x);
    return KV_OK;
}

/* ---- oracle ---- */


static enum kv_status alloc_d(double **p, size_t n)
{
    *p = calloc(n ? n : 1, sizeof **p);
    return *p ? KV_OK : kv_error(KV_EDEVICE, "out of host memory for the oracle");
}

/* Tolerances (metrics.md), with u = 2^-24:
 * scales: y = (hi - lo)/N exact, S = y; the device rounds hi - lo (1u) and
 *   divides (2.5 ulp <= 5u): n = 1, k_op = 6. A non-normal scale is 1.
 * biases: y = lo, exact: k_op = 0.
 * q: exact; the tie window is derived at kv_qdq_codes().
 * qdq: y = q*s + b from the oracle's (q, s, b) as float32 (stage isolation),
 *   S = |q*s| + |b|, two roundings: k_op = 2. Chained: the device's s is
 *   within 6u + 0.5 ulp (7u) of exact and q*s carries it: k_chain = 8.
 *   A device code across a tie from q, or one of the flushed model's, adds
 *   the largest of their steps; the tie's, |s|, with the same 10u on it
 *   (forward). Where a scale may be 1 or normal on either side of 2^-126
 *   (kv_qdq_group_of), that branch's codes add their steps too, and a +Inf
 *   element (code N under any scale) the step N |1 - s|.
 * d_scales: n = group_size, S = sum |q*dy|, products 1u: k_op = 1; chained on
 *   the device's codes: each code that may legally sit on the other side of
 *   a tie, or be one of the flushed model's, adds the largest step times |dy|
 *   (slack_chain). d_biases: n = group_size, S = sum |dy|.
 * Subnormals: every float output gets an absolute slack of 2^-126 per
 *   operation that could meet one (a flush changes a result by less). */
/* The forward of code q from the float32 scale and bias (stage isolation),
 * its scale, its slack (three operations that may meet a subnormal) and its
 * chained slack: the device's own code may sit across a tie (alt >= 0), or be
 * one of the flushed model's codes fl (kv_flush_code; with that model's
 * scale fs and low value flo). */
struct fwd {
    double y, S, sl, sc;
};
static inline __attribute__((always_inline)) struct fwd forward(int q, float s_in, float b_in, int alt, int fl,
                                                               const struct kv_qdq_grp *gp)
{
    const double fs = gp->fs, flo = gp->flo;
    struct fwd r = {(double)q * s_in + b_in, fabs((double)q * s_in) + fabs((double)b_in), 3 * QDQ_FMIN, 0};
    /* The device's code is one of q, alt and fl's: the largest step. The tie's
     * carries the device's errors on the magnitude it adds, (k_op + k_chain) u
     * = 10u, which S does not hold: from q = 0 with b = 0, S is 0 and the
     * device's value is its scale alone. (Where the flushed model's code
     * differs at a normal scale, its rounded subtraction moved z by less than
     * the tie window: fl is alt, and its step the tie's.) */
    const double tie = alt >= 0 ? fabs((double)s_in) * (1 + 10 * QDQ_U) : 0;
    const double f1 = fabs((double)kv_flush_code(fl) * fs + flo - r.y);
    const double f2 = fabs((double)kv_flush_other(fl) * fs + flo - r.y);
    /* the same code at a scale of 1 (KV_FLUSH_ONE: a +Inf element where a
     * scale of 1 is legal and a normal one too; f1 takes the other) */
    const double f3 = fabs((double)kv_flush_code(fl) + flo - r.y);
    double flushed = f1 > f2 ? f1 : f2;
    flushed = (fl & KV_FLUSH_ONE) && f3 > flushed ? f3 : flushed;
    flushed = fl >= 0 ? flushed : 0;
    /* the scale's other branch (kv_qdq_group_of): code 0 with scale 1, or
     * any code with a normal scale where the oracle's is 1 */
    const double branch = gp->zc > 0 ? fabs(r.y - (double)b_in) + gp->zc : 0;
    flushed = branch > flushed ? branch : flushed;
    r.sc = r.sl + (tie > flushed ? tie : flushed);
    return r;
}

/* The round-trip check's reference at one element of w, from the forward o
 * of its code: w itself, with half a step of the larger of the two models'
 * scales and the distance between their low values allowed; where w is
 * infinite, the forward with its chained slack (NaN where the group is
 * poisoned). */
static void roundtrip(float w, int poison, const struct fwd *o, float s_in, const struct kv_qdq_grp *gp, double elo,
                      double N, double *y, double *S, double *slack)
{
    const int clipped = isinf(w) || poison;
    const double s_max = fmax(fmax(fabs((double)s_in), gp->fs), gp->zc > 0 ? 1.0 : 0.0); /* a scale of 1 too */
    *y = poison ? NAN : clipped ? o->y : (double)w;
    *S = o->S;
    *slack = clipped ? o->sc : o->sl + 0.5 * s_max * (1 + 16 * QDQ_U * N) + fabs(gp->flo - elo);
}

/* Group g's scale and bias from its encodings e (exact) and f (flushed):
 * values, magnitudes, slacks and the scale's second legal value. */
static void scale_bias(struct kv_case *c, int64_t g, double N, const struct kv_qdq_enc *e, const struct kv_qdq_enc *f)
{
    double s_exact = e->one ? 1.0 : ((double)e->hi - (double)e->lo) / N;
    c->y[T_S][g] = e->poison ? NAN : s_exact;
    c->S[T_S][g] = fabs(c->y[T_S][g]);
    c->y[T_B][g] = e->poison ? NAN : e->lo;
    c->S[T_B][g] = fabs(c->y[T_B][g]);
    /* a device that flushes subnormals may find a range whose scale is not
     * normal, and use 1: the scale its codes (c->flush) are computed with;
     * or a legal division may put either model's scale below 2^-126 */
    const int both = !e->poison && !f->poison;
    c->alt[T_S][g] = both && !e->one && (f->one || e->flip || f->flip) ? 1.0 : NAN;
    /* or the other way round: a positive subnormal low value flushed to 0
     * widens the range, and its scale is normal where the exact one became
     * 1, or a division puts a scale just under 2^-126 at it. That scale,
     * within its own bound, lies in an allowance about 1 */
    double s_normal = 0; /* the largest normal scale a device may find where the oracle's is 1 */
    if (both && e->one && !f->one) s_normal = ((double)f->hi - (double)f->lo) / N;
    if (both && e->one && e->flip) s_normal = fmax(s_normal, e->x);
    if (both && e->one && f->flip) s_normal = fmax(s_normal, f->x);
    c->slack[T_S][g] = 2 * QDQ_FMIN + (s_normal > 0 ? fabs(1.0 - s_normal) + 6 * QDQ_U * s_normal : 0);
    c->slack[T_B][g] = QDQ_FMIN;
}

/* d_scales' chained term of one element: the device's code is one of q,
 * alt (across a tie) and fl's codes (the flushed model's), so its term q dy
 * may differ by the largest of their steps times |dy|. */
static double alt_step(int q, int alt, int fl, float dy)
{
    int f1 = abs(kv_flush_code(fl) - q), f2 = abs(kv_flush_other(fl) - q);
    f1 = f1 > f2 ? f1 : f2;
    if (fl >= 0 && (fl & (KV_FLUSH_ZERO | KV_FLUSH_RANGE)) && q > f1) f1 = q; /* code 0 */
    const double t = alt >= 0 ? 1.0 : 0.0, f = fl >= 0 ? (double)f1 : 0.0;
    return (t > f ? t : f) * fabs((double)dy);
}

/* Group g of every output: scale, bias, codes (with their tie and flushed
 * alternatives), the forward, the round-trip check and the gradients. */
static void oracle_group(struct kv_case *c, int64_t g, double N, struct kv_check_ref *rt)
{
    const int64_t gs = c->p[P_GS].i;
    const float *w = c->t[T_W].data, *dy = c->t[T_DY].data;
    const float *wg = w + g * gs, *dyg = dy + g * gs;
    struct kv_qdq_enc e = kv_qdq_encode(wg, gs, N, 0), f = kv_qdq_encode(wg, gs, N, 1);
    const int blocked = c->blocked[T_QDQ];
    const struct kv_qdq_grp gp = kv_qdq_group_of(&e, &f, N);
    if (blocked) /* for qdq's blocks (grp_at) */
        c->aux[T_QDQ][3 * g] = gp.fs, c->aux[T_QDQ][3 * g + 1] = gp.flo, c->aux[T_QDQ][3 * g + 2] = gp.zc;
    scale_bias(c, g, N, &e, &f);
    /* Stage isolation: later stages see the scale and bias as float32. */
    const float s_in = (float)c->y[T_S][g], b_in = (float)c->y[T_B][g];
    double ds = 0, dsa = 0, db = 0, dba = 0, chain_ds = 0;
    const size_t i0 = (size_t)(g * gs);
    struct kv_oracle_walk pq = kv_oracle_walk(c, T_Q, i0), pd = kv_oracle_walk(c, T_QDQ, i0);
    struct kv_tensor *iso = c->compact[T_Q] ? &c->iso[T_Q] : NULL; /* the forward's whole input */
    int qs[KV_QDQ_LANES], alts[KV_QDQ_LANES], fqs[KV_QDQ_LANES];
    const int lanes = !iso && blocked && !rt->y; /* every code held, the forward made in blocks */
    if (lanes) { /* the element loop below, a lane block at a time */
        uint8_t *restrict q8 = (uint8_t *)c->iso[T_Q].data + i0; /* qdq made in blocks: so is q, as bytes */
        int16_t *restrict tq = c->tie[T_Q] + i0, *restrict fqo = c->flush[T_Q] + i0;
        for (int64_t j0 = 0; j0 < gs; j0 += KV_QDQ_LANES) {
            const int64_t m = gs - j0 < KV_QDQ_LANES ? gs - j0 : KV_QDQ_LANES;
            kv_qdq_codes(wg + j0, (size_t)m, N, &e, &f, qs, alts, fqs);
            for (int64_t k = 0; k < m; k++) {
                const int fl = kv_qdq_flush_entry(wg[j0 + k], qs[k], fqs[k], &e, &f, &gp, N);
                q8[j0 + k] = (uint8_t)qs[k], tq[j0 + k] = (int16_t)alts[k], fqo[j0 + k] = (int16_t)fl;
            }
            for (int64_t k = 0; k < m; k++) { /* the backward's sums, in order */
                const int q = qs[k];
                const double t = (double)q * dyg[j0 + k];
                ds += t, dsa += fabs(t), db += dyg[j0 + k], dba += fabs((double)dyg[j0 + k]);
                chain_ds += alt_step(q, alts[k], fqo[j0 + k], dyg[j0 + k]); /* fl, as stored above */
            }
        }
    }
    for (int64_t j = 0; j < (lanes ? 0 : gs); j++) {
        const size_t i = (size_t)(g * gs + j);
        size_t a;
        if (j % KV_QDQ_LANES == 0)
            kv_qdq_codes(wg + j, (size_t)(gs - j < KV_QDQ_LANES ? gs - j : KV_QDQ_LANES), N, &e, &f, qs, alts, fqs);
        const int q = qs[j % KV_QDQ_LANES], alt = alts[j % KV_QDQ_LANES], fq = fqs[j % KV_QDQ_LANES];
        const int fl = kv_qdq_flush_entry(wg[j], q, fq, &e, &f, &gp, N);
        if (iso) kv_store_f64(KV_U8, iso->data, i, q);
        /* a code's scale is 0: S[T_Q] keeps calloc's zeros, never written (so never resident) */
        /* not in blocks here (they take the lanes above): the codes as float64 */
        if (kv_oracle_next(&pq, i, &a)) c->y[T_Q][a] = q, c->tie[T_Q][a] = (int16_t)alt, c->flush[T_Q][a] = (int16_t)fl;
        if (kv_oracle_next(&pd, i, &a) && (!blocked || rt->y)) {
            /* forward, from the float32 (q, s, b) */
            const struct fwd o = forward(q, s_in, b_in, alt, fl, &gp);
            if (!blocked) /* else made by oracle_block */
                c->y[T_QDQ][a] = o.y, c->S[T_QDQ][a] = o.S, c->slack[T_QDQ][a] = o.sl,
                c->slack_chain[T_QDQ][a] = o.sc;
            if (rt->y) /* else made by check_block */
                roundtrip(wg[j], e.poison, &o, s_in, &gp, e.lo, N, rt->y + a, rt->S + a, rt->slack + a);
        }
        /* backward */
        double t = (double)q * dyg[j];
        ds += t, dsa += fabs(t), db += dyg[j], dba += fabs((double)dyg[j]);
        chain_ds += alt_step(q, alt, fl, dyg[j]);
    }
    c->y[T_DS][g] = ds, c->S[T_DS][g] = dsa;
    c->y[T_DB][g] = db, c->S[T_DB][g] = dba;
    c->slack[T_DS][g] = c->slack[T_DB][g] = 2.0 * (double)gs * QDQ_FMIN;
    /* the device's sum over its own codes also rounds the terms where they
     * differ (a product 1u, the sum lambda sqrt(n) u), which S, of the
     * oracle's codes, does not hold */
    c->slack_chain[T_DS][g] = c->slack[T_DS][g] + chain_ds * (1 + (8 * sqrt((double)gs) + 1) * QDQ_U);
}

/* Group g's alternatives as oracle_group kept them for the blocks (the
 * flags, and a +Inf element's entry, are in each element's flush entry). */
static struct kv_qdq_grp grp_at(const struct kv_case *c, size_t g)
{
    const double *a = c->aux[T_QDQ] + 3 * g;
    return (struct kv_qdq_grp){a[0], a[1], a[2], 0, -1};
}

/* The forwards of n codes q of one group (the oracle's, as bytes: where qdq
 * is made in blocks, so is q), into y, S and (where given) slack: the plain
 * or the chained slack. A loop that vectorizes, for oracle_block. */
KV_CLONES static void forward_run(const uint8_t *restrict q, const int16_t *restrict tie, const int16_t *restrict fl,
                                  size_t n, float s_in, float b_in, struct kv_qdq_grp gp, int chained,
                                  double *restrict y, double *restrict S, double *restrict slack)
{
    /* a loop for each slack: the vectorizer does not take a select on a
     * flag the loop does not change */
    if (slack && chained) {
        for (size_t i = 0; i < n; i++) {
            const struct fwd o = forward(q[i], s_in, b_in, tie[i], fl[i], &gp);
            y[i] = o.y, S[i] = o.S, slack[i] = o.sc;
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct fwd o = forward(q[i], s_in, b_in, tie[i], fl[i], &gp);
        y[i] = o.y, S[i] = o.S;
        if (slack) slack[i] = o.sl;
    }
}

/* q's oracle for the flat elements [lo, hi): the codes, of scale 0. */
KV_CLONES static void codes_block(const uint8_t *restrict q, size_t n, double *restrict y, double *restrict S)
{
    for (size_t i = 0; i < n; i++) y[i] = q[i], S[i] = 0;
}

/* q's or qdq's oracle for the flat elements [lo, hi) (oracle_block), as
 * oracle_group makes it: the codes; qdq's from the codes with their tie and
 * flushed alternatives, the scales and biases, and each group's flushed s
 * and lo. */
static enum kv_status oracle_block(const struct kv_case *c, int t, size_t lo, size_t hi, int chained,
                                   const struct kv_oracle_block *b)
{
    if (t == T_Q && c->blocked[T_Q]) {
        codes_block((const uint8_t *)c->iso[T_Q].data + lo, hi - lo, b->y, b->S);
        return KV_OK;
    }
    if (t != T_QDQ) return kv_error(KV_EDEVICE, "qdq-affine: no block oracle for %s", c->k->tensors[t].name);
    const uint8_t *q = c->iso[T_Q].data;
    const size_t gs = (size_t)c->p[P_GS].i;
    for (size_t g = lo / gs, i = lo; i < hi; g++) { /* a group's elements at a time: no division per element */
        const float s_in = (float)c->y[T_S][g], b_in = (float)c->y[T_B][g];
        const struct kv_qdq_grp gp = grp_at(c, g);
        const size_t end = (g + 1) * gs < hi ? (g + 1) * gs : hi;
        double *y = b->y + (i - lo), *S = b->S + (i - lo), *slack = b->slack ? b->slack + (i - lo) : NULL;
        forward_run(q + i, c->tie[T_Q] + i, c->flush[T_Q] + i, end - i, s_in, b_in, gp, chained, y, S, slack);
        i = end;
    }
    return KV_OK;
}

static enum kv_status oracle(struct kv_case *c)
{
    const int64_t groups = c->p[P_GROUPS].i, gs = c->p[P_GS].i;
    const double N = ldexp(1, (int)c->p[P_BITS].i) - 1;
    enum kv_status st = KV_OK;
    const size_t nq = kv_oracle_len(c, T_Q), nd = kv_oracle_len(c, T_QDQ); /* n, or the samples (compact) */
    /* qdq's blocks read q's bytes (c->iso): made in blocks alike (the same
     * conditions, run.c, and the same length) */
    KV_CHECK(c->blocked[T_Q] == c->blocked[T_QDQ] && (!c->blocked[T_Q] || c->iso[T_Q].data), KV_EDEVICE,
             "internal: qdq-affine's q and qdq not made in blocks alike");
    for (int t = T_S; t <= T_DB; t++)
        if (t != T_Q && !(t == T_QDQ && c->blocked[t])) KV_TRY(alloc_d(&c->slack[t], kv_oracle_len(c, t)));
    if (c->blocked[T_QDQ]) KV_TRY(alloc_d(&c->aux[T_QDQ], 3 * (size_t)groups)); /* each group's struct kv_qdq_grp */
    else KV_TRY(alloc_d(&c->slack_chain[T_QDQ], nd));
    KV_TRY(alloc_d(&c->slack_chain[T_DS], (size_t)groups));
    KV_TRY(alloc_d(&c->alt[T_S], (size_t)groups));
    c->tie[T_Q] = kv_malloc_big(nq * sizeof(int16_t)); /* every element written: huge pages, fewer faults and a faster free */
    c->flush[T_Q] = kv_malloc_big(nq * sizeof(int16_t));
    KV_CHECK(c->tie[T_Q] && c->flush[T_Q], KV_EDEVICE, "out of host memory for the oracle");
    struct kv_check_ref *rt = &c->chk[0];
    if (!kv_check_blocked(c, 0)) { /* else made by check_block */
        KV_TRY(alloc_d(&rt->y, nd));
        KV_TRY(alloc_d(&rt->S, nd));
        KV_TRY(alloc_d(&rt->slack, nd));
    }

#pragma omp parallel for schedule(static)
    for (int64_t g = 0; g < groups; g++) oracle_group(c, g, N, rt);
    c->bound[T_S] = (struct kv_bound){.n = 1, .k_op = 6, .u_acc = QDQ_U, .rho = 1};
    c->bound[T_B] = (struct kv_bound){.n = 1, .k_op = 0, .u_acc = QDQ_U, .rho = 1};
    c->bound[T_Q] = (struct kv_bound){.n = 1, .k_op = 0, .u_acc = QDQ_U, .rho = 1};
    c->bound[T_QDQ] = (struct kv_bound){.n = 1, .k_op = 2, .u_acc = QDQ_U, .rho = 1};
    c->bound[T_DS] = (struct kv_bound){.n = (double)gs, .k_op = 1, .u_acc = QDQ_U, .rho = 1};
    c->bound[T_DB] = (struct kv_bound){.n = (double)gs, .k_op = 0, .u_acc = QDQ_U, .rho = 1};
    c->k_chain[T_QDQ] = 8;
    rt->bound = c->bound[T_QDQ];
    rt->bound.k_op += 8;
cleanup:
    return st;
}

/* The round-trip check's references of n elements w of one group, from
 * their codes q (bytes, as in forward_run) with their tie and flushed
 * alternatives: a loop that vectorizes, for check_block. */
KV_CLONES static void roundtrip_run(const uint8_t *restrict q, const int16_t *restrict tie, const int16_t *restrict fl,
                                    const float *restrict w, size_t n, float s_in, struct kv_qdq_grp gp, double elo,
                                    double N, double *restrict y, double *restrict S, double *restrict slack)
{
    const int poison = isnan(elo);
    for (size_t i = 0; i < n; i++) {
        const struct fwd o = forward(q[i], s_in, (float)elo, tie[i], fl[i], &gp);
        roundtrip(w[i], poison, &o, s_in, &gp, elo, N, y + i, S + i, slack + i);
    }
}

/* The round-trip check's reference for the flat elements [lo, hi)
 * (check_block), as oracle_group makes it: from the codes, the scales and
 * biases (NaN where the group is poisoned) and each group's flushed s and lo. */
static enum kv_status check_block(const struct kv_case *c, int j, size_t lo, size_t hi, const struct kv_oracle_block *b)
{
    if (j != 0) return kv_error(KV_EDEVICE, "qdq-affine: no block reference for check %d", j);
    const size_t gs = (size_t)c->p[P_GS].i;
    const double N = ldexp(1, (int)c->p[P_BITS].i) - 1;
    const float *w = c->t[T_W].data;
    const uint8_t *q = c->iso[T_Q].data;
    for (size_t g = lo / gs, i = lo; i < hi; g++) { /* as in oracle_block */
        const double elo = c->y[T_B][g];
        const struct kv_qdq_grp gp = grp_at(c, g);
        const size_t end = (g + 1) * gs < hi ? (g + 1) * gs : hi;
        const float s_in = (float)c->y[T_S][g];
        double *y = b->y + (i - lo), *S = b->S + (i - lo), *slack = b->slack + (i - lo);
        roundtrip_run(q + i, c->tie[T_Q] + i, c->flush[T_Q] + i, w + i, end - i, s_in, gp, elo, N, y, S, slack);
        i = end;
    }
    return KV_OK;
}

static const char *const sweep[] = {
    "groups=1,group-size=2,bits=1",
    "groups=3,group-size=2,bits=8",
    "groups=5,group-size=1024,bits=4",
    "groups=7,group-size=1024,bits=8,dist=uniform",
    "groups=257,group-size=128,bits=2",
    "groups=1000,group-size=4,bits=5",
    "groups=33,group-size=64,bits=4,dist=outlier",
    "groups=9,group-size=16,bits=3,dist=constant",
    "groups=16,group-size=32,bits=4,dist=subnormal",
    "groups=64,group-size=8,bits=1,dist=ties",
    "groups=64,group-size=16,bits=4,dist=ties",
    "groups=28,group-size=8,bits=4,dist=nonfinite",
    "groups=9,group-size=2,bits=4",
    "groups=11,group-size=2,bits=3,dist=nonfinite",
    "groups=2050,group-size=2,bits=4", /* groups of 2 in every stride of two tiles, n % 4 == 0 */
    "groups=16,group-size=32,bits=1,dist=subnormal",
    NULL,
};

const struct kv_kernel kv_kernel_qdq_affine = {
    .name = "qdq-affine",
    .summary = "affine quant-dequant: init (scales, biases, u8 codes), forward, backward (f32)",
    .params = params,
    .n_params = KV_COUNT(params),
    .tensors = tensors,
    .n_tensors = KV_COUNT(tensors),
    .stages = stages,
    .n_stages = KV_COUNT(stages),
    .checks = checks,
    .n_checks = KV_COUNT(checks),
    .sweep = sweep,
    .sweep_seeds = 8,
    .validate = validate,
    .oracle_host = oracle_host,
    .inputs = inputs,
    .oracle = oracle,
    .sample_outputs = 1ull << T_Q | 1ull << T_QDQ,
    .oracle_block = oracle_block,
    .block_outputs = 1ull << T_Q | 1ull << T_QDQ,
    .block_iso = 1ull << T_Q,
    .block_slack = 1ull << T_QDQ,
    .check_block = check_block,
    .block_checks = 1,
};
