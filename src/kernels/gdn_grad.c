#include "kernels/gdn_grad.h"

#include <math.h>
#include <string.h>

#include "core/clones.h"
#include "core/dtype.h"
#include "kernels/gdn_prod.h"

static double dot(const double *a, const double *b, int n)
{
    double s = 0;
    for (int e = 0; e < n; e++) s += a[e] * b[e];
    return s;
}

/* L (strictly lower) into Lm, n x n. */
static void chunk_L(const struct kv_gdn_chunk *x, double *Lm)
{
    const int n = x->n;
    memset(Lm, 0, sizeof(double) * (size_t)n * (size_t)n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            Lm[i * n + j] = x->beta[i] * dot(x->k + i * x->K, x->k + j * x->K, x->K) * exp(x->g[i] - x->g[j]);
}

void kv_gdn_chunk_A(const struct kv_gdn_chunk *x, double *A)
{
    const int n = x->n;
    double Lm[64 * 64];
    chunk_L(x, Lm);
    memset(A, 0, sizeof(double) * (size_t)n * (size_t)n);
    for (int j = 0; j < n; j++) {
        A[j * n + j] = 1;
        for (int i = j + 1; i < n; i++) {
            double s = 0;
            for (int m = j; m < i; m++) s += Lm[i * n + m] * A[m * n + j];
            A[i * n + j] = -s;
        }
    }
}

void kv_gdn_chunk_forward(const struct kv_gdn_chunk *x, double *w, double *u)
{
    const int n = x->n;
    double A[64 * 64];
    kv_gdn_chunk_A(x, A);
    for (int i = 0; i < n; i++) {
        for (int c = 0; c < x->K; c++) {
            double s = 0;
            for (int j = 0; j <= i; j++) s += A[i * n + j] * x->k[j * x->K + c] * x->beta[j] * exp(x->g[j]);
            w[i * x->K + c] = s;
        }
        for (int c = 0; c < x->V; c++) {
            double s = 0;
            for (int j = 0; j <= i; j++) s += A[i * n + j] * x->v[j * x->V + c] * x->beta[j];
            u[i * x->V + c] = s;
        }
    }
}

void kv_gdn_chunk_backward(const struct kv_gdn_chunk *x, double *dk, double *dv, double *dbeta, double *dg,
                           double *scratch)
{
    const int n = x->n, K = x->K, V = x->V, D = K > V ? K : V;
    double *A = scratch, *Lm = A + n * n, *dA = Lm + n * n, *T = dA + n * n, *dL = T + n * n;
    double *dbkg = dL + n * n, *dbv = dbkg + n * D;
    kv_gdn_chunk_A(x, A);
    chunk_L(x, Lm);
    /* w = A bkg, u = A bv: dA = dw bkg^T + du bv^T (lower part used), dbkg = A^T dw, dbv = A^T du */
    for (int i = 0; i < n; i++)
        for (int j = 0; j <= i; j++) {
            double s = 0, ej = x->beta[j] * exp(x->g[j]);
            for (int c = 0; c < K; c++) s += x->dw[i * K + c] * x->k[j * K + c] * ej;
            for (int c = 0; c < V; c++) s += x->du[i * V + c] * x->v[j * V + c] * x->beta[j];
            dA[i * n + j] = s;
        }
    for (int j = 0; j < n; j++) {
        for (int c = 0; c < K; c++) {
            double s = 0;
            for (int i = j; i < n; i++) s += A[i * n + j] * x->dw[i * K + c];
            dbkg[j * D + c] = s;
        }
        for (int c = 0; c < V; c++) {
            double s = 0;
            for (int i = j; i < n; i++) s += A[i * n + j] * x->du[i * V + c];
            dbv[j * D + c] = s;
        }
    }
    /* A = (I + L)^-1: dL = -A^T dA A^T, kept where L varies (strictly lower) */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int m = 0; m < n; m++) s += (m >= i ? A[m * n + i] : 0) * (m >= j ? dA[m * n + j] : 0);
            T[i * n + j] = s; /* A^T dA (lower-triangular factors) */
        }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) {
            double s = 0;
            for (int m = 0; m < n; m++) s += T[i * n + m] * A[j * n + m];
            dL[i * n + j] = -s;
        }
    /* L[i][j] = beta_i (k_i . k_j) exp(g_i - g_j) */
    for (int i = 0; i < n; i++) {
        dbeta[i] = 0, dg[i] = 0;
        for (int c = 0; c < V; c++) dv[i * V + c] = 0;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) {
            double e = exp(x->g[i] - x->g[j]), d = dL[i * n + j], kk = dot(x->k + i * K, x->k + j * K, K);
            dbeta[i] += d * kk * e;
            dg[i] += d * Lm[i * n + j];
            dg[j] -= d * Lm[i * n + j];
            for (int c = 0; c < K; c++) {
                dk[i * K + c] += d * x->beta[i] * e * x->k[j * K + c];
                dk[j * K + c] += d * x->beta[i] * e * x->k[i * K + c];
            }
        }
    /* bkg_j = k_j beta_j exp(g_j), bv_j = v_j beta_j */
    for (int j = 0; j < n; j++) {
        double ej = exp(x->g[j]), sk = 0, sv = 0;
        for (int c = 0; c < K; c++) {
            dk[j * K + c] += dbkg[j * D + c] * x->beta[j] * ej;
            sk += dbkg[j * D + c] * x->k[j * K + c];
        }
        for (int c = 0; c < V; c++) {
            dv[j * V + c] = dbv[j * D + c] * x->beta[j];
            sv += dbv[j * D + c] * x->v[j * V + c];
        }
        dbeta[j] += sk * ej + sv;
        dg[j] += sk * x->beta[j] * ej;
    }
}

