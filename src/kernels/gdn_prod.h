/* The spec oracle's products (kernels/gdn_grad.c): for each element of a
 * rows x cols result, three sums over the same depth terms, each term added
 * in the order of the dot product it is (m = 0, 1, ...):
 *   s  = sum_m L(i,m) R(m,j)                      (a product, then an add)
 *   S  = sum_m |L(i,m)| |R(m,j)| over the terms whose product L R is finite
 *   ep = sum_m Le(i,m) |R(m,j)|, or sum_m |L(i,m)| Re(m,j) (Le or Re, not both)
 * S's and ep's terms each added by one fused multiply-add (correctly
 * rounded: the same bits on any machine), or, where rounded, each a rounded
 * product (|L R|, Le |R| or |L| Re) then an add, as s's. Where L's and R's
 * entries are finite and at most 2^510 in magnitude (no product overflows,
 * every term counts in S), the result is made in register tiles of rows and
 * columns (AVX-512 or AVX2 with FMA); elsewhere row by row, with the same
 * bits. */
#ifndef KV_GDN_PROD_H
#define KV_GDN_PROD_H

struct kv_gdn_prod {
    const double *L, *Le; /* L(i,m) = L[i * l_row + m * l_col], l_col or l_row 1; Le alike (or NULL), >= 0 */
    int l_row, l_col;
    const double *R, *Re; /* R(m,j) = R[m * ldr + j], Re alike (or NULL), >= 0: errors */
    int ldr;
    int rows, cols, depth;
    /* lower_cols: only j < i is summed; the rest of row i is 0.
     * lower_depth: only the terms m < i are summed (L(i,m) is 0 for m >= i:
     * the tiles add those zero terms, which changes no sum). */
    int lower_cols, lower_depth;
    /* Hints for the tiles, which may leave out terms known to be 0 (L and Le
     * both 0 there; with every factor finite such a term changes no sum):
     * zero_from_i: L(i,m) = 0 for m >= i; zero_below = d > 0: L(i,m) = 0
     * for m < i + d - 1 (d = 1: below the diagonal's column, d = 2: up to
     * it). The row-by-row sums add them all, as the definition does. */
    int zero_from_i, zero_below;
    int rounded; /* S's and ep's terms: a rounded product, then an add (not fused) */
};

/* s, S and ep (NULL: not made) rows x cols at row stride ld; add: the sums
 * go on from the values there (a product of a longer depth made in two
 * parts, each in order), else they start at 0. */
void kv_gdn_prod(const struct kv_gdn_prod *p, double *s, double *S, double *ep, int ld, int add);

/* The widest tiles kv_gdn_prod may use from now on: 2 (AVX-512, the
 * default), 1 (AVX2 with FMA) or 0 (none: row by row), where the CPU has
 * them; for unit.gdn_grad, which checks each width. Not thread-safe. */
void kv_gdn_prod_tiles(int most);

/* The row-by-row sums alone (the tiles' reference in unit.gdn_grad). */
void kv_gdn_prod_rows(const struct kv_gdn_prod *p, double *s, double *S, double *ep, int ld, int add);

#endif
