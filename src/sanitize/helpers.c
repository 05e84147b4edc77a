#include "sanitize/helpers.h"

#include <string.h>

#include "sanitize/san.h"

enum { SCOPE_DEVICE = 1, SCOPE_WG = 2, SCOPE_QUEUE_FAMILY = 5, SEM_NONE = 0, SEM_WG_ACQREL = 0x108, SEM_UNIFORM = 0x40 };

static uint32_t k(struct kv_san_ctx *c, uint32_t v) { return kv_spv_u32(&c->m, v); }

static uint32_t op2(struct kv_san_ctx *c, uint32_t op, uint32_t t, uint32_t a, uint32_t b)
{
    uint32_t id = kv_spv_id(&c->m);
    KV_INS(&c->fns, op, t, id, a, b);
    return id;
}

static uint32_t op1(struct kv_san_ctx *c, uint32_t op, uint32_t t, uint32_t a)
{
    uint32_t id = kv_spv_id(&c->m);
    KV_INS(&c->fns, op, t, id, a);
    return id;
}

static uint32_t sel(struct kv_san_ctx *c, uint32_t cond, uint32_t a, uint32_t b)
{
    uint32_t id = kv_spv_id(&c->m);
    KV_INS(&c->fns, SpvOpSelect, c->t_u, id, cond, a, b);
    return id;
}

static uint32_t load(struct kv_san_ctx *c, uint32_t t, uint32_t ptr) { return op1(c, SpvOpLoad, t, ptr); }
static void store(struct kv_san_ctx *c, uint32_t ptr, uint32_t v) { KV_INS(&c->fns, SpvOpStore, ptr, v); }
static uint32_t label(struct kv_san_ctx *c, uint32_t id)
{
    KV_INS(&c->fns, SpvOpLabel, id);
    return id;
}

/* A counted loop, j = start, start + step, ... while j < end: loop_open ends
 * the block labelled `from` and opens the body (returns j); loop_close ends
 * the body and opens the block after the loop. */
struct loop {
    uint32_t from, head, cont, merge, j, next;
};
static uint32_t loop_open(struct kv_san_ctx *c, struct loop *L, uint32_t from, uint32_t start, uint32_t end)
{
    uint32_t body = kv_spv_id(&c->m);
    *L = (struct loop){from, kv_spv_id(&c->m), kv_spv_id(&c->m), kv_spv_id(&c->m), kv_spv_id(&c->m), kv_spv_id(&c->m)};
    KV_INS(&c->fns, SpvOpBranch, L->head);
    label(c, L->head);
    KV_INS(&c->fns, SpvOpPhi, c->t_u, L->j, start, from, L->next, L->cont);
    uint32_t more = kv_spv_id(&c->m);
    KV_INS(&c->fns, SpvOpULessThan, c->t_b, more, L->j, end);
    KV_INS(&c->fns, SpvOpLoopMerge, L->merge, L->cont, SpvLoopControlMaskNone);
    KV_INS(&c->fns, SpvOpBranchConditional, more, body, L->merge);
    label(c, body);
    return L->j;
}
static void loop_close(struct kv_san_ctx *c, const struct loop *L, uint32_t step)
{
    KV_INS(&c->fns, SpvOpBranch, L->cont);
    label(c, L->cont);
    KV_INS(&c->fns, SpvOpIAdd, c->t_u, L->next, L->j, step);
    KV_INS(&c->fns, SpvOpBranch, L->head);
    label(c, L->merge);
}

/* A pointer to the shadow's word of scalar u: the writer (which 0) or the
 * readers (1); in shared memory, or in this workgroup's part of the
 * storage-buffer shadow (c->sh_base: its first word, set at each helper's entry). */
static uint32_t sh_at(struct kv_san_ctx *c, int which, uint32_t u)
{
    if (!c->sb) return op2(c, SpvOpAccessChain, c->p_wg, which ? c->shr : c->shw, u);
    uint32_t i = op2(c, SpvOpIAdd, c->t_u, c->sh_base, op2(c, SpvOpIMul, c->t_u, u, k(c, 2)));
    if (which) i = op2(c, SpvOpIAdd, c->t_u, i, k(c, 1));
    uint32_t id = kv_spv_id(&c->m);
    KV_INS(&c->fns, SpvOpAccessChain, c->p_sb, id, c->shw, k(c, 0), i);
    return id;
}

