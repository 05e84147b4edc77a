/* gemm-bwd: GEMM backward (kernels.md, seed 001). Forward C[M,N] = A[M,K] B[K,N].
 *   dA = dC B^T [M,K]          dB = A^T dC [K,N]
 * Variants: f32; accumulate (dA = dA_in + dC B^T, the fused gate+up path);
 * f16 (dC cast to f16 on the device with round-to-nearest-even, weights B
 * stored as f16, f32 accumulation; dB follows the f32 path as in the seed).
 * The shaders read the transposed operands in place; f16 values are packed
 * two to a word so the variant needs no 16-bit storage or float16 features.
 * f16-coopmat: the f16 math with dA on cooperative matrices (tensor cores;
 * VK_NV_cooperative_matrix), skipped on devices without them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/blas_core.h"
#include "kernels/kernel.h"

static const uint32_t dA_sg[] =
#include "gemm_bwd_dA.sg.h"
    ;
static const uint32_t dA_acc_sg[] =
#include "gemm_bwd_dA_acc.sg.h"
    ;
static const uint32_t cast_sg[] =
#include "gemm_bwd_cast.sg.h"
    ;
static const uint32_t dA16_sg[] =
#include "gemm_bwd_dA16.sg.h"
    ;
static const uint32_t dA16cm_sg[] =
#include "gemm_bwd_dA16cm.sg.h"
    ;
static const uint32_t dB_sg[] =
#include "gemm_bwd_dB.sg.h"
    ;
/* No subgroup reductions in these stages: both builds are the same code. */
#define dA_sh dA_sg
#define dA_acc_sh dA_acc_sg
#define cast_sh cast_sg
#define dA16_sh dA16_sg
#define dA16cm_sh dA16cm_sg
#define dB_sh dB_sg

enum { P_M, P_N, P_K, P_VARIANT, P_SCALE, P_DIST };
enum { D_NORMAL, D_SPECIAL };
enum { V_F32, V_ACC, V_F16, V_CM };
enum { T_A, T_B, T_B16, T_DC, T_DAIN, T_DC16, T_DA, T_DA_ACC, T_DA16, T_DA_CM, T_DB };
enum { S_DA, S_DA_ACC, S_CAST, S_DA16, S_DA_CM, S_DB };

static const struct kv_param_def params[] = {
    {"m", KV_PARAM_INT, "512", 1, 2147483647, NULL, "rows of A and dC", 1},
    {"n", KV_PARAM_INT, "512", 1, 2147483647, NULL, "columns of B and dC", 1},
    {"k", KV_PARAM_INT, "512", 1, 2147483647, NULL, "columns of A, rows of B", 1},
    {"variant", KV_PARAM_CHOICE, "f32", 0, 0, "f32|accumulate|f16|f16-coopmat", "precision path", 1},
    {"scale", KV_PARAM_FLOAT, "1", 1e-30, 1e30, NULL, "multiplies dC (1e5: the f16 overflow regime)", 0},
    {"dist", KV_PARAM_CHOICE, "normal", 0, 0, "normal|special",
     "dC ~ N(0,1) * scale, or the same with 21 special values at seeded places: +-Inf, NaNs (one of payload 1), "
     "and values at the f16 cast's edges (65504, the ties to 65504 and Inf, overflow, subnormal ties, underflow)",
     0},
};

static int is_f32(const struct kv_case *c) { return c->p[P_VARIANT].c == V_F32; }
static int is_acc(const struct kv_case *c) { return c->p[P_VARIANT].c == V_ACC; }
/* f16 math: the portable f16 variant and the cooperative-matrix one. */
static int is_f16(const struct kv_case *c) { return c->p[P_VARIANT].c == V_F16 || c->p[P_VARIANT].c == V_CM; }
static int is_f16_portable(const struct kv_case *c) { return c->p[P_VARIANT].c == V_F16; }
static int is_cm(const struct kv_case *c) { return c->p[P_VARIANT].c == V_CM; }
static int not_f16(const struct kv_case *c) { return !is_f16(c); }

