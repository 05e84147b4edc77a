/* gdn-wy-bwd: the backward of gdn-wu (FLA's prepare_wy_repr_bwd): from the
 * gradients dw, du of w = A bf16(k beta e^g) and u = A bf16(v beta), the
 * gradients of k, v, beta and g, through A = (I + L)^-1 as well,
 * L[i][j] = beta_i (k_i . k_j) e^(g_i - g_j) (kernels/gdn_grad.h). Chunks of
 * BT = 64 rows, as gdn-wu. Stage wy computes one (batch, head, chunk) in
 * FLA's order and at its cast points (shaders/gdn_wy_bwd_wy.comp): dk_head,
 * each value head's dk (FLA's kernel output), dv, dbeta and dg; stage dk sums
 * dk_head over the heads / kv_heads value heads that share a key head, in
 * f32, rounded once to bf16 (FLA's dk.sum over the group of its bf16 dk).
 * g is in natural log (gdn-wu's); FLA gates with exp2 of log2-space g: give
 * FLA g / ln 2, and its dg is then this dg (its exp2 loses the ln 2 factor
 * that the change of variable puts back).
 * The spec oracle mirrors those casts and carries the device's legal error
 * through the intermediates (gdn_grad.c); the exact oracle is the float64
 * gradient with A recomputed from (k, beta, g). Variant a-bf16: A in bf16,
 * dA and dA A^T cast to bf16 before their products with A, as FLA's kernel
 * does with its bf16 A: the spec that FLA's own outputs match. Variant
 * bf16-coopmat: that spec on bf16 cooperative matrices (tensor cores), where
 * every product has bf16 operands (shaders/gdn_wy_bwd_cm.glsl); its f32
 * accumulations are bounded with u = 2^-23 (the tensor cores' truncation).
 * An f32 A on tensor cores would take three bf16 parts of A and of dA, nine
 * products for each of the two through A: more work than FLA's whole kernel;
 * this variant takes A in bf16, as FLA does. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/clones.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "kernels/gdn_grad.h"
#include "kernels/gdn_inputs.h"
#include "kernels/kernel.h"

static const uint32_t wy_sh[] =
#include "gdn_wy_bwd_wy.sh.h"
    ;
static const uint32_t wy_ab[] =
#include "gdn_wy_bwd_wy.ab.h"
    ;
static const uint32_t wy_cm[] =
#include "gdn_wy_bwd_wy.cm.h"
    ;
static const uint32_t wy_cmal[] =
#include "gdn_wy_bwd_wy.cmal.h"
    ;
static const uint32_t wy_cmel[] =
#include "gdn_wy_bwd_wy.cmel.h"
    ;
static const uint32_t wy_cmalel[] =
#include "gdn_wy_bwd_wy.cmalel.h"
    ;
static const uint32_t dk_sh[] =
#include "gdn_wy_bwd_dk.sh.h"
    ;

#define BT 64

enum { P_B, P_T, P_H, P_HG, P_K, P_V, P_DIST, P_VARIANT };
enum { T_K, T_V, T_BETA, T_G, T_A, T_A16, T_DW, T_DU, T_DKH, T_DV, T_DB, T_DG, T_DK,
       T_DKH_AB, T_DV_AB, T_DB_AB, T_DG_AB, T_DK_AB, T_DKH_CM, T_DV_CM, T_DB_CM, T_DG_CM, T_DK_CM };
enum { S_WY, S_DK, S_WY_AB, S_DK_AB, S_WY_CM, S_DK_CM };
enum { D_REALISTIC, D_RANDOM, D_DENSE, D_NONFINITE };
enum { V_FMA, V_AB, V_CM };

static const struct kv_param_def params[] = {
    {"batch", KV_PARAM_INT, "1", 1, 65536, NULL, "batch size B", 1},
    {"seq", KV_PARAM_INT, "256", 1, 2147483647, NULL, "sequence length T (any; a partial last chunk is masked)", 1},
    {"heads", KV_PARAM_INT, "4", 1, 65536, NULL, "value heads H (a multiple of --kv-heads)", 1},
    {"kv-heads", KV_PARAM_INT, "2", 1, 65536, NULL, "key heads Hg", 1},
    {"dk", KV_PARAM_INT, "128", 1, 65536, NULL, "key dimension K (any)", 1},
    {"dv", KV_PARAM_INT, "128", 1, 65536, NULL, "value dimension V (any)", 1},
    {"dist", KV_PARAM_CHOICE, "realistic", 0, 0, "realistic|random|dense|nonfinite",
     "gdn-wu's inputs for the same seed (FLA's: L2-normalised k, beta = sigmoid, chunk-cumulative log-sigmoid g, "
     "A = (I+L)^-1) with dw, du ~ N(0, 1/16) in bf16; or unnormalised N(0,1) k (A ill-conditioned: a stress "
     "test); or A's strictly upper triangle filled too (the math uses every entry of A, as FLA's kernel does); "
     "or realistic with a NaN in beta, a +Inf in dw, a -Inf, a +Inf and a NaN in du (NaN and Inf propagation)", 0},
    {"variant", KV_PARAM_CHOICE, "fma", 0, 0, "fma|a-bf16|bf16-coopmat",
     "A in f32, products on f32 FMAs; or A in bf16 as FLA's pipeline keeps it, with dA and dA A^T cast to bf16 "
     "before their products with A, as FLA's kernel does: the spec that FLA's own outputs match; or that spec on "
     "bf16 cooperative matrices (tensor cores; skipped on devices without them)", 0},
};

static int is_fma(const struct kv_case *c) { return c->p[P_VARIANT].c == V_FMA; }
static int is_ab(const struct kv_case *c) { return c->p[P_VARIANT].c == V_AB; }
static int is_cm(const struct kv_case *c) { return c->p[P_VARIANT].c == V_CM; }
/* K and V multiples of 8: every row of k, v, dw, du, dk_head and dv is whole 16-byte words. */
static int is_aligned8(const struct kv_case *c) { return c->p[P_K].i % 8 == 0 && c->p[P_V].i % 8 == 0; }
/* A in bf16: a-bf16 and bf16-coopmat */
static int a16(const struct kv_case *c) { return !is_fma(c); }