/* This workgroup's linear index in the dispatch. */
static uint32_t wg_linear(struct kv_san_ctx *c)
{
    uint32_t u = c->t_u, v3 = kv_spv_uvec3(&c->m), wg = load(c, v3, c->wgid), nwg = load(c, v3, c->nwg), e[3], n[2];
    for (uint32_t i = 0; i < 3; i++) {
        e[i] = kv_spv_id(&c->m);
        KV_INS(&c->fns, SpvOpCompositeExtract, u, e[i], wg, i);
        if (i < 2) {
            n[i] = kv_spv_id(&c->m);
            KV_INS(&c->fns, SpvOpCompositeExtract, u, n[i], nwg, i);
        }
    }
    return op2(c, SpvOpIAdd, u, e[0], op2(c, SpvOpIMul, u, n[0], op2(c, SpvOpIAdd, u, e[1], op2(c, SpvOpIMul, u, n[1], e[2]))));
}

/* The storage-buffer shadow's first word for this workgroup (2 words per scalar). */
static void sh_base(struct kv_san_ctx *c)
{
    if (c->sb) c->sh_base = op2(c, SpvOpIMul, c->t_u, wg_linear(c), k(c, 2 * c->units));
}

/* A pointer to private state word i (an id). */
static uint32_t st_at(struct kv_san_ctx *c, uint32_t i) { return op2(c, SpvOpAccessChain, c->p_priv, c->st, i); }
/* A pointer to record-buffer word i (an id). */
static uint32_t rec_at(struct kv_san_ctx *c, uint32_t i)
{
    uint32_t id = kv_spv_id(&c->m);
    KV_INS(&c->fns, SpvOpAccessChain, c->p_sb, id, c->rec, k(c, 0), i);
    return id;
}

static uint32_t atomic(struct kv_san_ctx *c, uint32_t op, uint32_t ptr, uint32_t scope, uint32_t value)
{
    uint32_t id = kv_spv_id(&c->m);
    if (op == SpvOpAtomicLoad) KV_INS(&c->fns, op, c->t_u, id, ptr, k(c, scope), k(c, SEM_NONE));
    else KV_INS(&c->fns, op, c->t_u, id, ptr, k(c, scope), k(c, SEM_NONE), value);
    return id;
}

static void begin_fn(struct kv_san_ctx *c, uint32_t fn, uint32_t type)
{
    KV_INS(&c->fns, SpvOpFunction, c->t_v, fn, SpvFunctionControlMaskNone, type);
}

/* A function of n (at most 8) uint parameters, their ids into p. */
static void begin_uint_fn(struct kv_san_ctx *c, uint32_t fn, int n, uint32_t *p)
{
    uint32_t u = c->t_u, types[8] = {u, u, u, u, u, u, u, u};
    begin_fn(c, fn, kv_spv_fn(&c->m, c->t_v, n, types));
    for (int i = 0; i < n; i++) {
        p[i] = kv_spv_id(&c->m);
        KV_INS(&c->fns, SpvOpFunctionParameter, u, p[i]);
    }
}

static void end_fn(struct kv_san_ctx *c)
{
    KV_INS(&c->fns, SpvOpReturn);
    KV_INS(&c->fns, SpvOpFunctionEnd);
}

/* kv_note(kind, site, index, bound, other, bad): the first record of each
 * kind and the count, updated without a branch. */
static void gen_note(struct kv_san_ctx *c)
{
    uint32_t u = c->t_u, b = c->t_b, p[6];
    begin_fn(c, c->f_note, kv_spv_fn(&c->m, c->t_v, 6, (uint32_t[]){u, u, u, u, u, b}));
    for (int i = 0; i < 6; i++) {
        p[i] = kv_spv_id(&c->m);
        KV_INS(&c->fns, SpvOpFunctionParameter, i < 5 ? u : b, p[i]);
    }
    label(c, kv_spv_id(&c->m));
    uint32_t base = op2(c, SpvOpIMul, u, p[0], k(c, KV_SAN_ST_STRIDE));
    uint32_t p0 = st_at(c, base), cur = load(c, u, p0);
    uint32_t take = op2(c, SpvOpLogicalAnd, b, p[5], op2(c, SpvOpIEqual, b, cur, k(c, 0)));
    store(c, p0, sel(c, take, p[1], cur));
    for (uint32_t f = 1; f <= 3; f++) {
        uint32_t pf = st_at(c, op2(c, SpvOpIAdd, u, base, k(c, f)));
        store(c, pf, sel(c, take, p[f + 1], load(c, u, pf)));
    }
    uint32_t pc = st_at(c, op2(c, SpvOpIAdd, u, base, k(c, 4)));
    store(c, pc, op2(c, SpvOpIAdd, u, load(c, u, pc), sel(c, p[5], k(c, 1), k(c, 0))));
    end_fn(c);
}

static void note(struct kv_san_ctx *c, int kind, uint32_t site, uint32_t idx, uint32_t other, uint32_t bad)
{
    uint32_t id = kv_spv_id(&c->m);
    KV_INS(&c->fns, SpvOpFunctionCall, c->t_v, id, c->f_note, k(c, (uint32_t)kind), site, idx, k(c, c->units), other,
           bad);
}

