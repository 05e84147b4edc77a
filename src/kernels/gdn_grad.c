#include "kernels/gdn_grad.h"

#include <math.h>
#include <string.h>

#include "core/dtype.h"

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

/* FLA's casts: to bf16 (through f32, as a cast of an f32 value), to f32. */
static double bf(double v, int round) { return round ? (double)kv_bf16_to_f32(kv_f32_to_bf16((float)v)) : v; }
static double f32(double v, int round) { return round ? (double)(float)v : v; }

/* Pass 1 over K: dA += dw bf16(kbg)^T, dkbg = A^T dw, dk (bf16 between
 * passes), dbeta and dg's terms; then the V pass: dA += du bf16(vb)^T, dv,
 * dbeta. dA (n x n) is written here. */
static void spec_first(const struct kv_gdn_chunk *x, const double *A, int round, double *dA, double *dk1, double *dv,
                       double *dbeta, double *dg)
{
    const int n = x->n, K = x->K, V = x->V;
    memset(dA, 0, sizeof(double) * (size_t)n * (size_t)n);
    for (int i = 0; i < n; i++) {
        double ge = exp(x->g[i]);
        dbeta[i] = 0, dg[i] = 0;
        for (int c = 0; c < K; c++) {
            double dkbg = 0;
            for (int m = i; m < n; m++) dkbg += A[m * n + i] * x->dw[m * K + c];
            double kbg = f32(x->k[i * K + c] * f32(x->beta[i] * ge, round), round);
            dk1[i * K + c] = bf(dkbg * f32(ge * x->beta[i], round), round);
            dbeta[i] += dkbg * x->k[i * K + c] * ge;
            dg[i] += dkbg * kbg;
        }
        for (int c = 0; c < V; c++) {
            double dvb = 0;
            for (int m = i; m < n; m++) dvb += A[m * n + i] * x->du[m * V + c];
            dv[i * V + c] = bf(dvb * x->beta[i], round);
            dbeta[i] += dvb * x->v[i * V + c];
        }
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0, ge = exp(x->g[j]);
            for (int c = 0; c < K; c++) s += x->dw[i * K + c] * bf(x->k[j * K + c] * f32(x->beta[j] * ge, round), round);
            for (int c = 0; c < V; c++) s += x->du[i * V + c] * bf(x->v[j * V + c] * x->beta[j], round);
            dA[i * n + j] = s;
        }
}

void kv_gdn_chunk_backward_spec(const struct kv_gdn_chunk *x, const double *A, int round, int a_bf16, double *dk,
                                double *dv, double *dbeta, double *dg, double *scratch)
{
    const int n = x->n, K = x->K;
    double *dA = scratch, *T = dA + n * n, *U = T + n * n, *M = U + n * n, *dk1 = M + n * n;
    spec_first(x, A, round, dA, dk1, dv, dbeta, dg);
    /* strictly lower; A^T (dA A^T), dA cast to A's dtype before each product */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) dA[i * n + j] = j < i ? (a_bf16 ? bf(dA[i * n + j], round) : f32(dA[i * n + j], round)) : 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int m = 0; m < n; m++) s += dA[i * n + m] * A[j * n + m];
            T[i * n + j] = a_bf16 ? bf(s, round) : f32(s, round);
        }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int m = 0; m < n; m++) s += A[m * n + i] * T[m * n + j];
            U[i * n + j] = j < i ? bf(-s * exp(x->g[i] - x->g[j]), round) : 0; /* the gated dA, in k's dtype */
        }
    /* pass 2: M = bf16(k beta) k^T, dk += U^T bf16(k beta) + (U k) beta, dbeta, dg */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int c = 0; c < K; c++) s += bf(x->k[i * K + c] * x->beta[i], round) * x->k[j * K + c];
            M[i * n + j] = s;
        }
    for (int i = 0; i < n; i++) {
        for (int c = 0; c < K; c++) {
            double dkb = 0, t = 0;
            for (int j = 0; j < n; j++) dkb += U[i * n + j] * x->k[j * K + c];
            for (int m = 0; m < n; m++) t += U[m * n + i] * bf(x->k[m * K + c] * x->beta[m], round);
            dbeta[i] += dkb * x->k[i * K + c];
            dk[i * K + c] += bf(dk1[i * K + c] + t + dkb * x->beta[i], round);
        }
        for (int j = 0; j < n; j++) dg[i] += U[i * n + j] * M[i * n + j] - U[j * n + i] * M[j * n + i];
    }
}