/* ---- FLA's order, with the device's error carried along ---- */

#define U32 0x1p-24
/* An f32 accumulation of n terms of absolute sum S is within lam(w, n) S of
 * exact (metrics.md's probabilistic bound, lambda = 8, plus its last add),
 * in the spec's unit ua (2^-24, or 2^-23 where tensor cores truncate). */
/* Vulkan's exp: 3 + 2|x| ULP, relative to the result. */
static double rexp(double x) { return (3 + 2 * fabs(x)) * 0x1p-23; }
static inline double bf(double v) { return (double)kv_bf16_to_f32(kv_f32_to_bf16((float)v)); }
/* fmax, inline: the larger, or the one that is not NaN */
static inline double max_num(double a, double b) { return a != a ? b : b != b ? a : a > b ? a : b; }

/* The spec's bf16 casts of a row, z[j] held by the device within e[j]
 * (j < m, a loop that vectorizes): the values into dst and, in err, the
 * most the device's cast may differ from each (0 unless z is within e of a
 * rounding boundary: then the neighbour's distance); the casts that may
 * flip counted into *flips. Without round, dst = z and err = e. */
static inline void cast16_n(const double *restrict z, const double *restrict e, int round, double *restrict dst,
                            double *restrict err, int m, size_t *flips)
{
    if (!round) {
        for (int j = 0; j < m; j++) dst[j] = z[j], err[j] = e[j];
        return;
    }
    size_t f = 0;
    for (int j = 0; j < m; j++) {
        const double r = bf(z[j]), lo = bf(z[j] - e[j]), hi = bf(z[j] + e[j]), d = max_num(hi - r, r - lo);
        dst[j] = r, err[j] = d, f += d > 0;
    }
    *flips += f;
}

struct spec_work {
    const struct kv_gdn_chunk *x;
    const double *A;
    struct kv_gdn_spec *o;
    int n, K, V;
    double ua;                      /* the intermediates' accumulation unit */
    double lam_n, lam_K, lam_KV;    /* lam of n, K and K + V terms, made once per chunk */
    double ge[64], bg[64], rbg[64]; /* exp(g), beta exp(g) and its relative error on the device */
    double *KS, *KSe, *VS, *KB;     /* staged bf16(k bg), bf16(v beta), bf16(k beta): n x D */
    double *dk1, *dk1e;             /* dk after pass 1 (bf16) and its error, n x K */
    double *dA, *dAe, *T, *Te, *Ug, *Uge, *M, *Me; /* n x n */
    /* Transposed copies (column c of KS is row c of KSt): the right factors
     * of the products (kernels/gdn_prod.h), each sum over the same terms in
     * the same order as a dot product would; P: six n x max(n, D) results. */
    double *KSt, *KSet, *VSt, *kt, *At, *P[6];
    double *kk, *kkS; /* k k^T and its S, n x n: with kt, kept between the calls of a key head (same_k) */
    double *zr, *er; /* a row's values and their errors before a cast: max(n, D) each */
    int a_lower;     /* A lower-triangular (A[m][i] = 0 for i > m): A^T's zeros left out of the tiles */
};