#define OUT(name, dt, stage, dims, on) {name, dt, KV_OUTPUT, stage, dims, on}
static const struct kv_tensor_def tensors[] = {
    [T_K] = {"k", KV_BF16, KV_INPUT, -1, "batch,seq,kv-heads,dk"},
    [T_V] = {"v", KV_BF16, KV_INPUT, -1, "batch,seq,heads,dv"},
    [T_BETA] = {"beta", KV_F32, KV_INPUT, -1, "batch,seq,heads"},
    [T_G] = {"g", KV_F32, KV_INPUT, -1, "batch,seq,heads"},
    [T_A] = {"A", KV_F32, KV_INPUT, -1, "batch,seq,heads,64", is_fma},
    [T_A16] = {"A", KV_BF16, KV_INPUT, -1, "batch,seq,heads,64", a16},
    [T_DW] = {"dw", KV_BF16, KV_INPUT, -1, "batch,seq,heads,dk"},
    [T_DU] = {"du", KV_BF16, KV_INPUT, -1, "batch,seq,heads,dv"},
    [T_DKH] = OUT("dk_head", KV_BF16, S_WY, "batch,seq,heads,dk", is_fma),
    [T_DV] = OUT("dv", KV_BF16, S_WY, "batch,seq,heads,dv", is_fma),
    [T_DB] = OUT("dbeta", KV_F32, S_WY, "batch,seq,heads", is_fma),
    [T_DG] = OUT("dg", KV_F32, S_WY, "batch,seq,heads", is_fma),
    [T_DK] = OUT("dk", KV_BF16, S_DK, "batch,seq,kv-heads,dk", is_fma),
    [T_DKH_AB] = OUT("dk_head", KV_BF16, S_WY_AB, "batch,seq,heads,dk", is_ab),
    [T_DV_AB] = OUT("dv", KV_BF16, S_WY_AB, "batch,seq,heads,dv", is_ab),
    [T_DB_AB] = OUT("dbeta", KV_F32, S_WY_AB, "batch,seq,heads", is_ab),
    [T_DG_AB] = OUT("dg", KV_F32, S_WY_AB, "batch,seq,heads", is_ab),
    [T_DK_AB] = OUT("dk", KV_BF16, S_DK_AB, "batch,seq,kv-heads,dk", is_ab),
    [T_DKH_CM] = OUT("dk_head", KV_BF16, S_WY_CM, "batch,seq,heads,dk", is_cm),
    [T_DV_CM] = OUT("dv", KV_BF16, S_WY_CM, "batch,seq,heads,dv", is_cm),
    [T_DB_CM] = OUT("dbeta", KV_F32, S_WY_CM, "batch,seq,heads", is_cm),
    [T_DG_CM] = OUT("dg", KV_F32, S_WY_CM, "batch,seq,heads", is_cm),
    [T_DK_CM] = OUT("dk", KV_BF16, S_DK_CM, "batch,seq,kv-heads,dk", is_cm),
};

/* The case's output of a kind (T_DKH .. T_DK): fma's, a-bf16's or bf16-coopmat's. */
static int out_of(const struct kv_case *c, int t) { return t + c->p[P_VARIANT].c * (T_DKH_AB - T_DKH); }

struct push {
    uint32_t batch, seq, heads, kv_heads, dk, dv;
};

static void set_push(const struct kv_case *c, struct push *p)
{
    p->batch = (uint32_t)c->p[P_B].i, p->seq = (uint32_t)c->p[P_T].i, p->heads = (uint32_t)c->p[P_H].i;
    p->kv_heads = (uint32_t)c->p[P_HG].i, p->dk = (uint32_t)c->p[P_K].i, p->dv = (uint32_t)c->p[P_V].i;
}

/* wy: one workgroup per (batch, head, chunk), grid-strided over that list. */
static void launch_wy(const struct kv_case *c, const uint32_t local[3], const uint32_t max[3], void *push,
                      uint32_t groups[3])
{
    (void)local;
    set_push(c, push);
    uint64_t nt = ((uint64_t)c->p[P_T].i + BT - 1) / BT;
    groups[0] = kv_groups((uint64_t)c->p[P_B].i * (uint64_t)c->p[P_H].i * nt, 1, max[0]);
    groups[1] = groups[2] = 1;
}

/* dk: one invocation per element of dk, grid-strided. */
static void launch_dk(const struct kv_case *c, const uint32_t local[3], const uint32_t max[3], void *push,
                      uint32_t groups[3])
{
    set_push(c, push);
    uint64_t K = (uint64_t)c->p[P_K].i, w = K % 8 == 0 ? 8 : 1; /* columns per invocation */
    uint64_t n = (uint64_t)c->p[P_B].i * (uint64_t)c->p[P_T].i * (uint64_t)c->p[P_HG].i * (K / w);
    groups[0] = kv_groups(n, local[0], max[0]);
    groups[1] = groups[2] = 1;
}

#define PUSH_DOC "uint batch; uint seq; uint heads; uint kv_heads; uint dk; uint dv;"
#define WY_DOC                                                                                             \
    "groups = (min(batch*heads*ceil(seq/64), maxComputeWorkGroupCount.x), 1, 1); workgroup item "        \
    "id = head + heads*(chunk + ceil(seq/64)*batch), grid-strided by gl_NumWorkGroups.x"
