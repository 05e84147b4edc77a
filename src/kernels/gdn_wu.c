/* gdn-wu: gated delta net recompute of w and u in bf16 (kernels.md, seed 003,
 * after FLA's recompute_w_u_fwd). Chunks of BT = 64 rows; for batch b, chunk
 * rows t0.., head h and key head kh = h / (H/Hg):
 *   u[t0+i,h,:] = sum_j A[t0+i,h,j] * bf16(v[t0+j,h,:] * beta[t0+j,h])
 *   w[t0+i,h,:] = sum_j A[t0+i,h,j] * bf16(k[t0+j,kh,:] * beta[t0+j,h] * exp(g[t0+j,h]))
 * with f32 accumulation and one final round to bf16. The port masks the
 * partial last chunk (rows past T stage as zero and are not written) and
 * takes any K, V >= 1. bf16 is held as 16-bit words (16-bit storage) and
 * converted by bit operations, round to nearest even, NaN kept.
 * Variant bf16-coopmat: the products on bf16 cooperative matrices (tensor
 * cores; VK_KHR_cooperative_matrix, VK_KHR_shader_bfloat16), with A split
 * exactly into three bf16 parts (shaders/gdn_wu_cm.glsl); skipped on devices
 * without them. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clones.h"
#include "core/tensor.h"
#include "kernels/gdn_inputs.h"
#include "kernels/gdn_prod.h"
#include "kernels/kernel.h"

static const uint32_t u_sh[] =
#include "gdn_wu_u.sh.h"
    ;
static const uint32_t w_sh[] =
#include "gdn_wu_w.sh.h"
    ;
static const uint32_t u_ab[] =
#include "gdn_wu_u.ab.h"
    ;
static const uint32_t w_ab[] =
#include "gdn_wu_w.ab.h"
    ;
static const uint32_t u_cm[] =
#include "gdn_wu_u.cm.h"
    ;
static const uint32_t w_cm[] =
#include "gdn_wu_w.cm.h"
    ;

#define BT 64

enum { P_B, P_T, P_H, P_HG, P_K, P_V, P_DIST, P_VARIANT };
enum { T_K, T_V, T_BETA, T_G, T_A, T_W, T_U, T_W_CM, T_U_CM, T_A16, T_W_AB, T_U_AB };
enum { S_U, S_W, S_U_CM, S_W_CM, S_U_AB, S_W_AB };
enum { D_REALISTIC, D_RANDOM, D_NONFINITE, D_DENSE, D_GRID };
enum { V_FMA, V_CM, V_AB };

static const struct kv_param_def params[] = {
    {"batch", KV_PARAM_INT, "1", 1, 65536, NULL, "batch size B", 1},
    {"seq", KV_PARAM_INT, "256", 1, 2147483647, NULL, "sequence length T (any; a partial last chunk is masked)", 1},
    {"heads", KV_PARAM_INT, "4", 1, 65536, NULL, "value heads H (a multiple of --kv-heads)", 1},
    {"kv-heads", KV_PARAM_INT, "2", 1, 65536, NULL, "key heads Hg", 1},
    {"dk", KV_PARAM_INT, "128", 1, 65536, NULL, "key dimension K (any)", 1},
    {"dv", KV_PARAM_INT, "128", 1, 65536, NULL, "value dimension V (any)", 1},
    {"dist", KV_PARAM_CHOICE, "realistic", 0, 0, "realistic|random|nonfinite|dense|grid",
     "FLA's inputs (L2-normalised k, beta = sigmoid, chunk-cumulative log-sigmoid g, A = (I+L)^-1), "
     "or unnormalised N(0,1) k (A is then ill-conditioned: a stress test), or FLA's with a few NaN and "
     "+-Inf in k, v, beta and A (the shaders' non-finite paths; NaNs only in k and v with bf16-coopmat, whose "
     "three-part split of A multiplies zero parts by Inf), or FLA's with A's strictly upper triangle filled too (the "
     "math sums over every column of A; FLA's zeros there hide a shader that stages A's slots wrongly), or "
     "inputs on a grid (k, v in {-1, 0, 1}, beta 1, g 0, A's entries multiples of 2^-23) on which every sum is exact "
     "in f32, so an output may differ by its final rounding alone: a lost low bit of A shows", 0},
    {"variant", KV_PARAM_CHOICE, "fma", 0, 0, "fma|bf16-coopmat|a-bf16",
     "products on f32 FMAs, or on bf16 cooperative matrices (tensor cores) with A split exactly into three "
     "bf16 parts, or A given in bf16 as FLA's pipeline keeps it (solve_tril's output; products of bf16 "
     "operands accumulated in f32, as FLA's kernels compute): the spec that FLA's own outputs match", 0},
};

static int is_cm(const struct kv_case *c) { return c->p[P_VARIANT].c == V_CM; }
static int is_fma(const struct kv_case *c) { return c->p[P_VARIANT].c == V_FMA; }
static int is_ab(const struct kv_case *c) { return c->p[P_VARIANT].c == V_AB; }
static int not_ab(const struct kv_case *c) { return !is_ab(c); }

static const struct kv_tensor_def tensors[] = {
    [T_K] = {"k", KV_BF16, KV_INPUT, -1, "batch,seq,kv-heads,dk"},
    [T_V] = {"v", KV_BF16, KV_INPUT, -1, "batch,seq,heads,dv"},
    [T_BETA] = {"beta", KV_F32, KV_INPUT, -1, "batch,seq,heads"},
    [T_G] = {"g", KV_F32, KV_INPUT, -1, "batch,seq,heads"},
    [T_A] = {"A", KV_F32, KV_INPUT, -1, "batch,seq,heads,64", not_ab},
    [T_W] = {"w", KV_BF16, KV_OUTPUT, S_W, "batch,seq,heads,dk", is_fma},
    [T_U] = {"u", KV_BF16, KV_OUTPUT, S_U, "batch,seq,heads,dv", is_fma},
    [T_W_CM] = {"w", KV_BF16, KV_OUTPUT, S_W_CM, "batch,seq,heads,dk", is_cm},
    [T_U_CM] = {"u", KV_BF16, KV_OUTPUT, S_U_CM, "batch,seq,heads,dv", is_cm},
    [T_A16] = {"A", KV_BF16, KV_INPUT, -1, "batch,seq,heads,64", is_ab},
    [T_W_AB] = {"w", KV_BF16, KV_OUTPUT, S_W_AB, "batch,seq,heads,dk", is_ab},
    [T_U_AB] = {"u", KV_BF16, KV_OUTPUT, S_U_AB, "batch,seq,heads,dv", is_ab},
};

struct push {
    uint32_t batch, seq, heads, kv_heads, dk, dv;
};

/* One workgroup per (batch, head, chunk), grid-strided over that list. */
static void launch(const struct kv_case *c, const uint32_t local[3], const uint32_t max[3], void *push,
                   uint32_t groups[3])
{
    (void)local;
    struct push *p = push;
    p->batch = (uint32_t)c->p[P_B].i, p->seq = (uint32_t)c->p[P_T].i, p->heads = (uint32_t)c->p[P_H].i;
    p->kv_heads = (uint32_t)c->p[P_HG].i, p->dk = (uint32_t)c->p[P_K].i, p->dv = (uint32_t)c->p[P_V].i;
    uint64_t nt = ((uint64_t)c->p[P_T].i + BT - 1) / BT;
    groups[0] = kv_groups((uint64_t)c->p[P_B].i * (uint64_t)c->p[P_H].i * nt, 1, max[0]);
    groups[1] = groups[2] = 1;
}