size_t kv_gdn_spec_scratch(int K, int V)
{
    const size_t n = 64, D = (size_t)(K > V ? K : V), W = D > n ? D : n;
    return 8 * n * n + 6 * n * D + 3 * n * (size_t)K + n * (size_t)V + n * n + 6 * n * W + 2 * W + 2 * n * n;
}

static double lam(const struct spec_work *w, int n) { return (8 * sqrt((double)n) + 1) * w->ua; }

/* An f32 sum whose terms' magnitudes add up to S may overflow past this. */
#define F32_OVER 0x1.fffffep127
static void sum_range(struct spec_work *w, double S) { w->o->overflow |= S >= F32_OVER; }
/* A term's magnitude in S: S sums the finite terms (all of them where the
 * sum is finite; where an infinite term makes it infinite, S still says
 * whether the f32 sum of the others may overflow first). */
static inline double mag(double t) { return isfinite(t) ? fabs(t) : 0; }

/* In blocks of 8 rows: each column's 8 entries one line of t (row by row,
 * every store went to another line). */
static void transpose(double *restrict t, const double *restrict a, int rows, int cols)
{
    int i0 = 0;
    for (; i0 + 8 <= rows; i0 += 8)
        for (int c = 0; c < cols; c++)
            for (int r = 0; r < 8; r++) t[c * rows + i0 + r] = a[(i0 + r) * cols + c];
    for (int i = i0; i < rows; i++)
        for (int c = 0; c < cols; c++) t[c * rows + i] = a[i * cols + c];
}

KV_CLONES static void stage(struct spec_work *w)
{
    const struct kv_gdn_chunk *x = w->x;
    const int n = w->n, K = w->K, V = w->V, r = w->o->round;
    for (int j = 0; j < n; j++) {
        w->ge[j] = exp(x->g[j]), w->bg[j] = x->beta[j] * w->ge[j], w->rbg[j] = rexp(x->g[j]) + U32;
        for (int c = 0; c < K; c++) {
            const double z = x->k[j * K + c] * w->bg[j];
            w->zr[c] = z, w->er[c] = fabs(z) * (w->rbg[j] + U32);
        }
        cast16_n(w->zr, w->er, r, w->KS + j * K, w->KSe + j * K, K, &w->o->flips);
        for (int c = 0; c < K; c++)
            w->KB[j * K + c] = r ? bf((float)(x->k[j * K + c] * x->beta[j])) : x->k[j * K + c] * x->beta[j];
        for (int c = 0; c < V; c++)
            w->VS[j * V + c] = r ? bf((float)(x->v[j * V + c] * x->beta[j])) : x->v[j * V + c] * x->beta[j];
    }
    transpose(w->KSt, w->KS, n, K), transpose(w->KSet, w->KSe, n, K), transpose(w->VSt, w->VS, n, V);
    if (!w->o->same_k) transpose(w->kt, x->k, n, K);
    transpose(w->At, w->A, n, n);
}

/* Pass 1 over K and the V pass: dk1, dv, and dbeta's and dg's first terms.
 * Column c's sums run over m in order: s = sum_m A[m][i] dw[m][c] (A^T dw). */