#define CM_DOC WY_DOC "; 8 subgroups of 32 on bf16 cooperative matrices"
#define DK_DOC                                                                                             \
    "groups = (min(ceil(batch*seq*kv_heads*dk / (w*local_size_x)), maxComputeWorkGroupCount.x), 1, 1), "  \
    "grid-strided; w = 8 columns per invocation where dk % 8 == 0, else 1"

/* Multiply-adds of one chunk and head: dA (64 x 64 x (K + V)), A^T dw and
 * A^T du, the two 64^3 products through A, and pass 2's k k^T, U k, U^T kb. */
static double wy_flops(const struct kv_case *c)
{
    double K = (double)c->p[P_K].i, V = (double)c->p[P_V].i;
    double items = (double)c->p[P_B].i * (double)((c->p[P_T].i + BT - 1) / BT) * (double)c->p[P_H].i;
    return items * 2.0 * BT * BT * (K + V + K + V + 2 * BT + 3 * K);
}
static double dk_flops(const struct kv_case *c)
{
    return (double)c->p[P_B].i * (double)c->p[P_T].i * (double)c->p[P_H].i * (double)c->p[P_K].i;
}

static const struct kv_stage_def stages[] = {
    [S_WY] = {.name = "wy", .subgroup = KV_SPIRV(wy_sh), .fallback = KV_SPIRV(wy_sh), .n_bindings = 11,
              .bindings = {T_K, T_V, T_BETA, T_G, T_A, T_DW, T_DU, T_DKH, T_DV, T_DB, T_DG},
              .push_size = sizeof(struct push), .push_doc = PUSH_DOC, .dispatch_doc = WY_DOC, .launch = launch_wy,
              .active = is_fma, .needs = KV_NEED_STORAGE16, .flops = wy_flops},
    [S_DK] = {.name = "dk", .subgroup = KV_SPIRV(dk_sh), .fallback = KV_SPIRV(dk_sh), .n_bindings = 2,
              .bindings = {T_DKH, T_DK}, .push_size = sizeof(struct push), .push_doc = PUSH_DOC,
              .dispatch_doc = DK_DOC, .launch = launch_dk, .active = is_fma, .needs = KV_NEED_STORAGE16,
              .flops = dk_flops},
    [S_WY_AB] = {.name = "wy_ab", .subgroup = KV_SPIRV(wy_ab), .fallback = KV_SPIRV(wy_ab), .n_bindings = 11,
                 .bindings = {T_K, T_V, T_BETA, T_G, T_A16, T_DW, T_DU, T_DKH_AB, T_DV_AB, T_DB_AB, T_DG_AB},
                 .push_size = sizeof(struct push), .push_doc = PUSH_DOC, .dispatch_doc = WY_DOC,
                 .launch = launch_wy, .active = is_ab, .needs = KV_NEED_STORAGE16, .flops = wy_flops,
                 .source = "gdn_wy_bwd_wy.comp", .source_defines = KV_SHADER_ABF16},
    [S_DK_AB] = {.name = "dk_ab", .subgroup = KV_SPIRV(dk_sh), .fallback = KV_SPIRV(dk_sh), .n_bindings = 2,
                 .bindings = {T_DKH_AB, T_DK_AB}, .push_size = sizeof(struct push), .push_doc = PUSH_DOC,
                 .dispatch_doc = DK_DOC, .launch = launch_dk, .active = is_ab, .needs = KV_NEED_STORAGE16,
                 .flops = dk_flops, .source = "gdn_wy_bwd_dk.comp"},
    [S_WY_CM] = {.name = "wy_cm", .subgroup = KV_SPIRV(wy_cm), .fallback = KV_SPIRV(wy_cm), .n_bindings = 11,
                 .bindings = {T_K, T_V, T_BETA, T_G, T_A16, T_DW, T_DU, T_DKH_CM, T_DV_CM, T_DB_CM, T_DG_CM},
                 .push_size = sizeof(struct push), .push_doc = PUSH_DOC, .dispatch_doc = CM_DOC,
                 .launch = launch_wy, .active = is_cm, .needs = KV_NEED_STORAGE16 | KV_NEED_COOPMAT_BF16,
                 .flops = wy_flops, .flops_f16 = 1, .source = "gdn_wy_bwd_wy.comp",
                 .source_defines = KV_SHADER_BF16CM, .aligned = KV_SPIRV(wy_cmal), .aligned_case = is_aligned8,
                 .el = KV_SPIRV(wy_cmel), .aligned_el = KV_SPIRV(wy_cmalel)},
    [S_DK_CM] = {.name = "dk_cm", .subgroup = KV_SPIRV(dk_sh), .fallback = KV_SPIRV(dk_sh), .n_bindings = 2,
                 .bindings = {T_DKH_CM, T_DK_CM}, .push_size = sizeof(struct push), .push_doc = PUSH_DOC,
                 .dispatch_doc = DK_DOC, .launch = launch_dk, .active = is_cm, .needs = KV_NEED_STORAGE16,
                 .flops = dk_flops, .source = "gdn_wy_bwd_dk.comp"},
};

static enum kv_status validate(struct kv_case *c)
{
    return kv_gdn_check_shape(c->p[P_B].i, c->p[P_T].i, c->p[P_H].i, c->p[P_HG].i, c->p[P_K].i, c->p[P_V].i);
}

struct dims {
    int64_t B, T, H, Hg, K, V, NT, ratio;
};