/* An access's context, made at a helper's entry: E this epoch's tag (21
 * bits), l this invocation; with subgroup epochs also E's workgroup part
 * (ew) and subgroup part (es), the subgroup size and l's subgroup. */
struct acc {
    uint32_t E, l, ew, es, sgsz, lsg;
};

/* Whether an earlier access by invocation `other` in epoch tag `te` is
 * unordered with this one: the same epoch, or with subgroup epochs the
 * same workgroup epoch and either the same subgroup epoch or another
 * subgroup (a subgroup barrier orders only its own subgroup). */
static uint32_t unordered(struct kv_san_ctx *c, const struct acc *a, uint32_t te, uint32_t other)
{
    uint32_t t = c->t_u, b = c->t_b;
    if (!c->sg) return op2(c, SpvOpIEqual, b, te, a->E);
    uint32_t wsame = op2(c, SpvOpIEqual, b, op2(c, SpvOpShiftRightLogical, t, te, k(c, 8)), a->ew);
    uint32_t ssame = op2(c, SpvOpIEqual, b, op2(c, SpvOpBitwiseAnd, t, te, k(c, 255)), a->es);
    uint32_t cross = op2(c, SpvOpINotEqual, b, op2(c, SpvOpUDiv, t, other, a->sgsz), a->lsg);
    return op2(c, SpvOpLogicalAnd, b, wsame, op2(c, SpvOpLogicalOr, b, ssame, cross));
}

/* The writer word's epoch and whether a subgroup's cooperative matrix wrote
 * it (bit 31: any lane of that subgroup may have, so that every lane's later
 * access, its own included, needs a barrier). */
static uint32_t writer_epoch(struct kv_san_ctx *c, uint32_t w)
{
    return op2(c, SpvOpBitwiseAnd, c->t_u, op2(c, SpvOpShiftRightLogical, c->t_u, w, k(c, 10)), k(c, KV_SAN_EPOCHS));
}

static uint32_t by_other(struct kv_san_ctx *c, uint32_t w, uint32_t who, uint32_t l);

/* Whether the writer word's access conflicts with this one, an unordered
 * access `same` permitting: another lane's, or a collective one's on either side. */
static uint32_t conflict(struct kv_san_ctx *c, uint32_t same, uint32_t w, uint32_t who, uint32_t l, int collective)
{
    if (collective) return same;
    return op2(c, SpvOpLogicalAnd, c->t_b, same, by_other(c, w, who, l));
}

static uint32_t by_other(struct kv_san_ctx *c, uint32_t w, uint32_t who, uint32_t l)
{
    uint32_t b = c->t_b, coll = op2(c, SpvOpINotEqual, b, op2(c, SpvOpBitwiseAnd, c->t_u, w, k(c, 0x80000000u)), k(c, 0));
    return op2(c, SpvOpLogicalOr, b, op2(c, SpvOpINotEqual, b, who, l), coll);
}

/* The shadow check of one scalar u (inr: u in range; collective: a
 * cooperative matrix's access, by the subgroup as a whole). */
static void shadow_read(struct kv_san_ctx *c, uint32_t site, uint32_t u, const struct acc *x, uint32_t inr,
                        int collective)
{
    uint32_t t = c->t_u, b = c->t_b, E = x->E, l = x->l;
    uint32_t pw = sh_at(c, 0, u), a = atomic(c, SpvOpAtomicLoad, pw, SCOPE_WG, 0);
    note(c, KV_SAN_INITCHECK, site, u, k(c, 0), op2(c, SpvOpLogicalAnd, b, inr, op2(c, SpvOpIEqual, b, a, k(c, 0))));
    if (!c->race) return;
    uint32_t aw = op2(c, SpvOpBitwiseAnd, t, a, k(c, 1023));
    uint32_t same = unordered(c, x, writer_epoch(c, a), aw);
    uint32_t race = op2(c, SpvOpLogicalAnd, b, conflict(c, same, a, aw, l, collective), inr);
    note(c, KV_SAN_RACECHECK, site, u, aw, race);
    uint32_t pr = sh_at(c, 1, u);
    /* a collective read stands for its subgroup's other lanes too: it sets the "other readers" bit */
    uint32_t tag = op2(c, SpvOpBitwiseOr, t, op2(c, SpvOpShiftLeftLogical, t, E, k(c, 11)), l);
    if (collective) tag = op2(c, SpvOpBitwiseOr, t, tag, k(c, 1024));
    uint32_t old = atomic(c, SpvOpAtomicExchange, pr, SCOPE_WG, tag), ol = op2(c, SpvOpBitwiseAnd, t, old, k(c, 1023));
    uint32_t osame = unordered(c, x, op2(c, SpvOpShiftRightLogical, t, old, k(c, 11)), ol);
    uint32_t other = op2(c, SpvOpINotEqual, b, ol, l);
    atomic(c, SpvOpAtomicOr, pr, SCOPE_WG, sel(c, op2(c, SpvOpLogicalAnd, b, osame, other), k(c, 1024), k(c, 0)));
}