static const struct kv_tensor_def tensors[] = {
    [T_A] = {"A", KV_F32, KV_INPUT, -1, "m,k", NULL},
    [T_B] = {"B", KV_F32, KV_INPUT, -1, "k,n", not_f16},
    [T_B16] = {"B", KV_F16, KV_INPUT, -1, "k,n", is_f16},
    [T_DC] = {"dC", KV_F32, KV_INPUT, -1, "m,n", NULL},
    [T_DAIN] = {"dA_in", KV_F32, KV_INPUT, -1, "m,k", is_acc},
    [T_DC16] = {"dC16", KV_F16, KV_OUTPUT, S_CAST, "m,n", is_f16},
    [T_DA] = {"dA", KV_F32, KV_OUTPUT, S_DA, "m,k", is_f32},
    [T_DA_ACC] = {"dA", KV_F32, KV_OUTPUT, S_DA_ACC, "m,k", is_acc},
    [T_DA16] = {"dA", KV_F32, KV_OUTPUT, S_DA16, "m,k", is_f16_portable},
    [T_DA_CM] = {"dA", KV_F32, KV_OUTPUT, S_DA_CM, "m,k", is_cm},
    [T_DB] = {"dB", KV_F32, KV_OUTPUT, S_DB, "k,n", NULL},
};

struct push {
    uint32_t m, n, k;
};

static void fill_push(const struct kv_case *c, struct push *p)
{
    p->m = (uint32_t)c->p[P_M].i, p->n = (uint32_t)c->p[P_N].i, p->k = (uint32_t)c->p[P_K].i;
}

/* One workgroup per 128 x tile_cols output tile, tiles grid-strided over a
 * 2-D grid (a user shader with other tiles strides over its own tile count). */
#define TILE 128
static void launch_tiles(uint64_t rows, uint64_t cols, uint64_t tile_cols, const uint32_t local[3],
                         const uint32_t max[3], uint32_t groups[3])
{
    (void)local;
    uint64_t tiles = ((rows + TILE - 1) / TILE) * ((cols + tile_cols - 1) / tile_cols);
    groups[0] = kv_groups(tiles, 1, max[0] < 65535 ? max[0] : 65535);
    groups[1] = kv_groups((tiles + groups[0] - 1) / groups[0], 1, max[1]);
    groups[2] = 1;
}

static void launch_dA(const struct kv_case *c, const uint32_t local[3], const uint32_t max[3], void *push,
                      uint32_t groups[3])
{
    fill_push(c, push);
    launch_tiles((uint64_t)c->p[P_M].i, (uint64_t)c->p[P_K].i, TILE, local, max, groups);
}

/* dA16cm: 128x256 tiles (rows x columns of dA). */
static void launch_dA16cm(const struct kv_case *c, const uint32_t local[3], const uint32_t max[3], void *push,
                          uint32_t groups[3])
{
    fill_push(c, push);
    launch_tiles((uint64_t)c->p[P_M].i, (uint64_t)c->p[P_K].i, 2 * TILE, local, max, groups);
}

static void launch_dB(const struct kv_case *c, const uint32_t local[3], const uint32_t max[3], void *push,
                      uint32_t groups[3])
{
    fill_push(c, push);
    launch_tiles((uint64_t)c->p[P_K].i, (uint64_t)c->p[P_N].i, TILE, local, max, groups);
}

static void launch_cast(const struct kv_case *c, const uint32_t local[3], const uint32_t max[3], void *push,
                        uint32_t groups[3])
{
    fill_push(c, push);
    uint64_t words = ((uint64_t)c->p[P_M].i * (uint64_t)c->p[P_N].i + 1) / 2;
    groups[0] = kv_groups(words, local[0], max[0]);
    groups[1] = groups[2] = 1;
}