static struct dims dims_of(const struct kv_case *c)
{
    struct dims d = {c->p[P_B].i, c->p[P_T].i, c->p[P_H].i, c->p[P_HG].i, c->p[P_K].i, c->p[P_V].i, 0, 0};
    d.NT = (d.T + BT - 1) / BT;
    d.ratio = d.H / d.Hg;
    return d;
}

static const enum kv_gdn_dist dist_of[] = {[D_REALISTIC] = KV_GDN_REALISTIC, [D_RANDOM] = KV_GDN_RANDOM,
                                           [D_DENSE] = KV_GDN_DENSE, [D_NONFINITE] = KV_GDN_REALISTIC};

/* A seeded element of a [B, T, H, D] tensor, moved (where >= 0 and where they
 * exist) to column col of its 16 columns and to row row of its 16 steps of T. */
static uint64_t place(const struct kv_case *c, uint32_t stream, uint64_t D, int64_t col, int64_t row)
{
    const uint64_t T = (uint64_t)c->p[P_T].i, H = (uint64_t)c->p[P_H].i, n = (uint64_t)c->p[P_B].i * T * H * D;
    uint64_t e = (uint64_t)(kv_rng_uniform(c->seed, stream, 0) * (double)n) % n, d = e % D, t = e / (H * D) % T;
    if (col >= 0 && d - d % 16 + (uint64_t)col < D) e = e - d + (d - d % 16 + (uint64_t)col);
    if (row >= 0 && t - t % 16 + (uint64_t)row < T) e = e - t * H * D + (t - t % 16 + (uint64_t)row) * H * D;
    return e;
}

/* --dist nonfinite: realistic inputs, then NaNs in beta, a +Inf in dw, and a
 * -Inf, a +Inf and a NaN (with a payload) in du, at seeded places. Their chunks turn
 * NaN or Inf wherever the math takes them (0 * Inf and Inf - Inf included),
 * and the oracle's too; the other chunks stay finite. k, v, g and A stay
 * finite: the products skip only zeros that multiply finite values (dA and
 * U's structural zeros times A and k), so every route agrees on where a NaN
 * goes. The bf16 casts' NaN paths run: du's -Inf and a second, +Inf, sit at
 * columns 4 and 5 and row 3 of their 16, so that in their chunk's column of
 * A^T du, and of dv, the rows below turn NaN (0 * Inf) and those above +-Inf,
 * and some of the 8 values that a cast takes at once (8 columns of a row, or
 * 2 rows of 4 columns on the accumulator elements) hold a lone NaN at their
 * 5th or 6th place. A second NaN in beta, and a second +Inf in du, sit at
 * the last step of a seeded sequence and head. */
static void nonfinite(struct kv_case *c)
{
    const uint64_t K = (uint64_t)c->p[P_K].i, V = (uint64_t)c->p[P_V].i;
    uint16_t *dw = c->t[T_DW].data, *du = c->t[T_DU].data;
    const uint64_t T = (uint64_t)c->p[P_T].i, H = (uint64_t)c->p[P_H].i, e = place(c, 95, 1, -1, -1);
    ((float *)c->t[T_BETA].data)[place(c, 90, 1, -1, -1)] = NAN;
    /* and at the last step of a seeded sequence and head: a partial chunk's
     * last row has no row below it, so only padding rows could carry its
     * NaN into the chunk's finite dbeta, which they must not */
    ((float *)c->t[T_BETA].data)[(e / (T * H) * T + T - 1) * H + e % H] = NAN;
    /* and a +Inf in du there too, in the next head (a seeded column): dA's
     * last row turns infinite, and with it T's, which A's zero columns past
     * a partial chunk must not carry into U (0 * Inf) */
    const uint64_t f = place(c, 96, V, -1, -1);
    du[((e / (T * H) * T + T - 1) * H + (e + 1) % H) * V + f % V] = 0x7F80;
    dw[place(c, 91, K, -1, -1)] = 0x7F80;
    du[place(c, 92, V, 4, 3)] = 0xFF80;
    du[place(c, 94, V, 5, 3)] = 0x7F80;
    du[place(c, 93, V, 2, -1)] = 0x7FC1;
}

static enum kv_status inputs(struct kv_case *c)
{
    const struct dims d = dims_of(c);
    const int ta = a16(c) ? T_A16 : T_A;
    const struct kv_gdn_inputs in = {d.B, d.T, d.H, d.Hg, d.K, d.V, c->seed, dist_of[c->p[P_DIST].c], 0,
                                     c->t[T_K].data, c->t[T_V].data, c->t[T_BETA].data, c->t[T_G].data, &c->t[ta]};
    KV_TRY_RET(kv_gdn_make_inputs(&in, c->note, sizeof c->note));
    /* dw, du ~ N(0, 1/16): upstream gradients, their own streams */
    for (int t = T_DW; t <= T_DU; t++) kv_rng_normal_bf16(c->seed, 80 + (uint32_t)t, c->t[t].count, 0.25, c->t[t].data);
    if (c->p[P_DIST].c == D_NONFINITE) nonfinite(c);
    return KV_OK;
}

/* ---- oracle ---- */

/* One chunk of one value head as float64 rows, the spec's outputs, and
 * (exact) the exact gradient's; and the chunk's dk: its group's dk_head
 * summed as stage dk sums them (sum_y, sum_S, sum_chain, and sum_lsb, the
 * smallest ulp of a nonzero term; sum_ovf). */
struct chunk_work {
    struct kv_gdn_chunk x;
    double beta[BT], g[BT], *A, *k, *v, *dw, *du, *scratch;
    double *dk, *dk_S, *dk_sl, *dv, *dv_S, *ex_dk, *ex_dv, *sum_y, *sum_S, *sum_chain, *sum_lsb;
    double *sl_row; /* a row of dk_head's slacks (K) */
    double db[BT], db_S[BT], db_sl[BT], dg[BT], dg_S[BT], dg_sl[BT], ex_db[BT], ex_dg[BT];
    unsigned char sum_ovf;
    struct kv_gdn_spec o;
};