#define PUSH_DOC "uint batch; uint seq; uint heads; uint kv_heads; uint dk; uint dv;"
#define DISPATCH_DOC                                                                                       \
    "groups = (min(batch*heads*ceil(seq/64), maxComputeWorkGroupCount.x), 1, 1); workgroup item "        \
    "id = head + heads*(chunk + ceil(seq/64)*batch), grid-strided by gl_NumWorkGroups.x"

#define CM_DISPATCH_DOC DISPATCH_DOC "; 8 subgroups of 32 on bf16 cooperative matrices"

/* Each output element: a dot of (up to) 64 terms, counted as 64 multiply-adds. */
static double u_flops(const struct kv_case *c)
{
    return 2.0 * 64 * (double)c->p[P_B].i * (double)c->p[P_T].i * (double)c->p[P_H].i * (double)c->p[P_V].i;
}
static double w_flops(const struct kv_case *c)
{
    return 2.0 * 64 * (double)c->p[P_B].i * (double)c->p[P_T].i * (double)c->p[P_H].i * (double)c->p[P_K].i;
}

static const struct kv_stage_def stages[] = {
    [S_U] = {.name = "u", .subgroup = KV_SPIRV(u_sh), .fallback = KV_SPIRV(u_sh), .n_bindings = 4,
             .bindings = {T_V, T_BETA, T_A, T_U}, .push_size = sizeof(struct push), .push_doc = PUSH_DOC,
             .dispatch_doc = DISPATCH_DOC, .launch = launch, .active = is_fma, .needs = KV_NEED_STORAGE16,
             .flops = u_flops},
    [S_W] = {.name = "w", .subgroup = KV_SPIRV(w_sh), .fallback = KV_SPIRV(w_sh), .n_bindings = 5,
             .bindings = {T_K, T_BETA, T_G, T_A, T_W}, .push_size = sizeof(struct push), .push_doc = PUSH_DOC,
             .dispatch_doc = DISPATCH_DOC, .launch = launch, .active = is_fma, .needs = KV_NEED_STORAGE16,
             .flops = w_flops},
    [S_U_CM] = {.name = "u_cm", .subgroup = KV_SPIRV(u_cm), .fallback = KV_SPIRV(u_cm), .n_bindings = 4,
                .bindings = {T_V, T_BETA, T_A, T_U_CM}, .push_size = sizeof(struct push), .push_doc = PUSH_DOC,
                .dispatch_doc = CM_DISPATCH_DOC, .launch = launch,
                .active = is_cm, .needs = KV_NEED_STORAGE16 | KV_NEED_COOPMAT_BF16, .flops = u_flops,
                .flops_f16 = 1, .source = "gdn_wu_u.comp", .source_defines = KV_SHADER_BF16CM},
    [S_W_CM] = {.name = "w_cm", .subgroup = KV_SPIRV(w_cm), .fallback = KV_SPIRV(w_cm), .n_bindings = 5,
                .bindings = {T_K, T_BETA, T_G, T_A, T_W_CM}, .push_size = sizeof(struct push), .push_doc = PUSH_DOC,
                .dispatch_doc = CM_DISPATCH_DOC, .launch = launch,
                .active = is_cm, .needs = KV_NEED_STORAGE16 | KV_NEED_COOPMAT_BF16, .flops = w_flops,
                .flops_f16 = 1, .source = "gdn_wu_w.comp", .source_defines = KV_SHADER_BF16CM},
    [S_U_AB] = {.name = "u_ab", .subgroup = KV_SPIRV(u_ab), .fallback = KV_SPIRV(u_ab), .n_bindings = 4,
                .bindings = {T_V, T_BETA, T_A16, T_U_AB}, .push_size = sizeof(struct push), .push_doc = PUSH_DOC,
                .dispatch_doc = DISPATCH_DOC, .launch = launch, .active = is_ab, .needs = KV_NEED_STORAGE16,
                .flops = u_flops, .source = "gdn_wu_u.comp", .source_defines = KV_SHADER_ABF16},
    [S_W_AB] = {.name = "w_ab", .subgroup = KV_SPIRV(w_ab), .fallback = KV_SPIRV(w_ab), .n_bindings = 5,
                .bindings = {T_K, T_BETA, T_G, T_A16, T_W_AB}, .push_size = sizeof(struct push),
                .push_doc = PUSH_DOC, .dispatch_doc = DISPATCH_DOC, .launch = launch, .active = is_ab,
                .needs = KV_NEED_STORAGE16, .flops = w_flops, .source = "gdn_wu_w.comp",
                .source_defines = KV_SHADER_ABF16},
};

