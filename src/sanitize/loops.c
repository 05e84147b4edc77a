/* The loop-cut build (loops.h): a flag per invocation in a storage buffer,
 * set at each loop's back edges and cleared at its header, read at its merge
 * block, and the invocations that saw a loop cut short added up at the entry
 * point's returns. */
#include "sanitize/loops.h"

#include <stdlib.h>
#include <string.h>

#include "spirv/spv.h"

struct loop {
    uint32_t header, merge, cont; /* labels */
    int skip;                     /* a back edge the rewrite does not follow (OpSwitch): not counted */
};

struct lw {
    struct kv_spv m;
    uint32_t *pos;  /* label id -> its place among the blocks, from 1 */
    uint32_t *head; /* label id -> 1 + the loop it heads */
    uint32_t *merg; /* label id -> 1 + the loop it merges */
    struct loop *l;
    int n, cap;
    struct kv_words body;
    uint32_t t_u, p_priv, p_sb, cut, buf, flags, local; /* local: invocations per workgroup */
    uint32_t lid, wgid, nwg, io[3], n_io;              /* built-ins; those declared here */
};

static int is_terminator(uint32_t op)
{
    return op == SpvOpBranch || op == SpvOpBranchConditional || op == SpvOpSwitch || op == SpvOpReturn ||
           op == SpvOpReturnValue || op == SpvOpKill || op == SpvOpUnreachable || op == 4416 /* TerminateInvocation */;
}

/* Whether a branch from block `from` to label t is a back edge of a counted
 * loop (t its header, `from` in its continue construct: the continue target
 * or a block after it); its index into *k. */
static int back_edge(const struct lw *x, uint32_t from, uint32_t t, int *k)
{
    if (t >= x->m.bound || !x->head[t]) return 0;
    const struct loop *l = &x->l[x->head[t] - 1];
    *k = (int)x->head[t] - 1;
    return !l->skip && l->cont < x->m.bound && x->pos[from] >= x->pos[l->cont];
}

/* The blocks' places and the loops; a loop with a back edge from an OpSwitch is not counted. */
static int scan(struct lw *x)
{
    const struct kv_spv *m = &x->m;
    uint32_t cur = 0, n_pos = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = m->first_fn; i < m->n; i += kv_len(m->w[i])) {
            const uint32_t *w = m->w + i, op = kv_op(w[0]);
            if (op == SpvOpLabel) {
                cur = w[1];
                if (pass == 0 && cur < m->bound) x->pos[cur] = ++n_pos;
            } else if (op == SpvOpLoopMerge && pass == 0) {
                if (x->n == x->cap) {
                    int cap = x->cap ? 2 * x->cap : 16;
                    struct loop *l = realloc(x->l, (size_t)cap * sizeof *l);
                    if (!l) return -1;
                    x->l = l, x->cap = cap;
                }
                if (cur >= m->bound || w[1] >= m->bound) continue;
                x->l[x->n] = (struct loop){cur, w[1], w[2], 0};
                x->head[cur] = (uint32_t)++x->n, x->merg[w[1]] = (uint32_t)x->n;
            } else if (op == SpvOpSwitch && pass == 1) {
                /* the default, then each case's label after its literal (a 32-bit selector's; a wider one's misread
                 * can only leave a loop uncounted) */
                for (uint32_t a = 2; a < kv_len(w[0]); a += 2) {
                    int k;
                    if (back_edge(x, cur, w[a], &k)) x->l[k].skip = 1;
                }
            }
        }
    return 0;
}

static uint32_t op2(struct lw *x, uint32_t op, uint32_t t, uint32_t a, uint32_t b)
{
    uint32_t id = kv_spv_id(&x->m);
    KV_INS(&x->body, op, t, id, a, b);
    return id;
}

static uint32_t load(struct lw *x, uint32_t type, uint32_t var)
{
    uint32_t id = kv_spv_id(&x->m);
    KV_INS(&x->body, SpvOpLoad, type, id, var);
    return id;
}

/* The atomics' scope (device-wide) and semantics (relaxed), as ids. */
static uint32_t scope(struct lw *x) { return kv_spv_u32(&x->m, x->m.vulkan_mm ? SpvScopeQueueFamily : SpvScopeDevice); }

/* A pointer to this invocation's flag: its local index in its workgroup's
 * part, the workgroup's linear index modulo KV_LOOPS_GROUPS. */