static void shadow_write(struct kv_san_ctx *c, uint32_t site, uint32_t u, const struct acc *x, uint32_t inr,
                         int is_atomic, int collective)
{
    uint32_t t = c->t_u, b = c->t_b, E = x->E, l = x->l;
    uint32_t pw = sh_at(c, 0, u);
    if (is_atomic) { /* an atomic reads what it updates, and races with nothing */
        uint32_t a = atomic(c, SpvOpAtomicLoad, pw, SCOPE_WG, 0);
        note(c, KV_SAN_INITCHECK, site, u, k(c, 0), op2(c, SpvOpLogicalAnd, b, inr, op2(c, SpvOpIEqual, b, a, k(c, 0))));
    }
    uint32_t tag = op2(c, SpvOpBitwiseOr, t, op2(c, SpvOpShiftLeftLogical, t, E, k(c, 10)), l);
    if (collective) tag = op2(c, SpvOpBitwiseOr, t, tag, k(c, 0x80000000u));
    uint32_t old = atomic(c, SpvOpAtomicExchange, pw, SCOPE_WG, tag);
    if (is_atomic || !c->race) return;
    uint32_t ow = op2(c, SpvOpBitwiseAnd, t, old, k(c, 1023));
    uint32_t same = unordered(c, x, writer_epoch(c, old), ow);
    uint32_t ww = conflict(c, same, old, ow, l, collective);
    uint32_t r = atomic(c, SpvOpAtomicLoad, sh_at(c, 1, u), SCOPE_WG, 0);
    uint32_t rl = op2(c, SpvOpBitwiseAnd, t, r, k(c, 1023));
    uint32_t rsame = unordered(c, x, op2(c, SpvOpShiftRightLogical, t, r, k(c, 11)), rl);
    uint32_t rother = op2(c, SpvOpLogicalOr, b, op2(c, SpvOpINotEqual, b, rl, l),
                          op2(c, SpvOpINotEqual, b, op2(c, SpvOpBitwiseAnd, t, r, k(c, 1024)), k(c, 0)));
    uint32_t rw = collective ? rsame : op2(c, SpvOpLogicalAnd, b, rsame, rother);
    uint32_t bad = op2(c, SpvOpLogicalAnd, b, inr, op2(c, SpvOpLogicalOr, b, ww, rw));
    note(c, KV_SAN_RACECHECK, site, u, sel(c, ww, ow, rl), bad);
}

/* A helper's entry: the storage-buffer shadow's base and the access's context. */
static void prelude(struct kv_san_ctx *c, struct acc *a)
{
    uint32_t u = c->t_u;
    sh_base(c);
    memset(a, 0, sizeof *a);
    uint32_t e = load(c, u, c->epoch);
    a->l = load(c, u, c->lid);
    if (!c->sg) {
        a->E = op2(c, SpvOpIAdd, u, op2(c, SpvOpUMod, u, e, k(c, KV_SAN_EPOCHS)), k(c, 1));
        return;
    }
    a->ew = op2(c, SpvOpIAdd, u, op2(c, SpvOpUMod, u, e, k(c, KV_SAN_WG_EPOCHS)), k(c, 1));
    a->es = op2(c, SpvOpBitwiseAnd, u, load(c, u, c->sepoch), k(c, 255));
    a->E = op2(c, SpvOpBitwiseOr, u, op2(c, SpvOpShiftLeftLogical, u, a->ew, k(c, 8)), a->es);
    a->sgsz = load(c, u, c->sgsize);
    a->lsg = op2(c, SpvOpUDiv, u, a->l, a->sgsz);
}

/* kv_cm_read / kv_cm_write (unit, major, units per line, stride in units,
 * site): a cooperative matrix's load or store, its scalars dealt out over
 * the subgroup's lanes, each shadowed as that lane's access (so that lanes
 * reading what another lane's matrix store wrote need a subgroup barrier). */
static void gen_cm(struct kv_san_ctx *c, uint32_t fn, int mode)
{
    uint32_t u = c->t_u, b = c->t_b, p[5];
    begin_uint_fn(c, fn, 5, p);
    uint32_t l0 = label(c, kv_spv_id(&c->m));
    struct acc a;
    struct loop L;
    prelude(c, &a);
    uint32_t lane = load(c, u, c->sglane), total = op2(c, SpvOpIMul, u, p[1], p[2]), step = load(c, u, c->sgsize);
    uint32_t j = loop_open(c, &L, l0, lane, total);
    uint32_t line = op2(c, SpvOpUDiv, u, j, p[2]), q = op2(c, SpvOpUMod, u, j, p[2]);
    uint32_t u0 = op2(c, SpvOpIAdd, u, p[0], op2(c, SpvOpIAdd, u, op2(c, SpvOpIMul, u, line, p[3]), q));
    uint32_t inr = op2(c, SpvOpULessThan, b, u0, k(c, c->units)), at = sel(c, inr, u0, k(c, 0));
    if (mode == 0) shadow_read(c, p[4], at, &a, inr, 1);
    else shadow_write(c, p[4], at, &a, inr, 0, 1);
    loop_close(c, &L, step);
    end_fn(c);
}