/* Tiles of 128 rows and COLS columns (a string). */
#define TILES_DOC_OF(COLS)                                                                                       \
    "one workgroup per 128x" COLS " output tile (tiles = ceil(rows/128)*ceil(cols/" COLS ")); tile t = "          \
    "gl_WorkGroupID.y*gl_NumWorkGroups.x + gl_WorkGroupID.x, strided by the group count; groups.x = min(tiles, " \
    "65535)"
#define TILES_DOC TILES_DOC_OF("128")

/* Each product stage: m*n*k multiply-adds. */
static double gemm_flops(const struct kv_case *c)
{
    return 2.0 * (double)c->p[P_M].i * (double)c->p[P_N].i * (double)c->p[P_K].i;
}

static const struct kv_stage_def stages[] = {
    [S_DA] = {"dA", KV_SPIRV(dA_sg), KV_SPIRV(dA_sh), 3, {T_DC, T_B, T_DA}, sizeof(struct push),
              "uint m; uint n; uint k;", TILES_DOC " over dA[m, k]", launch_dA, is_f32, .flops = gemm_flops,
              .addr = 1},
    [S_DA_ACC] = {"dA_acc", KV_SPIRV(dA_acc_sg), KV_SPIRV(dA_acc_sh), 4, {T_DC, T_B, T_DAIN, T_DA_ACC},
                  sizeof(struct push), "uint m; uint n; uint k;", TILES_DOC " over dA[m, k]", launch_dA, is_acc,
                  .flops = gemm_flops, .addr = 1},
    [S_CAST] = {"cast", KV_SPIRV(cast_sg), KV_SPIRV(cast_sh), 2, {T_DC, T_DC16}, sizeof(struct push),
                "uint m; uint n; uint k;",
                "groups = min(ceil(m*n/2 / local_size_x), max); one packed word (two f16) per invocation, "
                "grid-strided", launch_cast, is_f16},
    [S_DA16] = {"dA16", KV_SPIRV(dA16_sg), KV_SPIRV(dA16_sh), 3, {T_DC16, T_B16, T_DA16}, sizeof(struct push),
                "uint m; uint n; uint k;", TILES_DOC " over dA[m, k]; f16 operands packed two per uint",
                launch_dA, is_f16_portable, .flops = gemm_flops, .flops_f16 = 1},
    [S_DA_CM] = {"dA16cm", KV_SPIRV(dA16cm_sg), KV_SPIRV(dA16cm_sh), 3, {T_DC16, T_B16, T_DA_CM},
                 sizeof(struct push), "uint m; uint n; uint k;",
                 TILES_DOC_OF("256") " over dA[m, k]; 16 subgroups of 32 on cooperative matrices; f16 operands "
                 "packed two per uint",
                 launch_dA16cm, is_cm, .needs = KV_NEED_COOPMAT16, .flops = gemm_flops, .flops_f16 = 1},
    [S_DB] = {"dB", KV_SPIRV(dB_sg), KV_SPIRV(dB_sh), 3, {T_A, T_DC, T_DB}, sizeof(struct push),
              "uint m; uint n; uint k;", TILES_DOC " over dB[k, n]", launch_dB, NULL, .flops = gemm_flops, .addr = 1},
};

static enum kv_status validate(struct kv_case *c)
{
    int64_t m = c->p[P_M].i, n = c->p[P_N].i, k = c->p[P_K].i;
    /* The shaders' flat indices are 32-bit unsigned: row * columns + column
     * of a tensor, taken only inside it (the tiles' tails are masked before
     * an index is formed), so every tensor up to 2^32-1 elements. */
    if (m > UINT32_MAX / n || m > UINT32_MAX / k || k > UINT32_MAX / n)
        return kv_error(KV_EUSAGE, "--m %lld --n %lld --k %lld: a tensor has more than 2^32-1 elements",
                        (long long)m, (long long)n, (long long)k);
    return KV_OK;
}

