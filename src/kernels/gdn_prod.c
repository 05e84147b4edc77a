#include "kernels/gdn_prod.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/clones.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define KV_PROD_X86 1
#endif

enum { RB = 4 }; /* a register tile's rows */
enum { EP_NONE, EP_LE, EP_RE };

static inline double Lat(const struct kv_gdn_prod *p, const double *L, int i, int m)
{
    return L[(long)i * p->l_row + (long)m * p->l_col];
}

/* Rows i0..i1-1, columns c0..c1-1, one row at a time (the sums of a row side
 * by side, each over m in order). A non-finite term adds nothing to S. S's
 * and ep's terms fused, or (rounded) a rounded product then an add. */
KV_CLONES static void rows_part(const struct kv_gdn_prod *p, int i0, int i1, int c0, int c1, double *s, double *S,
                                double *ep, int ld, int add)
{
    for (int i = i0; i < i1; i++) {
        double *restrict si = s + (long)i * ld, *restrict Si = S + (long)i * ld;
        double *restrict ei = ep ? ep + (long)i * ld : NULL;
        const int ce = p->lower_cols && i < c1 ? (i > c0 ? i : c0) : c1;
        const int depth = p->lower_depth && i < p->depth ? i : p->depth;
        for (int j = add ? ce : c0; j < c1; j++) si[j] = 0, Si[j] = 0; /* a lower row past j = i: 0 */
        for (int j = add ? ce : c0; ei && j < c1; j++) ei[j] = 0;
        for (int m = 0; m < depth; m++) {
            const double a = Lat(p, p->L, i, m), aa = fabs(a), le = p->Le ? Lat(p, p->Le, i, m) : 0;
            const double *restrict b = p->R + (long)m * p->ldr, *restrict re = p->Re ? p->Re + (long)m * p->ldr : NULL;
            if (p->rounded)
                for (int j = c0; j < ce; j++) {
                    const double t = a * b[j];
                    si[j] += t, Si[j] = isfinite(t) ? Si[j] + fabs(t) : Si[j];
                }
            else
                for (int j = c0; j < ce; j++) {
                    const double t = a * b[j];
                    si[j] += t, Si[j] = isfinite(t) ? fma(aa, fabs(b[j]), Si[j]) : Si[j];
                }
            if (ei && p->Le)
                for (int j = c0; j < ce; j++) ei[j] = p->rounded ? ei[j] + le * fabs(b[j]) : fma(le, fabs(b[j]), ei[j]);
            else if (ei && re)
                for (int j = c0; j < ce; j++) ei[j] = p->rounded ? ei[j] + aa * re[j] : fma(aa, re[j], ei[j]);
        }
    }
}

#ifdef KV_PROD_X86
/* A register tile: rows i0..i0+RB-1 by one vector of columns from c0, over
 * m0 <= m < depth (the terms before m0 and from depth on are 0), every term
 * finite. The same operations as rows_part's: t = a b rounded, then added;
 * S and ep by fused multiply-adds, or (rounded) |t| and a rounded product
 * added. aL holds |L| in L's layout: each of a and |a| is then one
 * broadcast from memory (a load), where |a| made from a took two shuffles,
 * which compete with the arithmetic for its ports. */