KV_CLONES static void pass1(struct spec_work *w)
{
    const struct kv_gdn_chunk *x = w->x;
    struct kv_gdn_spec *o = w->o;
    const int n = w->n, K = w->K, V = w->V;
    double *SK = w->P[0], *SKS = w->P[1], *SV = w->P[2], *SVS = w->P[3];
    kv_gdn_prod(&(struct kv_gdn_prod){.L = w->A, .l_row = 1, .l_col = n, .R = x->dw, .ldr = K, .rows = n, .cols = K,
                                      .depth = n, .zero_below = w->a_lower},
                SK, SKS, NULL, K, 0);
    kv_gdn_prod(&(struct kv_gdn_prod){.L = w->A, .l_row = 1, .l_col = n, .R = x->du, .ldr = V, .rows = n, .cols = V,
                                      .depth = n, .zero_below = w->a_lower},
                SV, SVS, NULL, V, 0);
    for (int i = 0; i < n; i++) {
        double db = 0, dbS = 0, dbsl = 0, dg = 0, dgS = 0, dgsl = 0;
        const double *sk = SK + i * K, *Sk = SKS + i * K, *sv = SV + i * V, *Sv = SVS + i * V;
        int ov = 0;
        for (int c = 0; c < K; c++) { /* dk1, cast */
            const double s = sk[c], S = Sk[c], z = s * w->bg[i];
            ov |= (S >= F32_OVER) | (fabs(z) >= F32_OVER);
            w->zr[c] = z, w->er[c] = fabs(w->bg[i]) * (w->lam_n * S) + fabs(z) * (w->rbg[i] + U32);
        }
        o->overflow |= ov;
        cast16_n(w->zr, w->er, o->round, w->dk1 + i * K, w->dk1e + i * K, K, &o->flips);
        for (int c = 0; c < K; c++) { /* dbeta's and dg's sums, in order */
            const double s = sk[c], e = w->lam_n * Sk[c], kv = x->k[i * K + c];
            double tb = s * kv * w->ge[i], kbg = kv * w->bg[i], tg = s * kbg;
            db += tb, dbS += mag(tb), dbsl += fabs(kv * w->ge[i]) * e + fabs(tb) * (rexp(x->g[i]) + 2 * U32);
            dg += tg, dgS += mag(tg), dgsl += fabs(kbg) * e + fabs(tg) * (w->rbg[i] + 2 * U32);
        }
        double *restrict dv = o->dv + i * V, *restrict dvS = o->dv_S + i * V;
        for (int c = 0; c < V; c++) { /* dv, apart from the sums: a loop that vectorizes */
            const double S = Sv[c];
            ov |= (S >= F32_OVER) | (S * fabs(x->beta[i]) >= F32_OVER);
            dv[c] = sv[c] * x->beta[i], dvS[c] = S * fabs(x->beta[i]);
        }
        o->overflow |= ov;
        for (int c = 0; c < V; c++) {
            double tb = sv[c] * x->v[i * V + c];
            db += tb, dbS += mag(tb), dbsl += fabs(x->v[i * V + c]) * w->lam_n * Sv[c] + fabs(tb) * U32;
        }
        o->dbeta[i] = db, o->dbeta_S[i] = dbS, o->dbeta_sl[i] = dbsl;
        o->dg[i] = dg, o->dg_S[i] = dgS, o->dg_sl[i] = dgsl;
        sum_range(w, dbS), sum_range(w, dgS);
    }
}

/* A row's n sums into dst (cast to bf16 where ab, with their errors in
 * dste): value s, terms' magnitudes S and operand error ep, lam_t the lam of
 * their number of terms. */
static void put_row(struct spec_work *w, const double *s, const double *S, const double *ep, double lam_t, int ab,
                    double *dst, double *dste)
{
    int ov = 0;
    for (int j = 0; j < w->n; j++) w->er[j] = lam_t * S[j] + ep[j], ov |= S[j] >= F32_OVER;
    w->o->overflow |= ov;
    cast16_n(s, w->er, ab, dst, dste, w->n, &w->o->flips);
}

/* dA = dw KS^T + du VS^T, strictly lower, in A's dtype; T = dA A^T (cast);
 * the gated Ug = bf16(-(A^T T) exp(g_i - g_j)), strictly lower. Each sum
 * runs over its terms in the order of the dot product it is. */
KV_CLONES static void through_A(struct spec_work *w)
{
    const struct kv_gdn_chunk *x = w->x;
    struct kv_gdn_spec *o = w->o;
    const int n = w->n, K = w->K, V = w->V, ab = o->a_bf16 && o->round;
    const double *A = w->A;
    double *s = w->P[0], *S = w->P[1], *ep = w->P[2];
    /* dA[i][j], j < i: sum_c dw[i][c] KS[j][c], then du VS */
    kv_gdn_prod(&(struct kv_gdn_prod){.L = x->dw, .l_row = K, .l_col = 1, .R = w->KSt, .Re = w->KSet, .ldr = n, .rows = n,
                                      .cols = n, .depth = K, .lower_cols = 1},
                s, S, ep, n, 0);
    kv_gdn_prod(&(struct kv_gdn_prod){.L = x->du, .l_row = V, .l_col = 1, .R = w->VSt, .ldr = n, .rows = n, .cols = n,
                                      .depth = V, .lower_cols = 1},
                s, S, NULL, n, 1);
    for (int i = 0; i < n; i++)
        put_row(w, s + i * n, S + i * n, ep + i * n, w->lam_KV, ab, w->dA + i * n, w->dAe + i * n);
    /* T[i][j] = sum_{m < i} dA[i][m] A[j][m] */
    kv_gdn_prod(&(struct kv_gdn_prod){.L = w->dA, .Le = w->dAe, .l_row = n, .l_col = 1, .R = w->At, .ldr = n, .rows = n,
                                      .cols = n, .depth = n, .lower_depth = 1},
                s, S, ep, n, 0);
    for (int i = 0; i < n; i++) put_row(w, s + i * n, S + i * n, ep + i * n, w->lam_n, ab, w->T + i * n, w->Te + i * n);
    /* Ug[i][j], j < i: sum_m A[m][i] T[m][j], gated */
    kv_gdn_prod(&(struct kv_gdn_prod){.L = A, .l_row = 1, .l_col = n, .R = w->T, .Re = w->Te, .ldr = n, .rows = n,
                                      .cols = n, .depth = n, .lower_cols = 1, .zero_below = w->a_lower},
                s, S, ep, n, 0);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++) {
            const double sj = s[i * n + j], Sj = S[i * n + j], ej = ep[i * n + j];
            double d = x->g[i] - x->g[j], gate = exp(d), z = -sj * gate;
            sum_range(w, Sj), sum_range(w, Sj * gate);
            w->zr[j] = z, w->er[j] = gate * (w->lam_n * Sj + ej) + fabs(z) * (rexp(d) + U32 * fabs(d) + U32);
        }
        cast16_n(w->zr, w->er, o->round, w->Ug + i * n, w->Uge + i * n, i, &o->flips);
        for (int j = i; j < n; j++) w->Ug[i * n + j] = w->Uge[i * n + j] = 0;
    }
}