static struct chunk_work *work_new(const struct dims *d, int a_bf16, double u_acc)
{
    struct chunk_work *w = calloc(1, sizeof *w);
    const size_t D = (size_t)(d->K > d->V ? d->K : d->V), nK = BT * (size_t)d->K, nV = BT * (size_t)d->V;
    const size_t sc = kv_gdn_spec_scratch((int)d->K, (int)d->V), ex = 8 * BT * BT + 6 * BT * D; /* spec, exact */
    double *p = w ? malloc(sizeof(double) * (BT * BT + 2 * nK + 2 * nV + (sc > ex ? sc : ex) + 8 * nK + 3 * nV + (size_t)d->K))
                  : NULL;
    if (!p) return free(w), NULL;
    w->A = p, p += BT * BT, w->k = p, p += nK, w->dw = p, p += nK, w->v = p, p += nV, w->du = p, p += nV;
    w->scratch = p, p += sc > ex ? sc : ex;
    w->dk = p, p += nK, w->dk_S = p, p += nK, w->dk_sl = p, p += nK, w->ex_dk = p, p += nK;
    w->sum_y = p, p += nK, w->sum_S = p, p += nK, w->sum_chain = p, p += nK, w->sum_lsb = p, p += nK;
    w->dv = p, p += nV, w->dv_S = p, p += nV, w->ex_dv = p, p += nV, w->sl_row = p;
    w->o = (struct kv_gdn_spec){1, a_bf16, u_acc, w->dk, w->dk_S, w->dk_sl, w->dv, w->dv_S,
                                w->db, w->db_S, w->db_sl, w->dg, w->dg_S, w->dg_sl, 0, 0, 0};
    return w;
}

static void work_free(struct chunk_work *w)
{
    if (w) free(w->A);
    free(w);
}

/* Gather chunk ch of head h in batch b into w (rows < n). */
static void gather(const struct kv_case *c, const struct dims *d, struct chunk_work *w, int64_t b, int64_t ch,
                   int64_t h)
{
    const int64_t t0 = ch * BT, n = d->T - t0 < BT ? d->T - t0 : BT, kh = h / d->ratio, K = d->K, V = d->V;
    const struct kv_tensor *A = &c->t[a16(c) ? T_A16 : T_A];
    for (int64_t i = 0; i < n; i++) {
        const int64_t r = (b * d->T + t0 + i) * d->H + h, kr = (b * d->T + t0 + i) * d->Hg + kh;
        w->beta[i] = ((const float *)c->t[T_BETA].data)[r], w->g[i] = ((const float *)c->t[T_G].data)[r];
        kv_load_f64_n(A->dtype, A->data, (size_t)(r * BT), w->A + i * n, (size_t)n);
        kv_load_f64_n(KV_BF16, c->t[T_K].data, (size_t)(kr * K), w->k + i * K, (size_t)K);
        kv_load_f64_n(KV_BF16, c->t[T_DW].data, (size_t)(r * K), w->dw + i * K, (size_t)K);
        kv_load_f64_n(KV_BF16, c->t[T_V].data, (size_t)(r * V), w->v + i * V, (size_t)V);
        kv_load_f64_n(KV_BF16, c->t[T_DU].data, (size_t)(r * V), w->du + i * V, (size_t)V);
    }
    w->x = (struct kv_gdn_chunk){(int)n, (int)K, (int)V, w->k, w->v, w->beta, w->g, w->dw, w->du};
}

/* The cache lines of chunk ch of head h in batch b that gather reads (k's
 * where with_k), asked for ahead: the rows of a head lie H rows apart in
 * memory, where the hardware's prefetchers do not follow them. */
static void prefetch(const struct kv_case *c, const struct dims *d, int64_t b, int64_t ch, int64_t h, int with_k)
{
    const int64_t t0 = ch * BT, n = d->T - t0 < BT ? d->T - t0 : BT, kh = h / d->ratio;
    const struct kv_tensor *A = &c->t[a16(c) ? T_A16 : T_A];
    const size_t ea = a16(c) ? 2 : 4;
    for (int64_t i = 0; i < n; i++) {
        const size_t r = (size_t)((b * d->T + t0 + i) * d->H + h), kr = (size_t)((b * d->T + t0 + i) * d->Hg + kh);
        const struct { const void *p; size_t at, bytes; } rows[] = {
            {c->t[T_BETA].data, 4 * r, 4}, {c->t[T_G].data, 4 * r, 4}, {A->data, ea * BT * r, ea * BT},
            {c->t[T_DW].data, 2 * (size_t)d->K * r, 2 * (size_t)d->K}, {c->t[T_V].data, 2 * (size_t)d->V * r, 2 * (size_t)d->V},
            {c->t[T_DU].data, 2 * (size_t)d->V * r, 2 * (size_t)d->V}, {c->t[T_K].data, 2 * (size_t)d->K * kr, with_k ? 2 * (size_t)d->K : 0}};
        for (size_t q = 0; q < sizeof rows / sizeof rows[0]; q++)
            for (size_t o = rows[q].at & ~(size_t)63; o < rows[q].at + rows[q].bytes; o += 64)
                __builtin_prefetch((const char *)rows[q].p + o, 0, 2);
    }
}

/* A row of the chunk's dk_head, from its element s0 (the spec's values yk,
 * exact's where c->exact), into its slacks sl (a flipped intermediate may
 * carry the value across a power of two, where the final rounding's step
 * doubles) and into the group's sums (scatter): in a loop that vectorizes.
 * Returns how many elements have a slack. */