/* --dist special: values every path of an f32 -> f16 cast meets (f16.glsl),
 * as bits: infinities, NaNs (a quiet one, one whose payload is its lowest
 * bit alone, a negative one), f16's largest value, the values just under
 * and at its tie to Inf, overflow, f16's smallest subnormal, the ties below,
 * between and above it, underflow, the largest subnormal's tie, the smallest
 * normal, an f32 subnormal, a negative subnormal, one just below the
 * subnormal tie, and one whose cast shifts its mantissa by 32. */
static const uint32_t special_bits[21] = {
    0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7F800001u, 0xFFC00001u, 0x477FE000u, 0x477FEF00u,
    0x477FF000u, 0x47800000u, 0x49742400u, 0x33800000u, 0x33000000u, 0x33C00000u, 0x33A00000u,
    0x32800000u, 0x387FE000u, 0x38800000u, 0x000116C2u, 0xB3800000u, 0x387FB000u, 0x2F400000u,
};

/* Inputs: activations A ~ N(0,1); weights B ~ N(0,1)/sqrt(k) (f16 variant:
 * rounded to f16, as stored); gradients dC ~ N(0,1) * scale (and with
 * --dist special, special_bits at seeded places); dA_in ~ N(0,1). */
static enum kv_status inputs(struct kv_case *c)
{
    const int64_t m = c->p[P_M].i, n = c->p[P_N].i, k = c->p[P_K].i;
    const double scale = c->p[P_SCALE].f, bs = 1.0 / sqrt((double)k);
    float *a = c->t[T_A].data, *dc = c->t[T_DC].data;
    kv_rng_normal_f32(c->seed, T_A, (size_t)(m * k), 1.0, a);
    kv_rng_normal_f32(c->seed, T_DC, (size_t)(m * n), scale, dc);
    if (c->p[P_DIST].c == D_SPECIAL)
        for (uint32_t s = 0; s < KV_COUNT(special_bits); s++) {
            uint64_t at = (uint64_t)(kv_rng_uniform(c->seed, 80 + s, 0) * (double)(m * n)) % (uint64_t)(m * n);
            memcpy(&dc[at], &special_bits[s], 4);
        }
    if (is_f16(c)) {
        float *b = malloc((size_t)(k * n) * sizeof *b);
        if (!b) return kv_error(KV_EDEVICE, "out of host memory for B (%lld elements)", (long long)(k * n));
        kv_rng_normal_f32(c->seed, T_B, (size_t)(k * n), bs, b);
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < k * n; i++) ((uint16_t *)c->t[T_B16].data)[i] = kv_f32_to_f16(b[i]);
        free(b);
    } else {
        kv_rng_normal_f32(c->seed, T_B, (size_t)(k * n), bs, c->t[T_B].data);
    }
    if (is_acc(c)) kv_rng_normal_f32(c->seed, T_DAIN, (size_t)(m * k), 1.0, c->t[T_DAIN].data);
    return KV_OK;
}

/* Scratch for the widened operands, kept for the process: a fresh 8 MB array
 * costs more in page faults than the widening itself (measured 12 ms of the
 * 1024^3 oracle's 130). Cases run one at a time, so one set serves. */
static double *scratch[6];
static size_t scratch_cap[6];

static double *scratch_get(int slot, size_t n)
{
    if (scratch_cap[slot] < n) {
        free(scratch[slot]);
        scratch[slot] = malloc(n * sizeof(double));
        scratch_cap[slot] = scratch[slot] ? n : 0;
    }
    return scratch[slot];
}

/* Widen t to float64 values and magnitudes in one pass (f16 casts of f32
 * values when cast16), the operands of the dgemms, into scratch slots
 * 2*pair and 2*pair+1. */
static enum kv_status widen(const struct kv_tensor *t, int cast16, int pair, double **val, double **mag)
{
    *val = scratch_get(2 * pair, t->count);
    *mag = scratch_get(2 * pair + 1, t->count);
    if (!*val || !*mag) return kv_error(KV_EDEVICE, "out of host memory for the gemm oracle");
    double *v = *val, *a = *mag;
    const size_t n = t->count;
    if (t->dtype == KV_F32 && !cast16) {
        const float *f = t->data;
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) v[i] = f[i], a[i] = fabs((double)f[i]);
    } else {
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) {
            double x = kv_load_f64(t->dtype, t->data, i);
            if (cast16) x = kv_f16_to_f32(kv_f32_to_f16((float)x));
            v[i] = x, a[i] = fabs(x);
        }
    }
    return KV_OK;
}