/* A row of dk = dkb beta + t + dk1, its S and its slack; whether an S
 * reaches f32's overflow. Its arguments restrict (GCC keeps no restrict of a
 * local pointer: the loop wanted more alias checks than it makes), so that
 * it vectorizes. */
static inline int dk_combine(double *restrict dk, double *restrict dkS, double *restrict dksl,
                             const double *restrict dkb, const double *restrict Sd, const double *restrict ed,
                             const double *restrict t, const double *restrict St, const double *restrict et,
                             const double *restrict dk1, const double *restrict dk1e, double beta, int K)
{
    int ov = 0;
    for (int c = 0; c < K; c++) {
        const double S = fabs(beta) * Sd[c] + St[c] + mag(dk1[c]);
        dk[c] = dkb[c] * beta + t[c] + dk1[c], dkS[c] = S, dksl[c] = fabs(beta) * ed[c] + et[c] + dk1e[c];
        ov |= (Sd[c] >= F32_OVER) | (St[c] >= F32_OVER) | (S >= F32_OVER);
    }
    return ov;
}

/* Pass 2: M = (k k^T) beta_i, dkb = Ug k, dk = dkb beta + Ug^T KB + dk1,
 * dbeta's last term, and dg's rowsum - colsum of Ug * M. Each sum runs over
 * its terms in the order of the dot product it is. */