/* kv_read / kv_write / kv_atomic (unit, count, site): each scalar of the access. */
static void gen_shadow(struct kv_san_ctx *c, uint32_t fn, int mode)
{
    uint32_t u = c->t_u, b = c->t_b, p[3];
    begin_uint_fn(c, fn, 3, p);
    uint32_t l0 = label(c, kv_spv_id(&c->m));
    struct acc a;
    struct loop L;
    prelude(c, &a);
    uint32_t j = loop_open(c, &L, l0, k(c, 0), p[1]);
    uint32_t u0 = op2(c, SpvOpIAdd, u, p[0], j), inr = op2(c, SpvOpULessThan, b, u0, k(c, c->units));
    uint32_t at = sel(c, inr, u0, k(c, 0));
    if (mode == 0) shadow_read(c, p[2], at, &a, inr, 0);
    else shadow_write(c, p[2], at, &a, inr, mode == 2, 0);
    loop_close(c, &L, k(c, 1));
    end_fn(c);
}

/* kv_flush(): each kind with a count adds it, and its record, to the buffer. */
static void flush_kind(struct kv_san_ctx *c, uint32_t kind)
{
    uint32_t u = c->t_u, b = c->t_b, lt = kv_spv_id(&c->m), lm = kv_spv_id(&c->m);
    uint32_t cnt = load(c, u, st_at(c, k(c, kind * KV_SAN_ST_STRIDE + 4)));
    uint32_t any = op2(c, SpvOpINotEqual, b, cnt, k(c, 0));
    KV_INS(&c->fns, SpvOpSelectionMerge, lm, SpvSelectionControlMaskNone);
    KV_INS(&c->fns, SpvOpBranchConditional, any, lt, lm);
    label(c, lt);
    uint32_t scope = c->m.vulkan_mm ? SCOPE_QUEUE_FAMILY : SCOPE_DEVICE;
    atomic(c, SpvOpAtomicIAdd, rec_at(c, k(c, kind)), scope, cnt);
    /* each kind has its share of the slots, so that one kind's records do not crowd out another's */
    uint32_t slot = atomic(c, SpvOpAtomicIAdd, rec_at(c, k(c, KV_SAN_SLOTS + kind)), scope, k(c, 1));
    uint32_t s = sel(c, op2(c, SpvOpULessThan, b, slot, k(c, KV_SAN_PER_KIND)),
                     op2(c, SpvOpIAdd, u, slot, k(c, kind * KV_SAN_PER_KIND)), k(c, KV_SAN_RECORDS));
    uint32_t base = op2(c, SpvOpIAdd, u, op2(c, SpvOpIMul, u, s, k(c, KV_SAN_REC_WORDS)), k(c, KV_SAN_HEADER));
    uint32_t wg = load(c, kv_spv_uvec3(&c->m), c->wgid), f[10];
    f[0] = k(c, kind + 1);
    for (uint32_t i = 0; i < 4; i++) f[1 + i] = load(c, u, st_at(c, k(c, kind * KV_SAN_ST_STRIDE + i)));
    f[5] = load(c, u, c->lid);
    for (uint32_t i = 0; i < 3; i++) {
        f[6 + i] = kv_spv_id(&c->m);
        KV_INS(&c->fns, SpvOpCompositeExtract, u, f[6 + i], wg, i);
    }
    f[9] = cnt;
    for (uint32_t i = 0; i < 10; i++) store(c, rec_at(c, op2(c, SpvOpIAdd, u, base, k(c, i))), f[i]);
    KV_INS(&c->fns, SpvOpBranch, lm);
    label(c, lm);
}

static void gen_flush(struct kv_san_ctx *c)
{
    begin_fn(c, c->f_flush, kv_spv_fn(&c->m, c->t_v, 0, NULL));
    label(c, kv_spv_id(&c->m));
    for (uint32_t kind = 0; kind < KV_SAN_KINDS; kind++) flush_kind(c, kind);
    end_fn(c);
}

/* kv_prologue(): the shadow zeroed (in steps of the workgroup, or by its
 * first invocation where the size is not fixed), then a barrier. */