#define TILE(NAME, TARGET, VEC, LOAD, STORE, ZERO, SET1, ADD, MUL, FMA, ABS)                                           \
    __attribute__((target(TARGET), always_inline)) static inline void NAME(                                            \
        const struct kv_gdn_prod *p, const double *aL, int i0, int c0, int m0, int depth, double *s, double *S,        \
        double *ep, int ld, int add, int mode, int rounded)                                                            \
    {                                                                                                                  \
        VEC ts[RB], tS[RB], te[RB];                                                                                    \
        for (int r = 0; r < RB; r++) {                                                                                 \
            const long q = (long)(i0 + r) * ld + c0;                                                                   \
            ts[r] = add ? LOAD(s + q) : ZERO(), tS[r] = add ? LOAD(S + q) : ZERO();                                    \
            te[r] = mode != EP_NONE && add ? LOAD(ep + q) : ZERO();                                                    \
        }                                                                                                              \
        for (int m = m0; m < depth; m++) {                                                                             \
            const long o = (long)m * p->ldr + c0;                                                                      \
            const VEC b = LOAD(p->R + o), ab = ABS(b), re = mode == EP_RE ? LOAD(p->Re + o) : ZERO();                  \
            for (int r = 0; r < RB; r++) {                                                                             \
                const VEC a = SET1(Lat(p, p->L, i0 + r, m)), aa = SET1(Lat(p, aL, i0 + r, m));                         \
                const VEC t = MUL(a, b), le = mode == EP_LE ? SET1(Lat(p, p->Le, i0 + r, m)) : ZERO();            \
                ts[r] = ADD(ts[r], t), tS[r] = rounded ? ADD(tS[r], ABS(t)) : FMA(aa, ab, tS[r]);                     \
                if (mode == EP_LE) te[r] = rounded ? ADD(te[r], MUL(le, ab)) : FMA(le, ab, te[r]);                     \
                if (mode == EP_RE) te[r] = rounded ? ADD(te[r], MUL(aa, re)) : FMA(aa, re, te[r]);                     \
            }                                                                                                          \
        }                                                                                                              \
        for (int r = 0; r < RB; r++) {                                                                                 \
            const long q = (long)(i0 + r) * ld + c0;                                                                   \
            STORE(s + q, ts[r]), STORE(S + q, tS[r]);                                                                  \
            if (mode != EP_NONE) STORE(ep + q, te[r]);                                                                 \
        }                                                                                                              \
    }

static inline __attribute__((target("avx2"), always_inline)) __m256d abs256(__m256d v)
{
    return _mm256_and_pd(v, _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL)));
}
TILE(tile512, "avx512f", __m512d, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_setzero_pd, _mm512_set1_pd, _mm512_add_pd,
     _mm512_mul_pd, _mm512_fmadd_pd, _mm512_abs_pd)
TILE(tile256, "avx2,fma", __m256d, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_setzero_pd, _mm256_set1_pd, _mm256_add_pd,
     _mm256_mul_pd, _mm256_fmadd_pd, abs256)

/* Rows i0..i1-1 of a lower product, whose tiles ran to column cols: the sums
 * past j = i (and past cols) are 0. */
static void lower_zero(const struct kv_gdn_prod *p, int i0, int i1, int cols, double *s, double *S, double *ep, int ld)
{
    for (int i = i0; i < i1; i++) {
        const int from = p->lower_cols ? (i < cols ? i : cols) : cols;
        for (int j = from; j < p->cols; j++) {
            s[(long)i * ld + j] = 0, S[(long)i * ld + j] = 0;
            if (ep) ep[(long)i * ld + j] = 0;
        }
    }
}

#define MODES(TILEF, RD)                                                                                               \
    {                                                                                                                  \
        if (mode == EP_LE) TILEF(p, aL, i0, c0, m0, depth, s, S, ep, ld, add, EP_LE, RD);                              \
        else if (mode == EP_RE) TILEF(p, aL, i0, c0, m0, depth, s, S, ep, ld, add, EP_RE, RD);                         \
        else TILEF(p, aL, i0, c0, m0, depth, s, S, ep, ld, add, EP_NONE, RD);                                          \
    }
/* Rows i0..i0+RB-1 in tiles of W columns (the last columns row by row), and
 * a lower row's sums past j = i set to 0. */