static enum kv_status validate(struct kv_case *c)
{
    return kv_gdn_check_shape(c->p[P_B].i, c->p[P_T].i, c->p[P_H].i, c->p[P_HG].i, c->p[P_K].i, c->p[P_V].i);
}

/* ---- inputs ---- */

static float bf16(double x) { return kv_bf16_to_f32(kv_f32_to_bf16((float)x)); }

struct dims {
    int64_t B, T, H, Hg, K, V, NT, ratio;
};

/* The A tensor of the case's variant: f32, or bf16 (a-bf16). */
static int a_of(const struct kv_case *c) { return is_ab(c) ? T_A16 : T_A; }

static struct dims dims_of(const struct kv_case *c)
{
    struct dims d = {c->p[P_B].i, c->p[P_T].i, c->p[P_H].i, c->p[P_HG].i, c->p[P_K].i, c->p[P_V].i, 0, 0};
    d.NT = (d.T + BT - 1) / BT;
    d.ratio = d.H / d.Hg;
    return d;
}

static enum kv_status inputs(struct kv_case *c)
{
    const struct dims d = dims_of(c);
    const struct kv_gdn_inputs in = {d.B, d.T, d.H, d.Hg, d.K, d.V, c->seed, (enum kv_gdn_dist)c->p[P_DIST].c, is_cm(c),
                                     c->t[T_K].data, c->t[T_V].data, c->t[T_BETA].data, c->t[T_G].data,
                                     &c->t[a_of(c)]};
    KV_TRY_RET(kv_gdn_make_inputs(&in, c->note, sizeof c->note));
    return KV_OK;
}