static void gen_prologue(struct kv_san_ctx *c)
{
    uint32_t u = c->t_u, b = c->t_b;
    begin_fn(c, c->f_prologue, kv_spv_fn(&c->m, c->t_v, 0, NULL));
    uint32_t l0 = label(c, kv_spv_id(&c->m));
    struct loop L;
    sh_base(c);
    uint32_t l = load(c, u, c->lid), start = l, step = k(c, c->local);
    if (!c->local) start = sel(c, op2(c, SpvOpIEqual, b, l, k(c, 0)), k(c, 0), k(c, c->units)), step = k(c, 1);
    uint32_t i = loop_open(c, &L, l0, start, k(c, c->units));
    store(c, sh_at(c, 0, i), k(c, 0));
    store(c, sh_at(c, 1, i), k(c, 0));
    loop_close(c, &L, step);
    if (c->sg) { /* the subgroup epochs take a subgroup to be consecutive local indices: flag a device where not */
        uint32_t lin = op2(c, SpvOpIEqual, b, load(c, u, c->sgid), op2(c, SpvOpUDiv, u, l, load(c, u, c->sgsize)));
        uint32_t scope = c->m.vulkan_mm ? SCOPE_QUEUE_FAMILY : SCOPE_DEVICE;
        atomic(c, SpvOpAtomicOr, rec_at(c, k(c, KV_SAN_FLAGS)), scope, sel(c, lin, k(c, 0), k(c, KV_SAN_FLAG_SUBGROUPS)));
    }
    KV_INS(&c->fns, SpvOpControlBarrier, k(c, SCOPE_WG), k(c, SCOPE_WG), k(c, SEM_WG_ACQREL | SEM_UNIFORM));
    end_fn(c);
}

/* Whether a shadow word pair (a workgroup's tag g and an invocation's epoch
 * and index gl) names an access that conflicts with this one (workgroup tag
 * me, epoch and index L, index l): another workgroup's (*cross), or, where
 * c->gintra, another invocation's of this workgroup in this epoch (*intra). */
static void gconflict(struct kv_san_ctx *c, uint32_t g, uint32_t gl, uint32_t me, uint32_t L, uint32_t l,
                      uint32_t *cross, uint32_t *intra)
{
    uint32_t u = c->t_u, b = c->t_b;
    *cross = op2(c, SpvOpLogicalAnd, b, op2(c, SpvOpINotEqual, b, g, k(c, 0)), op2(c, SpvOpINotEqual, b, g, me));
    if (!c->gintra) {
        *intra = kv_spv_id(&c->m);
        KV_INS(&c->fns, SpvOpLogicalNot, b, *intra, kv_spv_true(&c->m));
        return;
    }
    uint32_t other = op2(c, SpvOpINotEqual, b, op2(c, SpvOpBitwiseAnd, u, gl, k(c, 2047)), l);
    uint32_t epoch = op2(c, SpvOpIEqual, b, op2(c, SpvOpShiftRightLogical, u, gl, k(c, 11)),
                         op2(c, SpvOpShiftRightLogical, u, L, k(c, 11)));
    *intra = op2(c, SpvOpLogicalAnd, b, op2(c, SpvOpIEqual, b, g, me), op2(c, SpvOpLogicalAnd, b, other, epoch));
}

/* kv_gwrite / kv_gread (binding, byte, bytes, in range, site): a store, or
 * a load, of a shadowed binding's bytes [byte, byte + bytes) (racecheck-global).
 * Each unit has four words: the workgroup (linear index + 1) that last
 * stored it and that invocation's epoch and index, and the same for the
 * last load. A store where another workgroup of the dispatch stored (record
 * bound 0) or loaded (1), a load where another stored (2), and the same
 * between two invocations of a workgroup in one epoch where c->gintra (3,
 * 4, 5), are races. An index out of range (memcheck's record) is left alone. */