#define ROW_BLOCKS(NAME, TARGET, TILEF, W)                                                                             \
    __attribute__((target(TARGET))) static void NAME(const struct kv_gdn_prod *p, const double *aL, double *s,        \
                                                     double *S, double *ep, int ld, int add, int mode)                 \
    {                                                                                                                  \
        for (int i0 = 0; i0 + RB <= p->rows; i0 += RB) {                                                               \
            const int last = i0 + RB - 1; /* lower sums stop before the block's last row */                           \
            /* a lower block's columns in whole tiles: those past j = i are set to 0 after */                       \
            const int cols = p->lower_cols && (last + W - 1) / W * W < p->cols ? (last + W - 1) / W * W : p->cols;    \
            const int depth = (p->lower_depth || p->zero_from_i) && last < p->depth ? last : p->depth;                 \
            /* leading zero terms change no sum that starts at 0 */                                                   \
            const int z = add || !p->zero_below ? 0 : i0 + p->zero_below - 1, m0 = z < depth ? z : depth;             \
            int c0 = 0;                                                                                                \
            for (; c0 + W <= cols; c0 += W) /* mode and rounded constants in each call */                             \
                if (p->rounded) MODES(TILEF, 1)                                                                        \
                else MODES(TILEF, 0)                                                                                   \
            if (c0 < cols) rows_part(p, i0, i0 + RB, c0, cols, s, S, ep, ld, add);                                     \
            lower_zero(p, i0, i0 + RB, cols, s, S, ep, ld);                                                            \
        }                                                                                                              \
    }

ROW_BLOCKS(blocks512, "avx512f", tile512, 8)
ROW_BLOCKS(blocks256, "avx2,fma", tile256, 4)
#endif

static int tiles_cap = 2; /* kv_gdn_prod_tiles */

KV_CLONES static void abs_n(double *restrict a, const double *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++) a[i] = fabs(x[i]);
}

void kv_gdn_prod_tiles(int most) { tiles_cap = most; }

/* The tiles where this CPU has them (AVX-512, else AVX2 with FMA), as wide
 * as kv_gdn_prod_tiles allows; the rows they leave (rows % RB), and every
 * row elsewhere, row by row. */
static void tiles(const struct kv_gdn_prod *p, double *s, double *S, double *ep, int ld, int add, int mode)
{
    int done = 0;
#ifdef KV_PROD_X86
    const int has =
        __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    const int level = has < tiles_cap ? has : tiles_cap;
    /* |L| in L's layout, over the extent the tiles read (none: the rows below make every sum) */
    const int tiled = level > 0 && p->rows >= RB && p->depth > 0;
    const size_t ext = tiled ? (size_t)(p->rows - 1) * (size_t)p->l_row + (size_t)(p->depth - 1) * (size_t)p->l_col + 1 : 0;
    double *aL = tiled ? malloc(sizeof(double) * ext) : NULL;
    if (aL) {
        abs_n(aL, p->L, ext);
        if (level == 2) blocks512(p, aL, s, S, ep, ld, add, mode);
        if (level == 1) blocks256(p, aL, s, S, ep, ld, add, mode);
        done = p->rows / RB * RB;
        free(aL);
    }
#else
    (void)mode;
#endif
    rows_part(p, done, p->rows, 0, p->cols, s, S, ep, ld, add);
}

/* Whether outer x inner entries (x[o * stride + e]) are all finite and at
 * most 2^510 in magnitude: then no product of two such overflows. */
KV_CLONES static int fits(const double *x, int outer, int inner, int stride)
{
    int bad = 0;
    for (int o = 0; o < outer; o++)
        for (int e = 0; e < inner; e++) bad += !(fabs(x[(long)o * stride + e]) <= 0x1p510);
    return !bad;
}

void kv_gdn_prod_rows(const struct kv_gdn_prod *p, double *s, double *S, double *ep, int ld, int add)
{
    if (!p->Le && !p->Re) ep = NULL;
    rows_part(p, 0, p->rows, 0, p->cols, s, S, ep, ld, add);
}

void kv_gdn_prod(const struct kv_gdn_prod *p, double *s, double *S, double *ep, int ld, int add)
{
    if (!p->Le && !p->Re) ep = NULL;
    /* every term finite where both factors' entries are at most 2^510 */
    const int l = p->l_col == 1 ? fits(p->L, p->rows, p->depth, p->l_row) : fits(p->L, p->depth, p->rows, p->l_col);
    if (!l || !fits(p->R, p->depth, p->cols, p->ldr)) {
        kv_gdn_prod_rows(p, s, S, ep, ld, add);
        return;
    }
    tiles(p, s, S, ep, ld, add, !ep ? EP_NONE : p->Le ? EP_LE : EP_RE);
}
