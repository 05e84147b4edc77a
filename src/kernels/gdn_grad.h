/* The gated delta net's WY representation of one 64-row chunk in float64:
 * the forward of gdn-wu and its exact gradient (FLA's recompute_w_u and
 * prepare_wy_repr_bwd, without their roundings), for the exact oracles.
 *   L[i][j] = beta_i (k_i . k_j) exp(g_i - g_j) for j < i, A = (I + L)^-1,
 *   w = A bkg, bkg_j = k_j beta_j exp(g_j);  u = A bv, bv_j = v_j beta_j.
 * The gradient is that of sum(dw . w + du . u) with respect to k, v, beta
 * and g, through A as well. Rows are contiguous: k is n x K, v n x V. */
#ifndef KV_GDN_GRAD_H
#define KV_GDN_GRAD_H

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
 * the given A (n x n, lower) rather than a recomputed one. With round set,
 * at FLA's cast points: k*beta*e^g and v*beta to bf16 for their products, dk
 * to bf16 between its two passes, dA to A's dtype (bf16 with a_bf16, else
 * f32) before each product with A, the gated dA to bf16 before the last
 * products, and dk and dv to bf16 at the end; dbeta and dg stay f32. The
 * products themselves are exact (their f32 accumulation belongs to the
 * bound). Without round, it is kv_gdn_chunk_backward's mathematics taken
 * another way (unit.gdn_grad checks that they agree). dk is added to;
 * scratch holds 6 n^2 + 2 n max(K, V) doubles. */
void kv_gdn_chunk_backward_spec(const struct kv_gdn_chunk *x, const double *A, int round, int a_bf16, double *dk,
                                double *dv, double *dbeta, double *dg, double *scratch);

#endif
