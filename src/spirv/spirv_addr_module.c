/* The address build's module (spirv_addr_int.h): which buffers become
 * addresses and the push block that holds them, then the rewritten module
 * put together. */
#include "spirv/spirv_addr_int.h"

/* ---- the globals: which buffers become addresses, and the push block that holds them ---- */

static int scan_var(struct ax *x, const uint32_t *w)
{
    uint32_t id = w[2], sc = w[3], pt = pointee(x, w[1], NULL);
    const uint32_t *pd = def_of(x, pt);
    if (sc == SC_PUSH) {
        if (!pd || kv_op(pd[0]) != SpvOpTypeStruct) return fail(x, "its push constants are not a block");
        x->pc_old = id, x->P = pt;
        return 0;
    }
    int32_t set = x->m.set[id], b = x->m.binding[id];
    int buffer = sc == SC_SB || (sc == SC_UNIFORM && has_deco(x, pt, SpvDecorationBufferBlock));
    if (sc == SC_UNIFORM && !buffer) return fail(x, "binding %d is a uniform buffer", b);
    if (sc == SC_UNIFORM_CONST && b >= 0) return fail(x, "binding %d is an image or a sampler", b);
    if (!buffer) return 0;
    if (set != 0 || b < 0 || (uint32_t)b >= x->n_bind)
        return fail(x, "binding %d of set %d is none of the stage's %u", b, set, x->n_bind);
    if (!pd || kv_op(pd[0]) != SpvOpTypeStruct) return fail(x, "binding %d is an array of buffers", b);
    if (x->n_var == MAXV) return fail(x, "more than %d buffer variables", MAXV);
    x->var[x->n_var].binding = (uint32_t)b, x->var[x->n_var].block = pt;
    x->var[x->n_var].coherent = (uint8_t)has_deco(x, id, SpvDecorationCoherent);
    x->var[x->n_var].vol = (uint8_t)has_deco(x, id, SpvDecorationVolatile);
    x->bind_of[id] = ++x->n_var;
    return 0;
}

int kv_ax_scan_globals(struct ax *x)
{
    const uint32_t *w = x->m.w;
    for (size_t i = 5; i < x->m.first_type; i += kv_len(w[i]))
        if (kv_op(w[i]) == SpvOpMemberDecorate && kv_len(w[i]) >= 5 && w[i + 3] == SpvDecorationOffset) {
            if (x->n_off == x->cap_off) {
                size_t cap = x->cap_off ? 2 * x->cap_off : 64;
                void *p = realloc(x->off, cap * sizeof *x->off);
                if (!p) return fail(x, "out of host memory");
                x->off = p, x->cap_off = cap;
            }
            x->off[x->n_off][0] = w[i + 1], x->off[x->n_off][1] = w[i + 2], x->off[x->n_off++][2] = w[i + 4];
        }
    for (size_t i = x->m.first_type; i < x->m.first_fn; i += kv_len(w[i]))
        if (kv_op(w[i]) == SpvOpVariable && kv_len(w[i]) >= 4 && scan_var(x, w + i)) return -1;
    return 0;
}

/* A coherent or volatile buffer variable's decoration, on its block's members. */
static void member_decos(struct ax *x, int v, uint32_t deco)
{
    const uint32_t st = x->var[v].block, *bd = def_of(x, st);
    for (int e = 0; e < v; e++) /* made once per block */
        if (x->var[e].block == st && (deco == SpvDecorationCoherent ? x->var[e].coherent : x->var[e].vol)) return;
    for (uint32_t k = 0; bd && k + 2 < kv_len(bd[0]); k++)
        if (!has_member_deco(x, st, k, deco)) KV_INS(&x->m.annot, SpvOpMemberDecorate, st, k, deco);
}

/* The new push block: the addresses as 64-bit words (and where lengths are
 * read, the bindings' byte ranges), then the module's members; its
 * variable, V2. Each buffer variable's pointer type. */