/* ---- oracle ---- */

/* The staged value bf16(x) and, where x lies so near a bf16 rounding
 * boundary that a legal device computation (rel. error rel) may round it to
 * the other neighbour, |other - staged|; else 0. */
static double stage(double x, double rel, double *flip)
{
    float s = bf16(x);
    *flip = 0;
    if (!isfinite(s) || !isfinite(x) || x == s) return s;
    uint16_t hs = kv_f32_to_bf16(s);
    int up = x > s;
    double other = s == 0 ? (x > 0 ? 1 : -1) * (double)kv_bf16_to_f32(1)
                          : kv_bf16_to_f32((uint16_t)(hs + ((s > 0) == up ? 1 : -1)));
    double mid = 0.5 * ((double)s + other);
    if (fabs(x - mid) <= rel * fabs(x)) *flip = fabs(other - (double)s);
    return s;
}

/* Columns c0 .. c0 + ncol - 1 of chunk [t0, t0 + nv) of head h as the
 * device stages them for output out (0: u, from v beta; 1: w, from k beta
 * e^g) into st[j * ld + col], with each staged value's legal flip (stage)
 * in fl likewise; eg: the chunk's rows' e^g for w (NULL: made here). Row by
 * row, each row's columns read in order. */
static void stage_cols(const struct kv_case *c, const struct dims *d, int out, int64_t b, int64_t t0, int64_t nv,
                       int64_t h, int64_t c0, int64_t ncol, const double *eg, double *st, double *fl, int64_t ld)
{
    const uint16_t *k = c->t[T_K].data, *v = c->t[T_V].data;
    const float *beta = c->t[T_BETA].data, *g = c->t[T_G].data;
    const int64_t kh = h / d->ratio;
    for (int64_t j = 0; j < nv; j++) {
        const int64_t r = (b * d->T + t0 + j) * d->H + h;
        double *sj = st + j * ld, *fj = fl + j * ld;
        if (!out) {
            const uint16_t *vr = v + r * d->V + c0;
            for (int64_t col = 0; col < ncol; col++) {
                const double x = (double)kv_bf16_to_f32(vr[col]) * beta[r];
                sj[col] = c->exact ? x : bf16((float)x), fj[col] = 0;
            }
            continue;
        }
        const double e = eg ? eg[j] : exp((double)g[r]), rel = (3 + 2 * fabs((double)g[r])) * 0x1p-23 + 0x1p-23;
        const uint16_t *kr = k + ((b * d->T + t0 + j) * d->Hg + kh) * d->K + c0;
        for (int64_t col = 0; col < ncol; col++) {
            const double x = (double)kv_bf16_to_f32(kr[col]) * beta[r] * e;
            sj[col] = c->exact ? x : stage(x, rel, &fj[col]);
            if (c->exact) fj[col] = 0;
        }
    }
}

/* The products of rows of the chunk's A (as doubles, nv a row) with ncol
 * staged columns (st and fl: [j][col], ld apart): y, S over the finite terms
 * (all of them where y is finite; where an infinite term makes y infinite,
 * whether the f32 sum of the others may overflow: core/compare.c) and the
 * flips' slack |A| fl, at row stride ld. Each column's sums run over j in
 * order, S's and the slack's terms a rounded product then an add
 * (kv_gdn_prod's rounded sums: register tiles where every term is finite). */
enum { CB = 128 };
static void row_sums(const double *Ad, int64_t rows, int64_t nv, int64_t ncol, int64_t ld, const double *st,
                     const double *fl, double *y, double *S, double *sl)
{
    kv_gdn_prod(&(struct kv_gdn_prod){.L = Ad, .l_row = (int)nv, .l_col = 1, .R = st, .Re = fl, .ldr = (int)ld,
                                      .rows = (int)rows, .cols = (int)ncol, .depth = (int)nv, .rounded = 1},
                y, S, sl, (int)ld, 0);
}