/* Columns [k0, k1) of A (m x k) as float64 values and magnitudes, m x (k1 - k0)
 * each (kv_dgemm_rows_t2: dB's operand, a block at a time). */
static void widen_cols(const void *ctx, int k0, int k1, double *v, double *a)
{
    const struct kv_tensor *A = ctx;
    const int64_t m = A->shape[0], k = A->shape[1], w = k1 - k0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < w; j++) {
            const double x = kv_load_f64(A->dtype, A->data, (size_t)(i * k + k0 + j));
            v[i * w + j] = x, a[i * w + j] = fabs(x);
        }
}

/* The bytes scratch slot `slot` grows by to hold n doubles: what the process
 * does not hold already (an earlier case's slots are kept, and an earlier
 * case's share of the host's memory is no longer available). */
static uint64_t scratch_growth(int slot, uint64_t n)
{
    return n > scratch_cap[slot] ? (n - scratch_cap[slot]) * sizeof(double) : 0;
}

/* What oracle() holds beyond y and S: unsampled, dA's operands widened
 * (dC's values and magnitudes in scratch slots 0 and 1, B's in 2 and 3),
 * and for dB dC's (slots 0 and 1 again, where dA was sampled) and the
 * blocks of A's columns on each thread, less what the slots hold already.
 * Sampled outputs are dots straight from the inputs. */
static uint64_t oracle_host(const struct kv_case *c, uint32_t whole, uint32_t sampled, const uint64_t *len)
{
    (void)whole, (void)len;
    const uint64_t m = (uint64_t)c->p[P_M].i, n = (uint64_t)c->p[P_N].i, k = (uint64_t)c->p[P_K].i;
    const int tda = is_cm(c) ? T_DA_CM : is_f16(c) ? T_DA16 : is_acc(c) ? T_DA_ACC : T_DA;
    const int da = !(sampled >> tda & 1), db = !(sampled >> T_DB & 1);
    uint64_t b = 0;
    for (int slot = 0; slot < 4; slot++)
        b += scratch_growth(slot, slot < 2 ? (da || db ? m * n : 0) : (da ? k * n : 0));
    if (db) b += kv_dgemm_rows_t2_host((int)k, (int)m);
    return b;
}

/* dA's sampled elements, dA[i, kk] = sum over l of dC[i, l] B[kk, l] (cast16:
 * dC's f32 values rounded to f16 first, the spec cast), straight from the
 * inputs: the sample (sorted) in runs of one row of dC, at most DA_RUN
 * elements each, and the row walked in pieces of DA_PIECE, each piece of
 * dC widened (and cast) once for the run, not once an element (9.2e9 casts
 * at m = 65537, n = 65535 on an H200). Each element's terms are summed in
 * order, l from 0. */