static void gen_gaccess(struct kv_san_ctx *c, uint32_t fn, int store)
{
    uint32_t u = c->t_u, b = c->t_b, p[5], shift = 0;
    while ((1u << shift) < c->gunit) shift++;
    begin_uint_fn(c, fn, 5, p);
    uint32_t l0 = label(c, kv_spv_id(&c->m));
    struct loop lp;
    const uint32_t scope = c->m.vulkan_mm ? SCOPE_QUEUE_FAMILY : SCOPE_DEVICE;
    uint32_t base = load(c, u, rec_at(c, op2(c, SpvOpIAdd, u, p[0], k(c, KV_SAN_GBASE))));
    uint32_t on = op2(c, SpvOpLogicalAnd, b, op2(c, SpvOpINotEqual, b, base, k(c, KV_SAN_GBASE_NONE)),
                      op2(c, SpvOpINotEqual, b, p[3], k(c, 0)));
    uint32_t me = op2(c, SpvOpIAdd, u, wg_linear(c), k(c, 1)), l = load(c, u, c->lid);
    uint32_t E = op2(c, SpvOpIAdd, u, op2(c, SpvOpUMod, u, load(c, u, c->epoch), k(c, KV_SAN_EPOCHS)), k(c, 1));
    uint32_t L = op2(c, SpvOpBitwiseOr, u, op2(c, SpvOpShiftLeftLogical, u, E, k(c, 11)), l);
    uint32_t first = op2(c, SpvOpShiftRightLogical, u, p[1], k(c, shift));
    uint32_t end = sel(c, on, op2(c, SpvOpIAdd, u, op2(c, SpvOpShiftRightLogical, u,
                                   op2(c, SpvOpISub, u, op2(c, SpvOpIAdd, u, p[1], p[2]), k(c, 1)), k(c, shift)), k(c, 1)),
                       first);
    uint32_t j = loop_open(c, &lp, l0, first, end);
    uint32_t at = op2(c, SpvOpShiftLeftLogical, u, op2(c, SpvOpIAdd, u, base, j), k(c, 2)), w4[4];
    for (uint32_t q = 0; q < 4; q++) {
        w4[q] = kv_spv_id(&c->m);
        KV_INS(&c->fns, SpvOpAccessChain, c->p_sb, w4[q], c->gsh, k(c, 0), q ? op2(c, SpvOpIAdd, u, at, k(c, q)) : at);
    }
    /* the writer's words, swapped for this store's or read; then the reader's */
    uint32_t w = atomic(c, store ? SpvOpAtomicExchange : SpvOpAtomicLoad, w4[0], scope, me);
    uint32_t wl = atomic(c, store ? SpvOpAtomicExchange : SpvOpAtomicLoad, w4[1], scope, L);
    uint32_t r = atomic(c, store ? SpvOpAtomicLoad : SpvOpAtomicExchange, w4[2], scope, me);
    uint32_t rl = atomic(c, store ? SpvOpAtomicLoad : SpvOpAtomicExchange, w4[3], scope, L);
    uint32_t wc, wi, rc, ri;
    gconflict(c, w, wl, me, L, l, &wc, &wi);
    gconflict(c, r, rl, me, L, l, &rc, &ri);
    if (!store) rc = wc, ri = wi; /* a load conflicts with the writer alone */
    uint32_t race = op2(c, SpvOpLogicalOr, b, op2(c, SpvOpLogicalOr, b, wc, wi), op2(c, SpvOpLogicalOr, b, rc, ri));
    uint32_t other = sel(c, wc, op2(c, SpvOpISub, u, w, k(c, 1)),
                         sel(c, wi, op2(c, SpvOpBitwiseAnd, u, wl, k(c, 2047)),
                             sel(c, rc, op2(c, SpvOpISub, u, r, k(c, 1)), op2(c, SpvOpBitwiseAnd, u, rl, k(c, 2047)))));
    uint32_t how = store ? sel(c, wc, k(c, 0), sel(c, wi, k(c, 3), sel(c, rc, k(c, 1), k(c, 4))))
                         : sel(c, wc, k(c, 2), k(c, 5));
    KV_INS(&c->fns, SpvOpFunctionCall, c->t_v, kv_spv_id(&c->m), c->f_note, k(c, KV_SAN_GLOBAL), p[4], p[1], how, other,
           race);
    loop_close(c, &lp, k(c, 1));
    end_fn(c);
}

void kv_san_helpers(struct kv_san_ctx *c)
{
    gen_note(c);
    gen_flush(c);
    if (c->global_binding) gen_gaccess(c, c->f_gwrite, 1), gen_gaccess(c, c->f_gread, 0);
    if (!c->shared) return;
    gen_shadow(c, c->f_read, 0);
    gen_shadow(c, c->f_write, 1);
    gen_shadow(c, c->f_atomic, 2);
    gen_prologue(c);
    if (!c->cm) return;
    gen_cm(c, c->f_cm_read, 0);
    gen_cm(c, c->f_cm_write, 1);
}

static uint32_t array_of(struct kv_spv *m, uint32_t elem, uint32_t n)
{
    uint32_t id = kv_spv_id(m);
    KV_INS(&m->globals, SpvOpTypeArray, id, elem, kv_spv_u32(m, n));
    return id;
}