static uint32_t flag(struct lw *x)
{
    struct kv_spv *m = &x->m;
    const uint32_t u = x->t_u, v3 = kv_spv_uvec3(m);
    uint32_t wg = load(x, v3, x->wgid), nwg = load(x, v3, x->nwg), c[5];
    for (uint32_t i = 0; i < 5; i++) {
        c[i] = kv_spv_id(m);
        KV_INS(&x->body, SpvOpCompositeExtract, u, c[i], i < 3 ? wg : nwg, i < 3 ? i : i - 3);
    }
    uint32_t lin = op2(x, SpvOpIAdd, u, c[0], op2(x, SpvOpIMul, u, c[3], op2(x, SpvOpIAdd, u, c[1], op2(x, SpvOpIMul, u, c[4], c[2]))));
    uint32_t part = op2(x, SpvOpUMod, u, lin, kv_spv_u32(m, KV_LOOPS_GROUPS));
    uint32_t at = op2(x, SpvOpIAdd, u, op2(x, SpvOpIMul, u, part, kv_spv_u32(m, x->local)), load(x, u, x->lid));
    uint32_t p = kv_spv_id(m);
    KV_INS(&x->body, SpvOpAccessChain, x->p_sb, p, x->flags, kv_spv_u32(m, 0), at);
    return p;
}

static void set_flag(struct lw *x, uint32_t value)
{
    KV_INS(&x->body, SpvOpAtomicStore, flag(x), scope(x), kv_spv_u32(&x->m, 0), value);
}

/* At block label's start: a loop it merges read (its flag still set: left
 * at a back edge), then a loop it heads entered (the flag cleared). */
static void block_start(struct lw *x, uint32_t label)
{
    struct kv_spv *m = &x->m;
    if (label < m->bound && x->merg[label] && !x->l[x->merg[label] - 1].skip) {
        uint32_t f = kv_spv_id(m);
        KV_INS(&x->body, SpvOpAtomicLoad, x->t_u, f, flag(x), scope(x), kv_spv_u32(m, 0));
        KV_INS(&x->body, SpvOpStore, x->cut, op2(x, SpvOpBitwiseOr, x->t_u, load(x, x->t_u, x->cut), f));
    }
    if (label < m->bound && x->head[label] && !x->l[x->head[label] - 1].skip) set_flag(x, kv_spv_u32(m, 0));
}

/* Before block from's terminator w: the flag set on the back edges it
 * takes, and at the entry point's returns the cut added. */
static void before_terminator(struct lw *x, uint32_t from, const uint32_t *w, int entry)
{
    struct kv_spv *m = &x->m;
    const uint32_t op = kv_op(w[0]), one = kv_spv_u32(m, 1), zero = kv_spv_u32(m, 0);
    int k;
    if (op == SpvOpBranch && back_edge(x, from, w[1], &k)) set_flag(x, one);
    for (int t = 0; op == SpvOpBranchConditional && t < 2; t++)
        if (back_edge(x, from, w[2 + t], &k)) {
            uint32_t taken = kv_spv_id(m);
            KV_INS(&x->body, SpvOpSelect, x->t_u, taken, w[1], t == 0 ? one : zero, t == 0 ? zero : one);
            set_flag(x, taken);
        }
    if ((op == SpvOpReturn || op == SpvOpReturnValue) && entry) {
        uint32_t p = kv_spv_id(m), old = kv_spv_id(m);
        KV_INS(&x->body, SpvOpAccessChain, x->p_sb, p, x->buf, zero, zero);
        KV_INS(&x->body, SpvOpAtomicIAdd, x->t_u, old, p, scope(x), zero, load(x, x->t_u, x->cut));
    }
}

/* The functions again, with the counting woven in: after a block's
 * OpPhi, before its merge instruction and terminator. */
static void rewrite(struct lw *x)
{
    const struct kv_spv *m = &x->m;
    uint32_t cur = 0, fn = 0;
    size_t held = 0; /* a merge instruction, put back before its terminator */
    int fresh = 0;
    for (size_t i = m->first_fn; i < m->n; i += kv_len(m->w[i])) {
        const uint32_t *w = m->w + i, op = kv_op(w[0]);
        if (op == SpvOpFunction) fn = w[2];
        if (fresh && op != SpvOpPhi && op != SpvOpLine && op != SpvOpNoLine) block_start(x, cur), fresh = 0;
        if (op == SpvOpLabel) cur = w[1], fresh = 1;
        if (op == SpvOpLoopMerge || op == SpvOpSelectionMerge) {
            held = i;
            continue;
        }
        if (is_terminator(op)) {
            before_terminator(x, cur, w, fn == m->entry_fn);
            if (held) kv_words_put_rolled(&x->body, m->w + held); /* no Unroll hint: the counting in every copy */
            held = 0;
        }
        kv_words_put(&x->body, w, kv_len(w[0]));
    }
}

