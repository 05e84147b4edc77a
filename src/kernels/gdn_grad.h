/* The gated delta net's WY representation of one 64-row chunk in float64:
 * the forward of gdn-wu and its exact gradient (FLA's recompute_w_u and
 * prepare_wy_repr_bwd, without their roundings), for the exact oracles.
 *   L[i][j] = beta_i (k_i . k_j) exp(g_i - g_j) for j < i, A = (I + L)^-1,
 *   w = A bkg, bkg_j = k_j beta_j exp(g_j);  u = A bv, bv_j = v_j beta_j.
 * The gradient is that of sum(dw . w + du . u) with respect to k, v, beta
 * and g, through A as well. Rows are contiguous: k is n x K, v n x V. */
#ifndef KV_GDN_GRAD_H
#define KV_GDN_GRAD_H

#include <stddef.h>

struct kv_gdn_chunk {
    int n, K, V;             /* rows (1..64), key and value dimensions */
    const double *k, *v;     /* n x K, n x V */
    const double *beta, *g;  /* n each; g in natural log */
    const double *dw, *du;   /* n x K, n x V: the incoming gradients */
};

/* A = (I + L)^-1 (n x n, row-major) by forward substitution. */
void kv_gdn_chunk_A(const struct kv_gdn_chunk *x, double *A);
/* w (n x K) and u (n x V) from the inputs, A recomputed. */
void kv_gdn_chunk_forward(const struct kv_gdn_chunk *x, double *w, double *u);
/* The gradient, added to dk (n x K: summed over the value heads that share
 * a key head), and written to dv (n x V), dbeta and dg (n each). scratch
 * holds 5 n^2 + 2 n max(K, V) doubles. */
void kv_gdn_chunk_backward(const struct kv_gdn_chunk *x, double *dk, double *dv, double *dbeta, double *dg,
                           double *scratch);

/* The same gradient in FLA's order of operations (prepare_wy_repr_bwd), from
 * the given A (n x n, its every entry used) rather than a recomputed one,
 * for the spec oracle. With round set, at FLA's cast points: k*beta*e^g,
 * v*beta and k*beta to bf16 for their products, dk to bf16 between its two
 * passes, dA and dA A^T to bf16 with a_bf16 (A's dtype; f32 A keeps them),
 * the gated dA to bf16 before the last products; the products themselves
 * are exact. Without round, it is kv_gdn_chunk_backward's mathematics taken
 * another way (unit.gdn_grad checks that they agree).
 * Each output comes with what its bound needs: the value before its final
 * rounding (dk and dv to bf16; dbeta and dg stay f32), S (the absolute sum of
 * its final accumulation's terms) and, but for dv, the slack: the most that
 * the device's legal errors in the intermediates (f32 accumulations within
 * metrics.md's bound, exp within 3 + 2|x| ULP, and the flips of bf16 casts
 * they may cause) carry into it. flips counts the casts that may flip. */
struct kv_gdn_spec {
    int round, a_bf16;
    double u_acc;                          /* the intermediates' f32 accumulation unit: 2^-24 (0), or 2^-23 */
    double *dk, *dk_S, *dk_sl;             /* n x K: this value head's dk (not summed) */
    double *dv, *dv_S;                     /* n x V */
    double *dbeta, *dbeta_S, *dbeta_sl;    /* n */
    double *dg, *dg_S, *dg_sl;             /* n */
    size_t flips;
    int overflow; /* some f32 sum's terms add up past f32's range: the device may overflow there */
    /* Set by the caller: x->k (and n, K) are the last call's, made with this
     * scratch, whose last 2 * 64^2 + 64 K doubles nothing else wrote since.
     * The products of k alone (k k^T: the same for every value head of a key
     * head) are kept there and not made again. */
    int same_k;
};
/* Whether A (n x n, row-major) is lower-triangular: A[m][i] = 0 for i > m.
 * There the spec's products through A^T leave out its zeros (zero_below). */
int kv_gdn_a_lower(const double *A, int n);
/* scratch holds kv_gdn_spec_scratch(K, V) doubles (chunks of n <= 64 rows). */
size_t kv_gdn_spec_scratch(int K, int V);
void kv_gdn_chunk_backward_spec(const struct kv_gdn_chunk *x, const double *A, struct kv_gdn_spec *o, double *scratch);

#endif