static inline __attribute__((always_inline)) size_t
dk_terms(const double *restrict yk, const double *restrict dk, const double *restrict dsl, const double *restrict dS,
         double *restrict sy, double *restrict sS, double *restrict lsbs, double *restrict chain, double *restrict sl,
         int64_t K, int exact, double u_acc)
{
    size_t amb = 0;
    for (int64_t e = 0; e < K; e++) {
        const double yi = yk[e], fed = exact ? yi : kv_bf16_to_f32(kv_f32_to_bf16((float)yi));
        const double d = dsl[e], up = d + 0.5 * kv_ulp_bf16(fabs(dk[e]) + d), se = d > 0 ? up : 0;
        sl[e] = se, amb += se > 0;
        sy[e] += fed, sS[e] += fabs(fed);
        /* the smallest ulp of a nonzero term */
        const double ul = kv_ulp_bf16(fed), lf = fed != 0 ? ul : 0, lsb = lsbs[e];
        lsbs[e] = fed == 0 ? lsb : lsb == 0 ? lf : lf < lsb ? lf : lsb;
        chain[e] += (8 * sqrt(BT) + 3) * u_acc * dS[e] + 0.5 * kv_ulp_bf16(yi) + se + fabs(fed - yi);
    }
    return amb;
}
KV_CLONES static size_t dk_row(struct chunk_work *w, size_t s0, int64_t K, const double *yk, int exact, double u_acc,
                               double *sl)
{
#define DK_ARGS yk, w->dk + s0, w->dk_sl + s0, w->dk_S + s0, w->sum_y + s0, w->sum_S + s0, w->sum_lsb + s0, \
                w->sum_chain + s0, sl, K
    return exact ? dk_terms(DK_ARGS, 1, u_acc) : dk_terms(DK_ARGS, 0, u_acc);
#undef DK_ARGS
}

/* The chunk's values into the case's outputs (their sampled elements where
 * compact): the spec's, or the exact gradient's with the spec's scales (the
 * exact rows are not judged); dk_head whole into its isolated input where
 * that is kept apart (c->iso); and into the group's sums (stage dk's):
 * dk = sum over the group's value heads of dk_head as the device reads it
 * (the oracle's, rounded to bf16: stage isolation; the exact oracle's
 * unrounded), an f32 sum of ratio terms. Its chained run adds up the
 * device's own dk_head, each within its allowed error of the oracle's
 * unrounded value: that error and the rounding's go to sum_chain. */
static size_t scatter(struct kv_case *c, const struct dims *d, struct chunk_work *w, int64_t b, int64_t ch,
                      int64_t h, double u_acc)
{
    const int64_t t0 = ch * BT, n = w->x.n, K = d->K, V = d->V;
    const int tk = out_of(c, T_DKH), tv = out_of(c, T_DV), tb = out_of(c, T_DB), tg = out_of(c, T_DG);
    const unsigned char ovf = (unsigned char)w->o.overflow; /* the chunk's f32 sums may overflow */
    struct kv_tensor *iso = c->iso[tk].data ? &c->iso[tk] : NULL;
    size_t amb = 0, q, r0 = (size_t)((b * d->T + t0) * d->H + h);
    struct kv_oracle_walk wb = kv_oracle_walk(c, tb, r0), wg = kv_oracle_walk(c, tg, r0);
    w->sum_ovf |= ovf;
    for (int64_t i = 0; i < n; i++) {
        const size_t r = (size_t)((b * d->T + t0 + i) * d->H + h);
        if (kv_oracle_next(&wb, r, &q))
            c->ovf[tb][q] = ovf, c->y[tb][q] = c->exact ? w->ex_db[i] : w->db[i], c->S[tb][q] = w->db_S[i],
            c->slack[tb][q] = w->db_sl[i];
        if (kv_oracle_next(&wg, r, &q))
            c->ovf[tg][q] = ovf, c->y[tg][q] = c->exact ? w->ex_dg[i] : w->dg[i], c->S[tg][q] = w->dg_S[i],
            c->slack[tg][q] = w->dg_sl[i];
        const double *yk = (c->exact ? w->ex_dk : w->dk) + i * K, *yv = (c->exact ? w->ex_dv : w->dv) + i * V;
        double *sl = w->sl_row;
        if (iso) kv_store_f64_n(iso->dtype, iso->data, r * (size_t)K, yk, (size_t)K);
        amb += dk_row(w, (size_t)(i * K), K, yk, c->exact, u_acc, sl);
        kv_oracle_put_row(c, tk, r * (size_t)K, (size_t)K, yk, w->dk_S + i * K, sl, ovf);
        kv_oracle_put_row(c, tv, r * (size_t)V, (size_t)V, yv, w->dv_S + i * V, NULL, ovf);
    }
    return amb;
}

/* dk's sum y of bf16 terms (sum_S of their magnitudes, lsb the smallest
 * ulp of a nonzero one) where stage dk's f32 sum is exact in any order: every
 * partial sum is a multiple of lsb below 2^24 lsb, and none is subnormal (lsb
 * >= 2^-126, so a device that flushes them changes nothing). The device's bf16
 * is then exactly y rounded to nearest even, and at a bf16 midpoint the
 * bound's half ulp would pass either neighbour: there y becomes the even one
 * (and the chained run, which sums the device's own dk_head, keeps its reach
 * in *chain). Elsewhere y stays. */
static double tie_to_even(double y, double S, double lsb, double *chain)
{
    if (!(lsb >= 0x1p-126) || !(S < 0x1p24 * lsb)) return y;
    const double r = kv_bf16_even_tie(y); /* y is an f32 value: exact */
    *chain += fabs(r - y);
    return r;
}