#define DA_RUN 256
#define DA_PIECE 4096
static enum kv_status sampled_da(struct kv_case *c, int tda, int cast16, const struct kv_tensor *B)
{
    const struct kv_tensor *DC = &c->t[T_DC];
    const size_t n = (size_t)c->p[P_N].i, k = (size_t)c->p[P_K].i, ns = c->n_sample[tda];
    const size_t *smp = c->sample[tda];
    size_t runs = 0, *first = malloc((ns + 1) * sizeof *first);
    if (!first) return kv_error(KV_EDEVICE, "out of host memory for dA's sample");
    for (size_t s = 0; s < ns; s++)
        if (!runs || smp[s] / k != smp[first[runs - 1]] / k || s - first[runs - 1] == DA_RUN) first[runs++] = s;
    first[runs] = ns;
    int oom = 0;
#pragma omp parallel
    {
        double *x = malloc(sizeof(double) * (2 * DA_PIECE + 2 * DA_RUN)), *y = x + DA_PIECE, *acc = y + DA_PIECE,
               *mag = acc + DA_RUN;
        if (!x) {
#pragma omp atomic write
            oom = 1;
        }
#pragma omp for schedule(dynamic, 8)
        for (size_t r = 0; r < runs; r++) {
            if (!x) continue;
            const size_t s0 = first[r], w = first[r + 1] - s0, i = smp[s0] / k;
            memset(acc, 0, 2 * DA_RUN * sizeof *acc); /* acc and mag */
            for (size_t l0 = 0; l0 < n; l0 += DA_PIECE) {
                const size_t len = n - l0 < DA_PIECE ? n - l0 : DA_PIECE;
                kv_load_f64_n(DC->dtype, DC->data, i * n + l0, x, len);
                for (size_t l = 0; cast16 && l < len; l++) x[l] = kv_f16_to_f32(kv_f32_to_f16((float)x[l]));
                for (size_t q = 0; q < w; q++) {
                    kv_load_f64_n(B->dtype, B->data, smp[s0 + q] % k * n + l0, y, len);
                    double a = acc[q], b = mag[q];
                    for (size_t l = 0; l < len; l++) {
                        const double t = x[l] * y[l];
                        a += t, b += fabs(t);
                    }
                    acc[q] = a, mag[q] = b;
                }
            }
            for (size_t q = 0; q < w; q++) {
                const size_t o = c->compact[tda] ? s0 + q : smp[s0 + q];
                c->y[tda][o] = acc[q], c->S[tda][o] = mag[q];
            }
        }
        free(x);
    }
    free(first);
    return oom ? kv_error(KV_EDEVICE, "out of host memory for dA's sample") : KV_OK;
}

/* dB's sampled elements, dB[kk, j] = sum over l of A[l, kk] dC[l, j]: a
 * chunk of the sample at a time, row l of A and dC read once for all of
 * the chunk's elements (a dot of its own would read each term from a
 * different row, a cache miss each: 35 s of a 43 s case on an H200 at m =
 * 65537). Each element's terms are summed in order, l from 0. */
#define DB_CHUNK 1024
static void sampled_db(struct kv_case *c)
{
    const size_t m = (size_t)c->p[P_M].i, n = (size_t)c->p[P_N].i, k = (size_t)c->p[P_K].i, ns = c->n_sample[T_DB];
    const float *a = c->t[T_A].data, *dc = c->t[T_DC].data;
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t s0 = 0; s0 < ns; s0 += DB_CHUNK) {
        const size_t w = ns - s0 < DB_CHUNK ? ns - s0 : DB_CHUNK;
        size_t col[DB_CHUNK], row[DB_CHUNK];
        double acc[DB_CHUNK] = {0}, mag[DB_CHUNK] = {0};
        for (size_t i = 0; i < w; i++) row[i] = c->sample[T_DB][s0 + i] / n, col[i] = c->sample[T_DB][s0 + i] % n;
        for (size_t l = 0; l < m; l++) {
            const float *al = a + l * k, *dl = dc + l * n;
            for (size_t i = 0; i < w; i++) {
                const double t = (double)al[row[i]] * (double)dl[col[i]];
                acc[i] += t, mag[i] += fabs(t);
            }
        }
        for (size_t i = 0; i < w; i++) {
            const size_t q = c->compact[T_DB] ? s0 + i : c->sample[T_DB][s0 + i];
            c->y[T_DB][q] = acc[i], c->S[T_DB][q] = mag[i];
        }
    }
}

/* dC16's oracle value for dC element d: its f16 cast (the exact oracle: d). */
static double dc16_of(float d, int cast) { return cast ? kv_f16_to_f32(kv_f32_to_f16(d)) : d; }