/* The cut flag, the count buffer (binding) and the flags (binding + 1), the built-ins. */
static uint32_t *globals(struct lw *x, uint32_t binding, uint32_t *n_vars)
{
    struct kv_spv *m = &x->m;
    uint32_t *vars = malloc(sizeof *vars * 3), is_new[3] = {0, 0, 0};
    if (!vars) return NULL;
    x->t_u = kv_spv_uint(m);
    x->p_priv = kv_spv_ptr(m, SpvStorageClassPrivate, x->t_u);
    x->p_sb = kv_spv_ptr(m, SpvStorageClassStorageBuffer, x->t_u);
    x->lid = kv_spv_builtin(m, SpvBuiltInLocalInvocationIndex, x->t_u, &is_new[0]);
    x->wgid = kv_spv_builtin(m, SpvBuiltInWorkgroupId, kv_spv_uvec3(m), &is_new[1]);
    x->nwg = kv_spv_builtin(m, SpvBuiltInNumWorkgroups, kv_spv_uvec3(m), &is_new[2]);
    const uint32_t b[3] = {x->lid, x->wgid, x->nwg};
    for (int i = 0; i < 3; i++)
        if (is_new[i]) x->io[x->n_io++] = b[i];
    x->cut = kv_spv_id(m);
    KV_INS(&m->globals, SpvOpVariable, x->p_priv, x->cut, SpvStorageClassPrivate, kv_spv_u32(m, 0));
    uint32_t rta = kv_spv_id(m), blk = kv_spv_id(m), pb;
    KV_INS(&m->globals, SpvOpTypeRuntimeArray, rta, x->t_u);
    KV_INS(&m->globals, SpvOpTypeStruct, blk, rta);
    pb = kv_spv_ptr(m, SpvStorageClassStorageBuffer, blk);
    x->buf = kv_spv_id(m), x->flags = kv_spv_id(m);
    KV_INS(&m->globals, SpvOpVariable, pb, x->buf, SpvStorageClassStorageBuffer);
    KV_INS(&m->globals, SpvOpVariable, pb, x->flags, SpvStorageClassStorageBuffer);
    KV_INS(&m->annot, SpvOpDecorate, rta, SpvDecorationArrayStride, 4);
    KV_INS(&m->annot, SpvOpDecorate, blk, SpvDecorationBlock);
    KV_INS(&m->annot, SpvOpMemberDecorate, blk, 0, SpvDecorationOffset, 0);
    KV_INS(&m->annot, SpvOpDecorate, x->buf, SpvDecorationDescriptorSet, 0);
    KV_INS(&m->annot, SpvOpDecorate, x->buf, SpvDecorationBinding, binding);
    KV_INS(&m->annot, SpvOpDecorate, x->flags, SpvDecorationDescriptorSet, 0);
    KV_INS(&m->annot, SpvOpDecorate, x->flags, SpvDecorationBinding, binding + 1);
    vars[0] = x->cut, vars[1] = x->buf, vars[2] = x->flags;
    *n_vars = 3;
    return vars;
}

enum kv_status kv_loops_instrument(const char *what, const uint32_t *words, size_t bytes, uint32_t binding,
                                   uint32_t **out, size_t *out_bytes, int *loops)
{
    struct lw x = {0};
    char err[160];
    enum kv_status st = KV_OK;
    uint32_t *vars = NULL, n_vars = 0;
    *out = NULL, *out_bytes = 0, *loops = 0;
    if (kv_spv_index(&x.m, words, bytes / 4, err, sizeof err)) {
        kv_spv_free(&x.m);
        return kv_error(KV_EDATA, "%s: cannot count its loops: %s", what, err);
    }
    x.pos = calloc(x.m.bound, sizeof *x.pos), x.head = calloc(x.m.bound, sizeof *x.head);
    x.merg = calloc(x.m.bound, sizeof *x.merg);
    if (!x.pos || !x.head || !x.merg || scan(&x)) st = kv_error(KV_EDEVICE, "out of host memory");
    for (int k = 0; !st && k < x.n; k++) *loops += !x.l[k].skip;
    x.local = st ? 0 : kv_spv_local_size(&x.m);
    if (!x.local) *loops = 0; /* a workgroup size not fixed: its flags cannot be laid out */
    if (!st && *loops) {
        vars = globals(&x, binding, &n_vars);
        if (vars) rewrite(&x);
        if (!vars || kv_spv_assemble(&x.m, NULL, 0, vars, n_vars, x.io, x.n_io, &x.body, NULL, out, out_bytes))
            st = kv_error(KV_EDEVICE, "out of host memory counting the loops of %s", what);
    }
    free(vars), free(x.pos), free(x.head), free(x.merg), free(x.l), free(x.body.w);
    kv_spv_free(&x.m);
    return st;
}

int kv_loops_none(const uint32_t *words, size_t bytes)
{
    for (size_t i = 5; i < bytes / 4 && kv_len(words[i]); i += kv_len(words[i]))
        if (kv_op(words[i]) == SpvOpLoopMerge) return 0;
    return 1;
}