KV_CLONES static void pass2(struct spec_work *w)
{
    const struct kv_gdn_chunk *x = w->x;
    struct kv_gdn_spec *o = w->o;
    const int n = w->n, K = w->K;
    /* M[i][j] = sum_c k[i][c] k[j][c] (the key head's: made once for its value heads) */
    if (!o->same_k)
        kv_gdn_prod(&(struct kv_gdn_prod){.L = x->k, .l_row = K, .l_col = 1, .R = w->kt, .ldr = n, .rows = n,
                                          .cols = n, .depth = K},
                    w->kk, w->kkS, NULL, n, 0);
    int ov = 0;
    for (int i = 0; i < n; i++) {
        const double *s = w->kk + i * n, *S = w->kkS + i * n;
        for (int j = 0; j < n; j++) {
            w->M[i * n + j] = s[j] * x->beta[i];
            ov |= (S[j] >= F32_OVER) | (S[j] * fabs(x->beta[i]) >= F32_OVER);
            w->Me[i * n + j] = fabs(x->beta[i]) * w->lam_K * S[j] + U32 * fabs(w->M[i * n + j]);
        }
    }
    /* over j: dkb[i][c] = sum_j Ug[i][j] k[j][c], t[i][c] = sum_j Ug[j][i] KB[j][c] (Ug and Uge
     * strictly lower: the tiles leave out their zeros) */
    kv_gdn_prod(&(struct kv_gdn_prod){.L = w->Ug, .Le = w->Uge, .l_row = n, .l_col = 1, .R = x->k, .ldr = K, .rows = n,
                                      .cols = K, .depth = n, .zero_from_i = 1},
                w->P[0], w->P[1], w->P[2], K, 0);
    kv_gdn_prod(&(struct kv_gdn_prod){.L = w->Ug, .Le = w->Uge, .l_row = 1, .l_col = n, .R = w->KB, .ldr = K, .rows = n,
                                      .cols = K, .depth = n, .zero_below = 2},
                w->P[3], w->P[4], w->P[5], K, 0);
    for (int i = 0; i < n; i++) {
        const double *dkb = w->P[0] + i * K, *Sd = w->P[1] + i * K, *ed = w->P[2] + i * K;
        const double *t = w->P[3] + i * K, *St = w->P[4] + i * K, *et = w->P[5] + i * K;
        double *dk = o->dk + i * K, *dkS = o->dk_S + i * K, *dksl = o->dk_sl + i * K;
        const double *dk1 = w->dk1 + i * K, *dk1e = w->dk1e + i * K;
        ov |= dk_combine(dk, dkS, dksl, dkb, Sd, ed, t, St, et, dk1, dk1e, x->beta[i], K);
        /* the sums in order, held in registers (through o, each add waited on a store) */
        double db = o->dbeta[i], dbS = o->dbeta_S[i], dbsl = o->dbeta_sl[i];
        for (int c = 0; c < K; c++) { /* dbeta's last sum */
            double kv = x->k[i * K + c], tb = dkb[c] * kv;
            db += tb, dbS += mag(tb), dbsl += fabs(kv) * (w->lam_n * Sd[c] + ed[c]) + fabs(tb) * U32;
        }
        o->dbeta[i] = db, o->dbeta_S[i] = dbS, o->dbeta_sl[i] = dbsl;
        double dg = o->dg[i], dgS = o->dg_S[i], dgsl = o->dg_sl[i];
        for (int j = 0; j < n; j++) {
            double a = w->Ug[i * n + j] * w->M[i * n + j], b = w->Ug[j * n + i] * w->M[j * n + i];
            dg += a - b, dgS += mag(a) + mag(b);
            dgsl += w->Uge[i * n + j] * fabs(w->M[i * n + j]) + fabs(w->Ug[i * n + j]) * w->Me[i * n + j] +
                    w->Uge[j * n + i] * fabs(w->M[j * n + i]) + fabs(w->Ug[j * n + i]) * w->Me[j * n + i];
        }
        o->dg[i] = dg, o->dg_S[i] = dgS, o->dg_sl[i] = dgsl;
        sum_range(w, dgS), sum_range(w, dbS); /* the sums' final S, once per row */
    }
    o->overflow |= ov;
}

int kv_gdn_a_lower(const double *A, int n)
{
    int lower = 1;
    for (int m = 0; m < n; m++)
        for (int i = m + 1; i < n; i++) lower &= A[m * n + i] == 0;
    return lower;
}

void kv_gdn_chunk_backward_spec(const struct kv_gdn_chunk *x, const double *A, struct kv_gdn_spec *o, double *scratch)
{
    const int n = x->n, K = x->K, V = x->V, D = K > V ? K : V;
    struct spec_work w = {.x = x, .A = A, .o = o, .n = n, .K = K, .V = V, .ua = o->u_acc > 0 ? o->u_acc : U32};
    double *p = scratch;
    w.KS = p, p += n * D, w.KSe = p, p += n * D, w.VS = p, p += n * D, w.KB = p, p += n * D;
    w.dk1 = p, p += n * D, w.dk1e = p, p += n * D;
    w.dA = p, p += n * n, w.dAe = p, p += n * n, w.T = p, p += n * n, w.Te = p, p += n * n;
    w.Ug = p, p += n * n, w.Uge = p, p += n * n, w.M = p, p += n * n, w.Me = p, p += n * n;
    w.KSt = p, p += n * K, w.KSet = p, p += n * K, w.VSt = p, p += n * V, w.At = p, p += n * n;
    for (int q = 0; q < 6; q++) w.P[q] = p, p += n * (D > n ? D : n);
    w.zr = p, p += D > n ? D : n, w.er = p, p += D > n ? D : n;
    /* the kept part last, at fixed places (64-row strides: n may differ only where same_k is not set) */
    p = scratch + kv_gdn_spec_scratch(K, V) - 2 * 64 * 64 - 64 * (size_t)K;
    w.kt = p, p += 64 * K, w.kk = p, p += 64 * 64, w.kkS = p;
    w.a_lower = kv_gdn_a_lower(A, n);
    w.lam_n = lam(&w, n), w.lam_K = lam(&w, K), w.lam_KV = lam(&w, K + V);
    o->flips = 0, o->overflow = 0;
    stage(&w);
    pass1(&w);
    through_A(&w);
    pass2(&w);
}