void kv_san_globals(struct kv_san_ctx *c, uint32_t binding)
{
    struct kv_spv *m = &c->m;
    c->t_v = kv_spv_void(m), c->t_b = kv_spv_bool(m), c->t_u = kv_spv_uint(m);
    c->p_priv = kv_spv_ptr(m, SpvStorageClassPrivate, c->t_u);
    c->p_sb = kv_spv_ptr(m, SpvStorageClassStorageBuffer, c->t_u);
    c->lid = kv_spv_builtin(&c->m, SpvBuiltInLocalInvocationIndex, c->t_u, &c->new_lid);
    c->wgid = kv_spv_builtin(&c->m, SpvBuiltInWorkgroupId, kv_spv_uvec3(m), &c->new_wgid);
    uint32_t arr = array_of(m, c->t_u, KV_SAN_KINDS * KV_SAN_ST_STRIDE), null = kv_spv_id(m);
    KV_INS(&m->globals, SpvOpConstantNull, arr, null);
    c->st = kv_spv_id(m);
    KV_INS(&m->globals, SpvOpVariable, kv_spv_ptr(m, SpvStorageClassPrivate, arr), c->st, SpvStorageClassPrivate, null);
    c->epoch = kv_spv_id(m);
    KV_INS(&m->globals, SpvOpVariable, c->p_priv, c->epoch, SpvStorageClassPrivate, kv_spv_u32(m, 0));
    uint32_t rta = kv_spv_id(m), blk = kv_spv_id(m);
    KV_INS(&m->globals, SpvOpTypeRuntimeArray, rta, c->t_u);
    KV_INS(&m->globals, SpvOpTypeStruct, blk, rta);
    c->rec = kv_spv_id(m);
    KV_INS(&m->globals, SpvOpVariable, kv_spv_ptr(m, SpvStorageClassStorageBuffer, blk), c->rec,
           SpvStorageClassStorageBuffer);
    KV_INS(&m->annot, SpvOpDecorate, rta, SpvDecorationArrayStride, 4);
    KV_INS(&m->annot, SpvOpDecorate, blk, SpvDecorationBlock);
    KV_INS(&m->annot, SpvOpMemberDecorate, blk, 0, SpvDecorationOffset, 0);
    KV_INS(&m->annot, SpvOpDecorate, c->rec, SpvDecorationDescriptorSet, 0);
    KV_INS(&m->annot, SpvOpDecorate, c->rec, SpvDecorationBinding, binding);
    c->f_note = kv_spv_id(m), c->f_flush = kv_spv_id(m);
    if (c->global_binding || (c->shared && c->sb))
        c->nwg = kv_spv_builtin(&c->m, SpvBuiltInNumWorkgroups, kv_spv_uvec3(m), &c->new_nwg);
    if (c->global_binding) { /* racecheck-global's shadow */
        c->gsh = kv_spv_id(m), c->f_gwrite = kv_spv_id(m), c->f_gread = kv_spv_id(m);
        KV_INS(&m->globals, SpvOpVariable, kv_spv_ptr(m, SpvStorageClassStorageBuffer, blk), c->gsh,
               SpvStorageClassStorageBuffer);
        KV_INS(&m->annot, SpvOpDecorate, c->gsh, SpvDecorationDescriptorSet, 0);
        KV_INS(&m->annot, SpvOpDecorate, c->gsh, SpvDecorationBinding, c->global_binding);
    }
    if (!c->shared) return;
    if (c->sb) { /* the shadow in a storage buffer at the next binding, a part per workgroup */
        c->shw = kv_spv_id(m);
        KV_INS(&m->globals, SpvOpVariable, kv_spv_ptr(m, SpvStorageClassStorageBuffer, blk), c->shw,
               SpvStorageClassStorageBuffer);
        KV_INS(&m->annot, SpvOpDecorate, c->shw, SpvDecorationDescriptorSet, 0);
        KV_INS(&m->annot, SpvOpDecorate, c->shw, SpvDecorationBinding, binding + 1);
    } else {
        c->p_wg = kv_spv_ptr(m, SpvStorageClassWorkgroup, c->t_u);
        uint32_t sh = array_of(m, c->t_u, c->units), psh = kv_spv_ptr(m, SpvStorageClassWorkgroup, sh);
        c->shw = kv_spv_id(m), c->shr = kv_spv_id(m);
        KV_INS(&m->globals, SpvOpVariable, psh, c->shw, SpvStorageClassWorkgroup);
        KV_INS(&m->globals, SpvOpVariable, psh, c->shr, SpvStorageClassWorkgroup);
    }
    c->f_read = kv_spv_id(m), c->f_write = kv_spv_id(m), c->f_atomic = kv_spv_id(m), c->f_prologue = kv_spv_id(m);
    if (c->sg || c->cm) {
        c->sgsize = kv_spv_builtin(&c->m, SpvBuiltInSubgroupSize, c->t_u, &c->new_sgsize);
        c->sgid = kv_spv_builtin(&c->m, SpvBuiltInSubgroupId, c->t_u, &c->new_sgid);
        c->sglane = kv_spv_builtin(&c->m, SpvBuiltInSubgroupLocalInvocationId, c->t_u, &c->new_sglane);
    }
    if (c->sg) {
        c->sepoch = kv_spv_id(m);
        KV_INS(&m->globals, SpvOpVariable, c->p_priv, c->sepoch, SpvStorageClassPrivate, kv_spv_u32(m, 0));
    }
    if (c->cm) c->f_cm_read = kv_spv_id(m), c->f_cm_write = kv_spv_id(m);
}