int kv_ax_declare_push(struct ax *x)
{
    struct kv_spv *m = &x->m;
    uint32_t members[2 * MAXB + KV_SPIRV_MAX_PUSH + 2], n = 0;
    const uint32_t *pd = def_of(x, x->P);
    if (pd && kv_len(pd[0]) - 2 > KV_SPIRV_MAX_PUSH)
        return fail(x, "its push constants have more than %d members", KV_SPIRV_MAX_PUSH);
    x->pm_ptr = kv_spv_ptr(m, SC_PUSH, x->u64);
    for (uint32_t b = 0; b < x->n_mem; b++) x->cb[b] = kv_spv_u32(m, b);
    for (int v = 0; v < x->n_var; v++) x->var[v].psb = kv_spv_ptr(m, SC_PSB, x->var[v].block);
    uint32_t P2 = x->P2 = kv_spv_id(m);
    members[n++] = P2;
    for (uint32_t b = 0; b < x->n_mem; b++) members[n++] = x->u64;
    for (uint32_t k = 2; pd && k < kv_len(pd[0]); k++) members[n++] = pd[k];
    kv_words_ins(&m->globals, SpvOpTypeStruct, n, members);
    x->V2 = kv_spv_id(m);
    KV_INS(&m->globals, SpvOpVariable, kv_spv_ptr(m, SC_PUSH, P2), x->V2, SC_PUSH);
    KV_INS(&m->annot, SpvOpDecorate, P2, SpvDecorationBlock);
    for (uint32_t b = 0; b < x->n_mem; b++) KV_INS(&m->annot, SpvOpMemberDecorate, P2, b, SpvDecorationOffset, 8 * b);
    /* P's member decorations, shifted, are copied with the annotations (assemble) */
    for (int v = 0; v < x->n_var; v++) {
        if (x->var[v].coherent) member_decos(x, v, SpvDecorationCoherent);
        if (x->var[v].vol) member_decos(x, v, SpvDecorationVolatile);
    }
    return 0;
}

/* ---- the module put together ---- */

/* Whether the module declares capability cap (name NULL) or extension name. */
static int has_cap(const struct ax *x, uint32_t cap, const char *name)
{
    for (size_t i = 5; i < x->m.after_ext; i += kv_len(x->m.w[i]))
        if (name ? kv_op(x->m.w[i]) == SpvOpExtension && !strcmp((const char *)(x->m.w + i + 1), name)
                 : kv_op(x->m.w[i]) == SpvOpCapability && x->m.w[i + 1] == cap)
            return 1;
    return 0;
}

/* Whether a global instruction of the module goes: the removed variables'
 * (and the old push variable, where the new block replaces it), with their
 * names and decorations. */
static int dropped(const struct ax *x, uint32_t id)
{
    return id < x->m.bound && (x->bind_of[id] || (x->n_bind && x->pc_old && id == x->pc_old));
}

/* The entry point, its interface less the removed variables, plus V2. */
static int entry_point(struct ax *x, struct kv_words *o)
{
    const uint32_t *w = x->m.w + x->m.entry, len = kv_len(w[0]);
    uint32_t out[256], n = 3;
    if (len > 250) return fail(x, "an entry point of %u words", len);
    out[1] = w[1], out[2] = w[2];
    uint32_t k = 3;
    while (k < len) { /* the name, to its nul */
        uint32_t word = w[k++];
        out[n++] = word;
        if (!(word & 0xffu) || !(word & 0xff00u) || !(word & 0xff0000u) || !(word & 0xff000000u)) break;
    }
    for (; k < len; k++)
        if (!dropped(x, w[k])) out[n++] = w[k];
    if (x->n_bind && x->m.version >= 0x10400) out[n++] = x->V2;
    out[0] = (n << 16) | SpvOpEntryPoint;
    kv_words_put(o, out, n);
    return 0;
}

/* Debug instructions and annotations: the dropped ids' go; the push
 * block's member decorations are copied onto the new block, n_mem later
 * (offsets 8 n_mem later); a removed buffer's BufferBlock becomes Block. */
