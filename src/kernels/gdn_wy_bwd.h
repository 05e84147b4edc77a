/* gdn-wy-bwd's definitions that its kernel file (gdn_wy_bwd.c) and its
 * oracle (gdn_wy_oracle.c) share: the parameters, tensors and stages in
 * their order, the chunk length, and the case's dimensions. */
#ifndef KV_GDN_WY_BWD_H
#define KV_GDN_WY_BWD_H

#include <stdint.h>

#include "kernels/kernel.h"

#define BT 64

enum { P_B, P_T, P_H, P_HG, P_K, P_V, P_DIST, P_VARIANT };
enum { T_K, T_V, T_BETA, T_G, T_A, T_A16, T_DW, T_DU, T_DKH, T_DV, T_DB, T_DG, T_DK,
       T_DKH_AB, T_DV_AB, T_DB_AB, T_DG_AB, T_DK_AB, T_DKH_CM, T_DV_CM, T_DB_CM, T_DG_CM, T_DK_CM };
enum { S_WY, S_DK, S_WY_AB, S_DK_AB, S_WY_CM, S_DK_CM };
enum { D_REALISTIC, D_RANDOM, D_DENSE, D_NONFINITE };
enum { V_FMA, V_AB, V_CM };

static inline int is_fma(const struct kv_case *c) { return c->p[P_VARIANT].c == V_FMA; }
static inline int is_cm(const struct kv_case *c) { return c->p[P_VARIANT].c == V_CM; }
/* A in bf16: a-bf16 and bf16-coopmat */
static inline int a16(const struct kv_case *c) { return !is_fma(c); }
/* The case's output of a kind (T_DKH .. T_DK): fma's, a-bf16's or bf16-coopmat's. */
static inline int out_of(const struct kv_case *c, int t) { return t + c->p[P_VARIANT].c * (T_DKH_AB - T_DKH); }

struct dims {
    int64_t B, T, H, Hg, K, V, NT, ratio;
};

static inline struct dims dims_of(const struct kv_case *c)
{
    struct dims d = {c->p[P_B].i, c->p[P_T].i, c->p[P_H].i, c->p[P_HG].i, c->p[P_K].i, c->p[P_V].i, 0, 0};
    d.NT = (d.T + BT - 1) / BT;
    d.ratio = d.H / d.Hg;
    return d;
}

/* The oracle (kernel.h's oracle): the spec's float64 gradient chunk by
 * chunk, or with c->exact the exact one, and every output's allowances. */
enum kv_status kv_gdn_wy_oracle(struct kv_case *c);
/* What the oracle holds beyond y and S (kernel.h's oracle_host): the slack
 * of dk_head, dbeta and dg, dk's chained slack, and every output's overflow
 * flags, dv's too where it is made in blocks. */
uint64_t kv_gdn_wy_oracle_host(const struct kv_case *c, uint32_t whole, uint32_t sampled, const uint64_t *len);
/* dv's oracle in blocks (kernel.h's oracle_block): dv is judged block by
 * block, its rows made again from A and du, and oracle() leaves its y and S
 * alone (its overflow flags stay whole). */
enum kv_status kv_gdn_wy_dv_block(const struct kv_case *c, int t, size_t lo, size_t hi, int chained,
                                  const struct kv_oracle_block *blk);

#endif