/* Tolerances (metrics.md: allowed = lambda*sqrt(n)*u*S + k_op*u*S + 0.5*ulp(y)).
 * dA, dB: dot products of length n (N for dA, M for dB) accumulated in f32:
 *   S = |dC| |B|^T or |A|^T |dC| (OpenBLAS dgemm on the magnitudes); each
 *   product rounds once (k_op = 1). In the f16 variant both factors are f16,
 *   so each product is exact in f32; k_op = 1 stays as the conservative side.
 * accumulate: y = dA_in + dC B^T with S = |dA_in| + |dC| |B|^T; the f32 sum of
 *   the product and dA_in rounds once more: k_op = 2.
 * dC16 (f16 cast): y is the RNE cast itself, exact in f16: n = 0, k_op = 0, so
 *   the allowed error is half an f16 ulp and any other rounding fails.
 * The exact oracle skips the casts (dC16 = dC, dA from the f32 dC).
 * With --sample, dA and dB are computed only at the sampled elements, and
 * every output's oracle holds only those (compact; dC16's whole cast goes
 * to its isolated input, c->iso). Unsampled, dC16's oracle is made in
 * blocks from that input (oracle_block): y and S are never held whole. */
static enum kv_status oracle(struct kv_case *c)
{
    enum kv_status st = KV_OK;
    const int m = (int)c->p[P_M].i, n = (int)c->p[P_N].i, k = (int)c->p[P_K].i;
    const int f16 = is_f16(c), cast = f16 && !c->exact;
    const struct kv_tensor *B = f16 ? &c->t[T_B16] : &c->t[T_B], *A = &c->t[T_A], *DC = &c->t[T_DC];
    const int tda = is_cm(c) ? T_DA_CM : f16 ? T_DA16 : is_acc(c) ? T_DA_ACC : T_DA;
    double *dc = NULL, *dca = NULL, *b = NULL, *ba = NULL, *dc32 = NULL, *dc32a = NULL;
    if (c->sample[tda]) {
        KV_TRY(sampled_da(c, tda, cast, B));
    } else {
        KV_TRY(widen(DC, cast, 0, &dc, &dca));
        KV_TRY(widen(B, 0, 1, &b, &ba));
        kv_dgemm_rows(0, 1, m, k, n, dc, n, b, n, c->y[tda], k);
        kv_dgemm_rows(0, 1, m, k, n, dca, n, ba, n, c->S[tda], k);
    }
    /* dB follows the f32 path in every variant. */
    if (c->sample[T_DB]) {
        sampled_db(c);
    } else {
        /* dB reads the f32 dC: the dA operands serve unless they were cast;
         * B's slots are free again once dA is done. */
        const double *dbv = dc, *dba = dca;
        if (!dc || cast) {
            KV_TRY(widen(DC, 0, 0, &dc32, &dc32a));
            dbv = dc32, dba = dc32a;
        }
        KV_TRY(kv_dgemm_rows_t2(k, n, m, widen_cols, A, dbv, dba, n, c->y[T_DB], c->S[T_DB], n));
    }
    const double u = 0x1p-24;
    c->bound[tda] = (struct kv_bound){.n = n, .k_op = 1, .u_acc = u, .rho = 1};
    /* Tensor cores may add with directed rounding (an error below 1 ulp
     * rather than half): the cooperative-matrix sums get twice the unit. */
    if (is_cm(c)) c->bound[tda].u_acc = 2 * u;
    c->bound[T_DB] = (struct kv_bound){.n = m, .k_op = 1, .u_acc = u, .rho = 1};
    if (is_acc(c)) {
        const float *din = c->t[T_DAIN].data;
        for (size_t q = 0; q < kv_oracle_len(c, tda); q++) {
            const size_t i = kv_oracle_elem(c, tda, q);
            c->y[tda][q] += din[i];
            c->S[tda][q] += fabs((double)din[i]);
        }
        c->bound[tda].k_op = 2;
    }
    if (f16) {
        const float *d = DC->data;
        /* the next stage's whole input, where the oracle is the sample's or made in blocks (oracle_block) */
        struct kv_tensor *iso = c->compact[T_DC16] || c->blocked[T_DC16] ? &c->iso[T_DC16] : NULL;
        /* stored as f16, the cast's value and the exact one are the same
         * bits: d's RNE cast (a NaN's payload kept as the cast keeps it) */
        uint16_t *h = iso ? iso->data : NULL;
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < (size_t)m * n; i++) {
            if (h) {
                h[i] = kv_f32_to_f16(d[i]);
                continue;
            }
            const double v = dc16_of(d[i], cast);
            c->y[T_DC16][i] = v, c->S[T_DC16][i] = fabs(v);
        }
        for (size_t q = 0; c->compact[T_DC16] && q < c->n_sample[T_DC16]; q++) {
            const double v = dc16_of(d[c->sample[T_DC16][q]], cast);
            c->y[T_DC16][q] = v, c->S[T_DC16][q] = fabs(v);
        }
        c->bound[T_DC16] = (struct kv_bound){.n = 0, .k_op = 0, .u_acc = u, .rho = 1};
    }