/* The group's sums (scatter) into dk's rows of the chunk. */
static void scatter_dk(struct kv_case *c, const struct dims *d, const struct chunk_work *w, int64_t b, int64_t ch,
                       int64_t kh)
{
    const int64_t t0 = ch * BT, n = w->x.n;
    const size_t K = (size_t)d->K;
    const int to = out_of(c, T_DK);
    for (int64_t i = 0; i < n; i++) {
        const size_t r = (size_t)((b * d->T + t0 + i) * d->Hg + kh);
        for (size_t q = kv_oracle_pos(c, to, r * K), e = kv_oracle_pos(c, to, r * K + K); q < e; q++) {
            const size_t s = (size_t)i * K + kv_oracle_elem(c, to, q) - r * K;
            double chain = w->sum_chain[s];
            c->y[to][q] = c->exact || w->sum_ovf ? w->sum_y[s]
                                                 : tie_to_even(w->sum_y[s], w->sum_S[s], w->sum_lsb[s], &chain);
            c->S[to][q] = w->sum_S[s], c->slack_chain[to][q] = chain;
            c->ovf[to][q] = w->sum_ovf;
        }
    }
}

/* With every output compact (--sample), the key heads' chunks (items of the
 * oracle's loop) that hold a sampled element of some output: need[item] = 1.
 * *need stays NULL (every item) where an output is whole. */
static enum kv_status needed_items(const struct kv_case *c, const struct dims *d, unsigned char **need)
{
    *need = NULL;
    for (int t = T_DKH; t <= T_DK; t++)
        if (!c->compact[out_of(c, t)]) return KV_OK;
    *need = calloc((size_t)(d->B * d->NT * d->Hg), 1);
    if (!*need) return kv_error(KV_EDEVICE, "out of host memory for the oracle");
    for (int t = T_DKH; t <= T_DK; t++) {
        const int o = out_of(c, t);
        const size_t inner = c->t[o].count / (size_t)(d->B * d->T);
        const size_t per_head = t == T_DKH || t == T_DK ? (size_t)d->K : t == T_DV ? (size_t)d->V : 1;
        for (size_t q = 0; q < c->n_sample[o]; q++) {
            const size_t e = c->sample[o][q], bt = e / inner, h = e % inner / per_head;
            const int64_t b = (int64_t)bt / d->T, ch = (int64_t)bt % d->T / BT;
            (*need)[(b * d->NT + ch) * d->Hg + (int64_t)h / (t == T_DK ? 1 : d->ratio)] = 1;
        }
    }
    return KV_OK;
}

static enum kv_status alloc_allow(struct kv_case *c, double **p, int t)
{
    free(*p); /* --oracle both calls the oracle twice */
    *p = kv_calloc_big(kv_oracle_len(c, t), sizeof(double));
    return *p ? KV_OK : kv_error(KV_EDEVICE, "out of host memory for the oracle");
}

/* Tolerances (metrics.md), u = 2^-24, with S and slack from the spec
 * (kv_gdn_chunk_backward_spec: slack is the legal error of the
 * intermediates, the flips of their bf16 casts included):
 *   dk_head = bf16(dkb beta + U^T kb + dk1): dots of 64 terms, one product
 *     and two adds: n = 64, k_op = 3; S = |beta| S(dkb) + S(U^T kb) + |dk1|.
 *   dv = bf16(dvb beta): n = 64, k_op = 1; S = |beta| S(dvb).
 *   dbeta: 2K + V terms in f32 (K in each pass over k, V in the V pass),
 *     n = 2K + V, k_op = 2 (each term's products).
 *   dg: K terms of pass 1 and 2 x 64 of U * M: n = K + 128, k_op = 2.
 *   dk: the f32 sum of heads/kv-heads bf16 terms: n = ratio, k_op = 0. */
