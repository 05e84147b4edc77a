/* The sanitizer's own globals and the functions the instrumented code
 * calls: kv_note (keep a record in private memory), the shadow checks of
 * a workgroup-memory read, write and atomic, kv_flush (records into the
 * buffer, at the entry point's returns) and kv_prologue (the shadow zeroed,
 * at its start). */
#ifndef KV_SAN_HELPERS_H
#define KV_SAN_HELPERS_H

#include "spirv/spv.h"

/* Private state per kind: site, index, bound, other invocation, count. */
#define KV_SAN_ST_STRIDE 8
/* The epoch in shadow words: 21 bits, never 0. With subgroup epochs
 * (kv_san_ctx.sg) the workgroup barriers' count takes its top 13 bits and
 * the subgroup barriers' count its low 8. */
#define KV_SAN_EPOCHS 0x1FFFFFu
#define KV_SAN_WG_EPOCHS 0x1FFFu

struct kv_san_ctx {
    struct kv_spv m;
    struct kv_words fns;
    uint32_t t_u, t_b, t_v, p_priv, p_sb, p_wg, p_in;
    uint32_t st, epoch, rec, shw, shr, lid, wgid, nwg; /* variables (shw alone: the storage-buffer shadow) */
    uint32_t new_lid, new_wgid, new_nwg;               /* 1 where declared here (the interface lists them) */
    uint32_t sh_base;   /* in a helper: the id of this workgroup's first storage-buffer shadow word */
    uint32_t f_note, f_read, f_write, f_atomic, f_flush, f_prologue;
    /* racecheck-global: its shadow (a storage buffer at global_binding:
     * four words per unit), kv_gwrite and kv_gread, and the bytes a unit
     * stands for (a power of two) */
    uint32_t gsh, global_binding, f_gwrite, f_gread, gunit;
    int gintra; /* racecheck-global also between invocations of a workgroup (no subgroup operations, no atomics) */
    /* subgroup epochs: the subgroup barriers' count, the subgroup built-ins,
     * and the shadow of a cooperative matrix's load and store */
    uint32_t sepoch, sgsize, sgid, sglane, new_sgsize, new_sgid, new_sglane, f_cm_read, f_cm_write;
    uint32_t units;     /* shadowed scalars */
    uint32_t local;     /* invocations per workgroup, 0 when not fixed */
    int shared, race;   /* shadow made; races checked */
    int sg;             /* subgroup epochs: subgroup barriers order their own subgroup's accesses */
    int cm;             /* cooperative-matrix accesses to shared memory are shadowed */
    int sb;             /* the shadow in a storage buffer at the record buffer's binding + 1 */
};

static inline int kv_san_is_atomic(uint32_t op)
{
    return (op >= SpvOpAtomicLoad && op <= SpvOpAtomicXor) || op == SpvOpAtomicFAddEXT || op == SpvOpAtomicFMinEXT ||
           op == SpvOpAtomicFMaxEXT;
}

/* The word of an instruction's pointer operand that a shadowed use may hold (0: none). */
static inline uint32_t kv_san_ptr_pos(uint32_t op)
{
    if (op == SpvOpLoad || op == SpvOpAccessChain || op == SpvOpInBoundsAccessChain) return 3;
    if (op == SpvOpStore || op == SpvOpAtomicStore) return 1;
    return kv_san_is_atomic(op) ? 3 : 0;
}

/* Declare the globals (binding: the record buffer's). */
void kv_san_globals(struct kv_san_ctx *c, uint32_t binding);
/* Write every helper function into c->fns (after the rewrite: kv_gwrite and
 * kv_gread divide by c->gunit, the smallest scalar of the accesses it shadowed). */
void kv_san_helpers(struct kv_san_ctx *c);

#endif
