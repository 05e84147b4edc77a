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
 * The spec oracle (gdn_wy_oracle.c) mirrors those casts and carries the
 * device's legal error through the intermediates (gdn_grad.c); the exact
 * oracle is the float64 gradient with A recomputed from (k, beta, g).
 * Variant a-bf16: A in bf16,
 * dA and dA A^T cast to bf16 before their products with A, as FLA's kernel
 * does with its bf16 A: the spec that FLA's own outputs match. Variant
 * bf16-coopmat: that spec on bf16 cooperative matrices (tensor cores), where
 * every product has bf16 operands (shaders/gdn_wy_bwd_cm.glsl); its f32
 * accumulations are bounded with u = 2^-23 (the tensor cores' truncation).
 * An f32 A on tensor cores would take three bf16 parts of A and of dA, nine
 * products for each of the two through A: more work than FLA's whole kernel;
 * this variant takes A in bf16, as FLA does. */
#include "core/rng.h"
#include "core/tensor.h"
#include "kernels/gdn_inputs.h"
#include "kernels/gdn_wy_bwd.h"
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

static int is_ab(const struct kv_case *c) { return c->p[P_VARIANT].c == V_AB; }
/* K and V multiples of 8: every row of k, v, dw, du, dk_head and dv is whole 16-byte words. */
static int is_aligned8(const struct kv_case *c) { return c->p[P_K].i % 8 == 0 && c->p[P_V].i % 8 == 0; }

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
    .oracle = kv_gdn_wy_oracle,
    .oracle_host = kv_gdn_wy_oracle_host,
    .oracle_block = kv_gdn_wy_dv_block,
    .block_outputs = 1ull << T_DV | 1ull << T_DV_AB | 1ull << T_DV_CM,
    .sample_outputs = (1ull << T_DKH | 1ull << T_DV | 1ull << T_DB | 1ull << T_DG | 1ull << T_DK) * (1ull | 1ull << (T_DKH_AB - T_DKH) | 1ull << 2 * (T_DKH_AB - T_DKH)),
    .window_batch = P_B, .window_seq = P_T, .window_chunk = BT,
};