/* The exponent of v's lowest set bit: 100000 where v is 0 (no bit), far
 * below any float's where v is not finite (below -1022 for a subnormal
 * double, which no factor here is). No branch: the lowest bit of the
 * significand isolated, converted to a double (exact), its exponent read. */
static inline int64_t low_bit(double v)
{
    uint64_t b, lb;
    memcpy(&b, &v, sizeof b);
    const int64_t e = (int64_t)(b >> 52 & 0x7ff);
    const uint64_t m = (b & 0xfffffffffffffull) | 1ull << 52;
    const double low = (double)(int64_t)(m & (0 - m));
    memcpy(&lb, &low, sizeof lb);
    const int64_t q = e - 1075 + (int64_t)(lb >> 52) - 1023, zero = (b << 1) == 0;
    return zero ? 100000 : e == 0x7ff ? -100000 : q; /* on the bits: a select, not a branch */
}

/* q[c] = the least of q[c] and v[c]'s low_bit, c < n (a row, columns side by side). */
KV_CLONES static void cols_low(const double *restrict v, int64_t n, int64_t *restrict q)
{
    for (int64_t c = 0; c < n; c++) {
        const int64_t b = low_bit(v[c]);
        q[c] = b < q[c] ? b : q[c];
    }
}

/* The least low_bit over v[0 .. n) (100000 where every one is 0), and the
 * largest |v| into *top. */
KV_CLONES static int64_t row_low(const double *restrict v, int64_t n, double *top)
{
    int64_t q = 100000;
    double t = 0;
    for (int64_t j = 0; j < n; j++) {
        const int64_t b = low_bit(v[j]);
        q = b < q ? b : q, t = fabs(v[j]) > t ? fabs(v[j]) : t;
    }
    *top = t;
    return q;
}