cleanup:
    return st;
}

/* dC16's oracle for the flat elements [lo, hi) (oracle_block): the cast
 * oracle() wrote into its isolated input, as it would have made y and S. */
static enum kv_status oracle_block(const struct kv_case *c, int t, size_t lo, size_t hi, int chained,
                                   const struct kv_oracle_block *b)
{
    (void)chained;
    if (t != T_DC16) return kv_error(KV_EDEVICE, "gemm-bwd: no block oracle for %s", c->k->tensors[t].name);
    kv_load_f64_n(KV_F16, c->iso[T_DC16].data, lo, b->y, hi - lo);
    for (size_t i = 0; i < hi - lo; i++) b->S[i] = fabs(b->y[i]);
    return KV_OK;
}

static const char *const sweep[] = {
    "m=1,n=1,k=1", "m=1,n=1,k=1,variant=accumulate", "m=1,n=1,k=1,variant=f16",
    "m=7,n=15,k=5", "m=13,n=5,k=7,variant=accumulate", "m=5,n=7,k=13,variant=f16",
    "m=1000,n=333,k=77", "m=1000,n=333,k=77,variant=accumulate", "m=1000,n=333,k=77,variant=f16",
    "m=512,n=512,k=16",      /* LoRA rank 16 */
    "m=4099,n=17,k=3",       /* tall and skinny */
    "m=257,n=132,k=129",     /* aligned rows (vec4 loads) with partial tiles */
    "m=33,n=1031,k=131,variant=f16", /* k > 128: a second column of tiles */
    "m=33,n=40,k=17,variant=f16,dist=special", /* every path of the f16 cast */
    "m=20,n=48,k=9,variant=f16,scale=3e4",     /* f16's top binade and overflow; n % 16 == 0 */
    "m=20,n=48,k=9,variant=f16,scale=1e-6",    /* f16 subnormals */
    "m=40,n=32,k=136,variant=accumulate",      /* n % 16 == 0: the reduction ends on a step; k > 128 */
    "m=7,n=9,k=1029",                          /* dB's rows (and dA's columns) past 512, not a multiple */
    "m=31,n=40,k=47",  /* m, k = 15 mod 16: a 16-wide tile one past the edge; n % 8 == 0 but not % 32:
                          a prefetch that ends exactly at n (f16-coopmat) */
    "m=9,n=14,k=20",   /* n % 7 == 0, n % 8 != 0: the unaligned loads of f16-coopmat */
    NULL,
};

const struct kv_kernel kv_kernel_gemm_bwd = {
    .name = "gemm-bwd",
    .summary = "GEMM backward: dA = dC B^T, dB = A^T dC (f32, accumulate, f16)",
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
    .oracle_block = oracle_block,
    .block_outputs = 1ull << T_DC16,
    .block_iso = 1ull << T_DC16,
    .sample_outputs = 1ull << T_DA | 1ull << T_DA_ACC | 1ull << T_DA16 | 1ull << T_DA_CM | 1ull << T_DB | 1ull << T_DC16,
};