static enum kv_status oracle(struct kv_case *c)
{
    const struct dims d = dims_of(c);
    const int tk = out_of(c, T_DKH), tb = out_of(c, T_DB), tg = out_of(c, T_DG), to = out_of(c, T_DK);
    KV_TRY_RET(alloc_allow(c, &c->slack[tk], tk));
    KV_TRY_RET(alloc_allow(c, &c->slack[tb], tb));
    KV_TRY_RET(alloc_allow(c, &c->slack[tg], tg));
    KV_TRY_RET(alloc_allow(c, &c->slack_chain[to], to));
    for (int t = T_DKH; t <= T_DK; t++) {
        const int o = out_of(c, t);
        free(c->ovf[o]); /* --oracle both calls the oracle twice */
        c->ovf[o] = kv_calloc_big(kv_oracle_len(c, o), 1);
        if (!c->ovf[o]) return kv_error(KV_EDEVICE, "out of host memory for the oracle");
    }
    unsigned char *need;
    KV_TRY_RET(needed_items(c, &d, &need));
    size_t ambiguous = 0;
    int failed = 0;
    /* the tensor cores' f32 accumulation truncates: u = 2^-23 there */
    const double ua = is_cm(c) ? 0x1p-23 : 0x1p-24;
    const size_t nK = (size_t)(BT * d.K);
    const int64_t items = d.B * d.NT * d.Hg;
#pragma omp parallel reduction(+ : ambiguous) reduction(| : failed)
    {
        struct chunk_work *w = work_new(&d, a16(c), ua);
        const int64_t step = omp_get_num_threads();
        failed |= !w;
        /* a key head's chunk: its group of value heads, then their dk; item + step is this thread's next */
#pragma omp for schedule(static, 1)
        for (int64_t item = 0; item < items; item++) {
            if (!w || (need && !need[item])) continue;
            int64_t b = item / (d.NT * d.Hg), ch = (item / d.Hg) % d.NT, kh = item % d.Hg;
            memset(w->sum_y, 0, 4 * nK * sizeof(double)); /* sum_y, sum_S, sum_chain, sum_lsb */
            w->sum_ovf = 0;
            for (int64_t h = kh * d.ratio; h < (kh + 1) * d.ratio; h++) {
                gather(c, &d, w, b, ch, h);
                /* the next head's rows, or the next item's, on their way while this one is made */
                const int64_t nx = item + step;
                if (h + 1 < (kh + 1) * d.ratio) prefetch(c, &d, b, ch, h + 1, 0);
                else if (nx < items && !(need && !need[nx]))
                    prefetch(c, &d, nx / (d.NT * d.Hg), nx / d.Hg % d.NT, nx % d.Hg * d.ratio, 1);
                /* the key head's k k^T, made for its first value head, kept for the others (the exact
                 * oracle writes over the scratch) */
                w->o.same_k = h > kh * d.ratio && !c->exact;
                kv_gdn_chunk_backward_spec(&w->x, w->A, &w->o, w->scratch);
                if (c->exact) {
                    memset(w->ex_dk, 0, sizeof(double) * (size_t)(w->x.n * d.K));
                    kv_gdn_chunk_backward(&w->x, w->ex_dk, w->ex_dv, w->ex_db, w->ex_dg, w->scratch);
                }
                ambiguous += scatter(c, &d, w, b, ch, h, ua);
            }
            scatter_dk(c, &d, w, b, ch, kh);
        }
        work_free(w);
    }
    free(need);
    if (failed) return kv_error(KV_EDEVICE, "out of host memory for the oracle");
    c->ambiguous[tk] = ambiguous;
    const double u = 0x1p-24, K = (double)d.K;
    c->bound[tk] = (struct kv_bound){.n = BT, .k_op = 3, .u_acc = ua, .rho = 1};
    c->bound[out_of(c, T_DV)] = (struct kv_bound){.n = BT, .k_op = 1, .u_acc = ua, .rho = 1};
    c->bound[tb] = (struct kv_bound){.n = 2 * K + (double)d.V, .k_op = 2, .u_acc = u, .rho = 1};
    c->bound[tg] = (struct kv_bound){.n = K + 2 * BT, .k_op = 2, .u_acc = u, .rho = 1};
    c->bound[to] = (struct kv_bound){.n = (double)d.ratio, .k_op = 0, .u_acc = u, .rho = 1};
    return KV_OK;
}

static const char *const sweep[] = {
    "batch=2,seq=1,heads=2,kv-heads=2,dk=64,dv=64",
    "batch=1,seq=63,heads=4,kv-heads=2,dk=64,dv=96",
    "batch=2,seq=64,heads=4,kv-heads=1,dk=128,dv=64",
    "batch=1,seq=65,heads=4,kv-heads=4,dk=32,dv=128",
    "batch=1,seq=130,heads=2,kv-heads=1,dk=48,dv=80",
    "batch=1,seq=70,heads=2,kv-heads=2,dk=30,dv=33",
    "batch=1,seq=40,heads=2,kv-heads=1,dk=65,dv=17",
    "batch=1,seq=100,heads=2,kv-heads=2,dk=64,dv=64,dist=dense",
    "batch=1,seq=128,heads=2,kv-heads=2,dk=192,dv=72",  /* two whole chunks; three K blocks */
    "batch=1,seq=66,heads=2,kv-heads=1,dk=71,dv=65",    /* K % 8 == 7; V one past a block */
    "batch=1,seq=50,heads=4,kv-heads=2,dk=63,dv=16",    /* K % 8 == 7 but % 7 == % 9 == 0 (dk's width test) */
    "batch=1,seq=20,heads=2,kv-heads=2,dk=64,dv=63",    /* K % 8 == 0 with V % 8 == 7 (the aligned build's test) */
    "batch=1,seq=70,heads=4,kv-heads=2,dk=40,dv=71,dist=nonfinite",  /* NaN and Inf: the casts' NaN paths, Y's masks */
    "batch=1,seq=128,heads=4,kv-heads=2,dk=64,dv=72,dist=nonfinite", /* the same in the aligned builds */
    "batch=1,seq=10,heads=8,kv-heads=2,dk=40,dv=33,dist=nonfinite",  /* every NaN and Inf in one partial chunk */
    "batch=1,seq=66,heads=4,kv-heads=2,dk=40,dv=33,dist=nonfinite",  /* a 2-row chunk: the last row's Inf in du stays Inf in T */
    "batch=1,seq=300,heads=2,kv-heads=1,dk=16,dv=8",   /* 600 rows of dbeta and dg: past 512, not a multiple */
    /* K % 8 == 1 with V % 8 == 0 (the aligned build's test); nv % 8 == 3 with A's upper
     * triangle filled (its last column in a word's first half, beside a padding column) */
    "batch=1,seq=27,heads=2,kv-heads=1,dk=17,dv=24,dist=dense",
    NULL,
};

const struct kv_kernel kv_kernel_gdn_wy_bwd = {
    .name = "gdn-wy-bwd",
    .summary = "gated delta net WY backward (dk, dv, dbeta, dg through A), bf16 with f32 accumulation",
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
    .sample_outputs = (1ull << T_DKH | 1ull << T_DV | 1ull << T_DB | 1ull << T_DG | 1ull << T_DK) * (1ull | 1ull << (T_DKH_AB - T_DKH) | 1ull << 2 * (T_DKH_AB - T_DKH)),
    .window_batch = P_B, .window_seq = P_T, .window_chunk = BT,
};