/* 2^e, -1022 <= e <= 1023. */
static inline double pow2(int64_t e)
{
    const uint64_t b = (uint64_t)(e + 1023) << 52;
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

/* A row's exact sums (exact_sums): hit[c] where the row's qa and column c's
 * qx and tx let S[c] be 0 (and y[c] is finite), and S[c] made 0 there.
 * Whether any was. */
KV_CLONES static int row_hits(int64_t qa, const int64_t *restrict qx, const double *restrict tx,
                              const double *restrict sl, const double *restrict y, double *restrict S, int64_t n,
                              unsigned char *restrict hit)
{
    const double pa = pow2(qa);
    int any = 0;
    for (int64_t c = 0; c < n; c++) { /* no branch: a loop that vectorizes */
        hit[c] = (qa + qx[c] >= -126) & (sl[c] == 0) & (S[c] <= tx[c] * pa) & (fabs(y[c]) <= DBL_MAX);
        S[c] = hit[c] ? 0 : S[c], any |= hit[c];
    }
    return any;
}

/* exact_sums' rows of A: each row's least low bit qa, whether it is left
 * in (cand), and the columns j of A that a row left in has nonzero (in). */
struct exact_rows {
    int64_t qa[BT];
    unsigned char cand[BT], in[BT];
    int any;
};

static void exact_rows(const double *Ad, int64_t rows, int64_t l_row, int64_t nv, struct exact_rows *er)
{
    const double c = 1 - 0x1p-6;
    memset(er->in, 0, sizeof er->in);
    er->any = 0;
    for (int64_t i = 0; i < rows; i++) {
        double top;
        er->qa[i] = row_low(Ad + i * l_row, nv, &top);
        /* past 999: every entry 0 (100000), and so S and y */
        er->cand[i] = er->qa[i] >= -126 && er->qa[i] <= 999 && top <= c * pow2(er->qa[i] + 24);
        for (int64_t j = 0; er->cand[i] && j < nv; j++) er->in[j] |= Ad[i * l_row + j] != 0;
        er->any |= er->cand[i];
    }
}

/* Exact sums (not for the exact oracle, whose terms are not the device's).
 * Where each nonzero factor of an element's terms A_ij x_j is a multiple of
 * 2^-126 or coarser, the terms multiples of 2^q (q >= -126), and
 * S <= (1 - 2^-6) 2^(q+24), every partial sum, in any order or grouping, is
 * a multiple of 2^q no larger than 2^(q+24): an f32 value. Every product
 * and every addition is then exact on any device: f32 FMAs, tensor cores'
 * truncating adders, bf16-coopmat's parts of A (multiples of A's lowest bit,
 * their magnitudes summing to |A|, or within 2^-7 of it for a rounding
 * split) and a flush of subnormals alike, and y is the f32 sum. The
 * element's one error is its final rounding: S = 0 leaves that alone in its
 * bound, and at a bf16 midpoint y is the even neighbour (that rounding is to
 * nearest even: the half step alone would pass either). Rows of A (l_row
 * apart, nv terms), ncol columns of the staged st (ld apart); the sums' S
 * and slack sl at stride ld. An element with a slack (a staging either way)
 * keeps its S, as does one whose y is not finite (a factor that is not
 * finite, where it meets a zero A_ij too: its low bit is far below).
 * A row whose largest |A_ij| is past c 2^(qa+24) is left out: where x_j is
 * not 0, S >= |A_ij| |x_j| >= |A_ij| 2^qx exceeds c 2^(q+24) (only where the
 * column's x_j are 0 might it be exact: not found, a weaker bound, never an
 * unsound one). qx is the least low bit over the rows j of the staged values
 * that some row left in multiplies by a nonzero A_ij: the others' terms
 * are 0 there. Realistic f32 A leaves in about a chunk's row 0 alone.
 * The rows' part (exact_rows, above) is made once per chunk, for both outputs and
 * every block of columns (exact_sums). */
static void exact_sums(const struct exact_rows *er, int64_t rows, int64_t nv, int64_t ncol, int64_t ld,
                       const double *st, const double *sl, double *y, double *S)
{
    if (!er->any) return;
    int64_t qx[CB];
    for (int64_t col = 0; col < ncol; col++) qx[col] = 100000;
    for (int64_t j = 0; j < nv; j++) /* st's rows are contiguous */
        if (er->in[j]) cols_low(st + j * ld, ncol, qx);
    double tx[CB]; /* (1 - 2^-6) 2^(qx + 24), or 0 where qx < -126 */
    for (int64_t col = 0; col < ncol; col++)
        tx[col] = qx[col] >= -126 ? (1 - 0x1p-6) * pow2(qx[col] + 24 < 1023 ? qx[col] + 24 : 1023) : 0;
    for (int64_t i = 0; i < rows; i++) {
        unsigned char hit[CB];
        if (er->cand[i] && row_hits(er->qa[i], qx, tx, sl + i * ld, y + i * ld, S + i * ld, ncol, hit))
            for (int64_t col = 0; col < ncol; col++)
                if (hit[col]) y[i * ld + col] = kv_bf16_even_tie(y[i * ld + col]);
    }
}

/* The slack of the flips: a flipped staging may also carry y across a power
 * of two, where the final rounding's step doubles. */
static inline double flip_slack(double y, double sl) { return sl > 0 ? sl + 0.5 * kv_ulp_bf16(fabs(y) + sl) : sl; }

/* A thread's room for chunk_out: the chunk's A as doubles and its exact
 * sums' rows (load_chunk), CB staged columns with their flips, and the sums
 * of every row over them. */
struct wu_work {
    double Ad[BT * BT], st[BT * CB], fl[BT * CB], y[BT * CB], S[BT * CB], sl[BT * CB], eg[BT];
    struct exact_rows er;
};

/* The chunk [t0, t0 + nv) of head h's A as doubles (nv a row), and, for the
 * spec oracle, its exact sums' rows: once for both outputs. */
static void load_chunk(const struct kv_case *c, const struct dims *d, int64_t b, int64_t t0, int64_t nv, int64_t h,
                       struct wu_work *w)
{
    const struct kv_tensor *A = &c->t[a_of(c)];
    for (int64_t i = 0; i < nv; i++)
        kv_load_f64_n(A->dtype, A->data, (size_t)((b * d->T + t0 + i) * d->H + h) * BT, w->Ad + i * nv, (size_t)nv);
    if (!c->exact) exact_rows(w->Ad, nv, nv, nv, &w->er);
}

/* Output out (t) of chunk [t0, t0 + nv) of head h, whole (its A loaded,
 * load_chunk): CB columns staged side by side, then every row's sums over
 * them. The number of elements with a slack. */
static size_t chunk_out(struct kv_case *c, const struct dims *d, int out, int t, int64_t b, int64_t t0, int64_t nv,
                        int64_t h, struct wu_work *w)
{
    const int64_t D = out ? d->K : d->V;
    const float *g = c->t[T_G].data;
    for (int64_t j = 0; out && j < nv; j++) /* once, not per column */
        w->eg[j] = exp((double)g[(b * d->T + t0 + j) * d->H + h]);
    size_t ambiguous = 0;
    for (int64_t c0 = 0; c0 < D; c0 += CB) {
        const int64_t ncol = D - c0 < CB ? D - c0 : CB;
        stage_cols(c, d, out, b, t0, nv, h, c0, ncol, w->eg, w->st, w->fl, CB);
        row_sums(w->Ad, nv, nv, ncol, CB, w->st, w->fl, w->y, w->S, w->sl);
        if (!c->exact) exact_sums(&w->er, nv, nv, ncol, CB, w->st, w->sl, w->y, w->S);
        for (int64_t i = 0; i < nv; i++) {
            const size_t o = (size_t)(((b * d->T + t0 + i) * d->H + h) * D + c0);
            const double *y = w->y + i * CB, *sl = w->sl + i * CB;
            memcpy(c->y[t] + o, y, sizeof(double) * (size_t)ncol);
            memcpy(c->S[t] + o, w->S + i * CB, sizeof(double) * (size_t)ncol);
            double *restrict slack = out ? c->slack[t] + o : NULL;
            for (int64_t col = 0; slack && col < ncol; col++)
                slack[col] = flip_slack(y[col], sl[col]), ambiguous += slack[col] > 0;
        }
    }
    return ambiguous;
}

/* --sample on an output that holds only its sampled elements (compact):
 * each of them alone, its column staged for it. */
static size_t oracle_sampled(struct kv_case *c, const struct dims *d, int out, int t)
{
    const struct kv_tensor *A = &c->t[a_of(c)];
    const int64_t D = out ? d->K : d->V;
    size_t ambiguous = 0;
#pragma omp parallel for schedule(dynamic, 256) reduction(+ : ambiguous)
    for (size_t q = 0; q < c->n_sample[t]; q++) {
        const int64_t e = (int64_t)c->sample[t][q], col = e % D, r = e / D, h = r % d->H, bt = r / d->H;
        const int64_t b = bt / d->T, t0 = bt % d->T / BT * BT, nv = d->T - t0 < BT ? d->T - t0 : BT;
        double Ad[BT], st[BT], fl[BT], y, sl;
        kv_load_f64_n(A->dtype, A->data, (size_t)r * BT, Ad, (size_t)nv);
        stage_cols(c, d, out, b, t0, nv, h, col, 1, NULL, st, fl, 1);
        row_sums(Ad, 1, nv, 1, 1, st, fl, &y, &c->S[t][q], &sl);
        if (!c->exact) {
            struct exact_rows er;
            exact_rows(Ad, 1, nv, nv, &er);
            exact_sums(&er, 1, nv, 1, 1, st, &sl, &y, &c->S[t][q]);
        }
        const double slack = flip_slack(y, sl);
        c->y[t][q] = y;
        if (out) c->slack[t][q] = slack, ambiguous += slack > 0;
    }
    return ambiguous;
}

/* What oracle() holds beyond y and S: w's slack. */
static uint64_t oracle_host(const struct kv_case *c, uint32_t whole, uint32_t sampled, const uint64_t *len)
{
    (void)whole, (void)sampled;
    return sizeof(double) * len[is_cm(c) ? T_W_CM : is_ab(c) ? T_W_AB : T_W];
}

/* Tolerances (metrics.md): n = rows of the chunk (<= 64), S = sum_j |A*staged|,
 * the products 1u (k_op = 1), u = 2^-24 (f32 accumulation), and the final
 * round to bf16: 0.5 ulp_bf16(y). Staging: u's bf16(v*beta) is one f32
 * product, correctly rounded, then rounded to bf16: exact to mirror. w's
 * bf16(k*beta*exp(g)): exp may be 3+2|g| ULP off and there are two f32
 * products, so where the exact value lies within (3+2|g|)*2^-23 + 2^-23
 * (relative) of a bf16 midpoint either neighbour is legal: the output gets
 * |A_ij| times the gap as slack, plus half a bf16 step at |y| + slack (the
 * flipped value may round with a coarser step), and the element is counted
 * as ambiguous (with --sample, among the sampled elements where the oracle
 * holds only those). The bf16-coopmat variant sums 3 n products (the parts
 * of A) with 2u per addition. Where an element's terms make every partial
 * sum an f32 value (exact_sums), its S is 0: the final rounding alone. */
static enum kv_status oracle(struct kv_case *c)
{
    const struct dims d = dims_of(c);
    const int tw = is_cm(c) ? T_W_CM : is_ab(c) ? T_W_AB : T_W;
    const int tu = is_cm(c) ? T_U_CM : is_ab(c) ? T_U_AB : T_U;
    free(c->slack[tw]); /* --oracle both calls the oracle twice */
    c->slack[tw] = kv_calloc_big(kv_oracle_len(c, tw), sizeof(double));
    if (!c->slack[tw]) return kv_error(KV_EDEVICE, "out of host memory for the oracle");
    size_t ambiguous = 0;
    for (int out = 0; out < 2; out++)
        if (c->compact[out ? tw : tu]) ambiguous += oracle_sampled(c, &d, out, out ? tw : tu);
    int failed = 0;
#pragma omp parallel reduction(+ : ambiguous) reduction(| : failed)
    {
        struct wu_work *w = malloc(sizeof *w);
        failed |= !w;
#pragma omp for schedule(dynamic)
        for (int64_t item = 0; item < d.B * d.NT * d.H; item++) {
            int64_t b = item / (d.NT * d.H), ch = (item / d.H) % d.NT, h = item % d.H;
            int64_t t0 = ch * BT, nv = d.T - t0 < BT ? d.T - t0 : BT;
            if (w && !(c->compact[tu] && c->compact[tw])) load_chunk(c, &d, b, t0, nv, h, w);
            for (int out = 0; w && out < 2; out++)
                if (!c->compact[out ? tw : tu]) ambiguous += chunk_out(c, &d, out, out ? tw : tu, b, t0, nv, h, w);
        }
        free(w);
    }
    if (failed) return kv_error(KV_EDEVICE, "out of host memory for the oracle");
    c->ambiguous[tw] = ambiguous;
    /* bf16-coopmat: the device sums 3 x 64 exact products (A's three parts),
     * and tensor cores may add with directed rounding: 2u per addition. */
    c->bound[tw] = c->bound[tu] = is_cm(c) ? (struct kv_bound){.n = 3 * BT, .k_op = 1, .u_acc = 0x1p-23, .rho = 1}
                                           : (struct kv_bound){.n = BT, .k_op = 1, .u_acc = 0x1p-24, .rho = 1};
    return KV_OK;
}

static const char *const sweep[] = {
    "batch=2,seq=1,heads=2,kv-heads=2,dk=64,dv=64",
    "batch=2,seq=63,heads=4,kv-heads=2,dk=64,dv=128",
    "batch=2,seq=64,heads=4,kv-heads=1,dk=128,dv=64",
    "batch=2,seq=65,heads=4,kv-heads=4,dk=128,dv=128",
    "batch=2,seq=200,heads=4,kv-heads=2,dk=256,dv=256",
    "batch=2,seq=130,heads=2,kv-heads=1,dk=48,dv=80",
    "batch=1,seq=70,heads=2,kv-heads=2,dk=30,dv=42", /* D % 7 == 0 (and % 3), not % 8 (% 4): the store width tests */
    "batch=1,seq=100,heads=2,kv-heads=1,dk=64,dv=36,dist=nonfinite",
    "batch=1,seq=40,heads=2,kv-heads=1,dk=65,dv=65", /* a one-column last block, D % 4 == 1 */
    "batch=1,seq=130,heads=2,kv-heads=2,dk=64,dv=64,dist=dense",
    "batch=3,seq=10,heads=200,kv-heads=8,dk=16,dv=8", /* 600 items: past 512, not a multiple */
    "batch=1,seq=100,heads=2,kv-heads=1,dk=64,dv=64,dist=grid", /* exact sums: A's low bits, a partial chunk */
    NULL,
};

const struct kv_kernel kv_kernel_gdn_wu = {
    .name = "gdn-wu",
    .summary = "gated delta net recompute of w and u, bf16 with f32 accumulation",
    .params = params,
    .n_params = KV_COUNT(params),
    .tensors = tensors,
    .n_tensors = KV_COUNT(tensors),
    .stages = stages,
    .n_stages = KV_COUNT(stages),
    .has_exact = 1,
    .sweep = sweep,
    .sweep_seeds = 3,
    .validate = validate,
    .inputs = inputs,
    .oracle = oracle,
    .oracle_host = oracle_host,
    .sample_outputs = 1ull << T_W | 1ull << T_U | 1ull << T_W_CM | 1ull << T_U_CM | 1ull << T_W_AB | 1ull << T_U_AB,
    .window_batch = P_B, .window_seq = P_T, .window_chunk = BT,
};