static void annotations(struct ax *x, struct kv_words *o, size_t from, size_t to)
{
    const uint32_t *w = x->m.w;
    for (size_t i = from; i < to; i += kv_len(w[i])) {
        const uint32_t op = kv_op(w[i]), len = kv_len(w[i]);
        if ((op == SpvOpName || op == SpvOpDecorate || op == SpvOpDecorateId || op == SpvOpDecorateString) &&
            len >= 2 && dropped(x, w[i + 1]))
            continue;
        int bb = 0;
        for (int v = 0; op == SpvOpDecorate && len == 3 && v < x->n_var; v++)
            bb |= x->var[v].block == w[i + 1] && w[i + 2] == SpvDecorationBufferBlock;
        if (bb) {
            KV_INS(o, SpvOpDecorate, w[i + 1], SpvDecorationBlock);
            continue;
        }
        kv_words_put(o, w + i, len);
        if (op == SpvOpMemberDecorate && len >= 4 && len <= 16 && x->n_bind && x->P && w[i + 1] == x->P) {
            uint32_t c[16];
            memcpy(c, w + i, len * 4);
            c[1] = x->P2, c[2] += x->n_mem;
            if (c[3] == SpvDecorationOffset && len >= 5) c[4] += 8 * x->n_mem;
            kv_words_put(o, c, len);
        }
    }
}

int kv_ax_assemble(struct ax *x, uint32_t **out, size_t *n_out)
{
    struct kv_spv *m = &x->m;
    const uint32_t *w = m->w;
    struct kv_words o = {0};
    uint32_t head[5] = {w[0], w[1], w[2], 0, w[4]};
    kv_words_put(&o, head, 5);
    if (!has_cap(x, CAP_PSB, NULL)) KV_INS(&o, SpvOpCapability, CAP_PSB);
    if (!has_cap(x, CAP_INT64, NULL)) KV_INS(&o, SpvOpCapability, CAP_INT64);
    kv_words_put(&o, w + 5, m->after_ext - 5);
    if (m->version < 0x10500 && !has_cap(x, 0, "SPV_KHR_physical_storage_buffer") &&
        !has_cap(x, 0, "SPV_EXT_physical_storage_buffer")) {
        uint32_t s[16];
        size_t n = kv_words_str(s, 16, "SPV_KHR_physical_storage_buffer");
        kv_words_ins(&o, SpvOpExtension, n, s);
    }
    for (size_t i = m->after_ext; i < m->entry; i += kv_len(w[i])) {
        if (kv_op(w[i]) == SpvOpMemoryModel && kv_len(w[i]) >= 3) {
            if (w[i + 1] != SpvAddressingModelLogical && w[i + 1] != AM_PSB64)
                return free(o.w), fail(x, "its addressing model (%u) is not Logical", w[i + 1]);
            KV_INS(&o, SpvOpMemoryModel, AM_PSB64, w[i + 2]);
        } else {
            kv_words_put(&o, w + i, kv_len(w[i]));
        }
    }
    if (entry_point(x, &o)) return free(o.w), -1;
    annotations(x, &o, m->entry + kv_len(w[m->entry]), m->first_type);
    kv_words_put(&o, m->annot.w, m->annot.n);
    for (size_t i = m->first_type; i < m->first_fn; i += kv_len(w[i]))
        if (!(kv_op(w[i]) == SpvOpVariable && kv_len(w[i]) >= 3 && dropped(x, w[i + 2])))
            kv_words_put(&o, w + i, kv_len(w[i]));
    kv_words_put(&o, m->globals.w, m->globals.n);
    kv_words_put(&o, x->body.w, x->body.n);
    if (o.oom || m->globals.oom || m->annot.oom) return free(o.w), fail(x, "out of host memory");
    o.w[3] = m->next;
    *out = o.w, *n_out = o.n;
    return 0;
}
