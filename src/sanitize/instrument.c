/* The rewrite: each access chain's array indices checked and clamped
 * (memcheck), each load, store and atomic through workgroup memory
 * shadowed (racecheck, initcheck), the barrier epoch counted, and the
 * records flushed at the entry point's returns (san.h). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sanitize/global.h"
#include "sanitize/helpers.h"
#include "sanitize/san.h"


struct walk {
    struct kv_san_ctx c;
    struct kv_san_module *out;
    uint32_t *root;   /* pointer id -> its variable */
    uint32_t *unit;   /* shadowed workgroup pointer id -> the id of its first shadow unit */
    uint32_t *wg_of;  /* variable id -> 1 + its index in out->wg */
    uint8_t *opaque;  /* variable id -> used in a way the shadow cannot follow */
    /* element pointer id -> its last index (clamped), that array's bound and element type, for a
     * cooperative matrix's extent */
    uint32_t *el_idx, *el_bound, *el_type;
    /* a pointer id to a scalar or vector in a storage buffer's runtime array
     * (racecheck-global): 1 + its binding, the array index (as uint) and its
     * bound (ids), the array's stride and the constant bytes before it */
    uint32_t *g_bind, *g_idx, *g_bound, *g_stride, *g_off, *g_size, *g_bytes;
    uint32_t g_stored; /* the bindings (bit b) the module stores to */
    struct kv_words body;
    uint32_t file, line, col; /* the last OpLine, file 0: none */
    int sites_cap, subgroup_barrier;
    int gnu;          /* the subgroup built-ins can be used: GroupNonUniform declared or declarable (SPIR-V 1.3) */
    int gnu_declared; /* the module declares it itself */
    int cm_shared;    /* a cooperative matrix is loaded from or stored to shadowed memory */
};

/* A cooperative matrix's load or store: its element pointer, extents, layout, stride
 * (an id, 0: none), the bytes of its component (cb), of the pointer's element
 * (eb) and of that element's scalars (ub: the shadow's unit). */
struct cm_op {
    uint32_t ptr, rows, cols, stride, cb, eb, ub;
    int load, colmajor;
};

/* Bytes of a scalar or vector type, 0 for others. */
static uint32_t type_bytes(const struct kv_spv *m, uint32_t t)
{
    uint32_t op = kv_spv_op(m, t);
    const uint32_t *d = m->w + m->def[t];
    if (op == SpvOpTypeInt || op == SpvOpTypeFloat) return d[2] / 8;
    if (op == SpvOpTypeVector) return d[3] * type_bytes(m, d[2]);
    return 0;
}

static int is_coopmat_access(uint32_t op)
{
    return op == KV_OP_COOPMAT_LOAD_NV || op == KV_OP_COOPMAT_STORE_NV || op == KV_OP_COOPMAT_LOAD_KHR ||
           op == KV_OP_COOPMAT_STORE_KHR;
}

static uint32_t const_of(const struct kv_spv *m, uint32_t id, uint32_t dflt);

/* The cooperative-matrix access at word i: 0 where its form is not one the
 * checks follow (extents not constant, a pointer to other than a scalar or
 * vector, no stride where one is needed). */
static int cm_info(const struct kv_spv *m, size_t i, uint32_t op, struct cm_op *o)
{
    const uint32_t *w = m->w + i;
    memset(o, 0, sizeof *o);
    o->load = op == KV_OP_COOPMAT_LOAD_NV || op == KV_OP_COOPMAT_LOAD_KHR;
    int nv = op >= KV_OP_COOPMAT_LOAD_NV;
    uint32_t len = kv_len(w[0]), pos = o->load ? 4 : 3, v;
    o->ptr = w[o->load ? 3 : 1];
    if (len <= pos + (uint32_t)nv || o->ptr >= m->bound) return 0;
    uint32_t mt = o->load ? w[1] : kv_spv_type(m, w[2]), mop = kv_spv_op(m, mt), pt = kv_spv_type(m, o->ptr);
    if ((mop != SpvOpTypeCooperativeMatrixNV && mop != 4456 /* OpTypeCooperativeMatrixKHR */) ||
        kv_spv_op(m, pt) != SpvOpTypePointer)
        return 0;
    const uint32_t *d = m->w + m->def[mt];
    uint32_t el = m->w[m->def[pt] + 3];
    o->cb = type_bytes(m, d[2]), o->eb = type_bytes(m, el);
    o->ub = kv_spv_op(m, el) == SpvOpTypeVector ? type_bytes(m, m->w[m->def[el] + 2]) : o->eb;
    if (!kv_spv_const(m, d[4], &o->rows) || !kv_spv_const(m, d[5], &o->cols) || !o->cb || !o->eb || !o->ub) return 0;
    o->colmajor = nv ? kv_spv_op(m, w[pos + 1]) == SpvOpConstantTrue : kv_spv_const(m, w[pos], &v) && v == 1;
    o->stride = nv ? w[pos] : (len > pos + 1 ? w[pos + 1] : 0);
    return o->stride || (o->colmajor ? o->cols : o->rows) <= 1;
}

static uint32_t const_of(const struct kv_spv *m, uint32_t id, uint32_t dflt)
{
    uint32_t v;
    return kv_spv_const(m, id, &v) ? v : dflt;
}

/* Roots of pointers, and the workgroup variables whose pointers go where the
 * shadow cannot follow them (a call, a copy, a phi, a cooperative matrix). */
static void scan_uses(struct walk *x)
{
    const struct kv_spv *m = &x->c.m;
    for (size_t i = 5; i < m->first_type; i += kv_len(m->w[i]))
        if (kv_op(m->w[i]) == SpvOpCapability && m->w[i + 1] == SpvCapabilityGroupNonUniform) x->gnu_declared = 1;
    x->gnu = x->gnu_declared || m->version >= 0x10300;
    for (size_t i = 5; i < m->n; i += kv_len(m->w[i])) {
        uint32_t op = kv_op(m->w[i]), len = kv_len(m->w[i]);
        const uint32_t *w = m->w + i;
        if (op == SpvOpVariable) x->root[w[2]] = w[2];
        if (i < m->first_fn) continue;
        if (op == SpvOpAccessChain || op == SpvOpInBoundsAccessChain || op == SpvOpPtrAccessChain)
            x->root[w[2]] = x->root[w[3]];
        if (op == SpvOpPtrAccessChain) x->opaque[x->root[w[3]]] = 1;
        if (op == SpvOpControlBarrier && const_of(m, w[1], 2) != SpvScopeWorkgroup) x->subgroup_barrier = 1;
        struct cm_op cm;
        if (is_coopmat_access(op) && x->gnu && cm_info(m, i, op, &cm) && x->root[cm.ptr]) {
            /* followed: every operand but the pointer as any use */
            uint32_t r = x->root[cm.ptr], rt = kv_spv_type(m, r);
            x->cm_shared |= kv_spv_op(m, rt) == SpvOpTypePointer && m->w[m->def[rt] + 2] == SpvStorageClassWorkgroup;
            for (uint32_t j = 1; j < len; j++)
                if (w[j] < m->bound && x->root[w[j]] && w[j] != cm.ptr) x->opaque[x->root[w[j]]] = 1;
            continue;
        }
        if (op == SpvOpLine || op == SpvOpNoLine || op == SpvOpLoopMerge || op == SpvOpSelectionMerge ||
            op == SpvOpVariable)
            continue;
        bool res, rt;
        kv_spv_result(op, &res, &rt);
        uint32_t skip = (uint32_t)res + (uint32_t)rt, pos = kv_san_ptr_pos(op);
        for (uint32_t j = 1 + skip; j < len; j++)
            if (w[j] < m->bound && x->root[w[j]] && j != pos) x->opaque[x->root[w[j]]] = 1;
    }
}

/* The workgroup variables the shadow follows, and whether it fits. */
static void plan_shadow(struct walk *x, uint32_t shared_limit)
{
    struct kv_spv *m = &x->c.m;
    struct kv_san_module *o = x->out;
    uint64_t own = 0, units = 0;
    int n = 0;
    for (size_t i = m->first_type; i < m->first_fn; i += kv_len(m->w[i]))
        if (kv_op(m->w[i]) == SpvOpVariable && m->w[i + 3] == SpvStorageClassWorkgroup) n++;
    o->wg = calloc((size_t)n + 1, sizeof *o->wg);
    if (!o->wg) return;
    for (size_t i = m->first_type; i < m->first_fn; i += kv_len(m->w[i])) {
        if (kv_op(m->w[i]) != SpvOpVariable || m->w[i + 3] != SpvStorageClassWorkgroup) continue;
        uint32_t var = m->w[i + 2], pt = m->w[m->def[m->w[i + 1]] + 3], u = kv_spv_units(m, pt);
        own += 4 * (uint64_t)u;
        if (!u || x->opaque[var]) continue;
        struct kv_san_wg *g = &o->wg[o->n_wg];
        snprintf(g->name, sizeof g->name, "%s", kv_spv_name(m, var));
        g->first = (uint32_t)units, g->units = u;
        for (uint32_t t = pt; kv_spv_op(m, t) == SpvOpTypeArray && g->n_dims < 4; t = m->w[m->def[t] + 2]) {
            uint32_t per = kv_spv_units(m, m->w[m->def[t] + 2]);
            g->stride[g->n_dims] = per;
            g->dim[g->n_dims] = per ? kv_spv_units(m, t) / per : 0;
            g->n_dims++;
        }
        units += u;
        x->wg_of[var] = (uint32_t)++o->n_wg;
    }
    x->c.local = kv_spv_local_size(m);
    if (!units) return;
    if (units >= (1u << 24))
        snprintf(o->note, sizeof o->note, "racecheck and initcheck off: %llu shared scalars are too many to shadow",
                 (unsigned long long)units);
    else if (x->c.local > 1024 || !x->c.local)
        snprintf(o->note, sizeof o->note, "racecheck and initcheck off: the workgroup size is %s",
                 x->c.local ? "over 1024 invocations" : "specialized at run time");
    if (o->note[0]) return;
    x->c.units = (uint32_t)units;
    x->c.shared = o->shared_checks = 1;
    /* A shadow that does not fit beside the shader's own shared memory goes
     * to a storage buffer: 8 bytes per scalar per workgroup. */
    x->c.sb = own + 8 * units > shared_limit;
    o->shadow_binding = x->c.sb ? o->binding + 1 : 0;
    /* Subgroup barriers order their own subgroup's accesses: the epochs
     * count them per subgroup, which needs the subgroup built-ins. */
    x->c.sg = o->subgroup_epochs = x->subgroup_barrier && x->gnu;
    x->c.cm = o->coopmat = x->cm_shared;
    x->c.race = o->racecheck = !x->subgroup_barrier || x->gnu;
    if (!o->racecheck)
        snprintf(o->note, sizeof o->note, "racecheck off: the shader has subgroup-scope barriers and is SPIR-V 1.%u, "
                 "before the subgroup built-ins", (m->version >> 8) & 0xffu);
}

static uint32_t add_site(struct walk *x, int kind, int32_t binding, uint32_t var, size_t at, const char *op)
{
    struct kv_san_module *o = x->out;
    const struct kv_spv *m = &x->c.m;
    if (o->n_sites == x->sites_cap) {
        int cap = x->sites_cap ? 2 * x->sites_cap : 64;
        struct kv_san_site *s = realloc(o->site, (size_t)cap * sizeof *s);
        if (!s) return 0;
        o->site = s, x->sites_cap = cap;
    }
    struct kv_san_site *s = &o->site[o->n_sites++];
    memset(s, 0, sizeof *s);
    s->kind = (uint8_t)kind, s->binding = binding, s->var = UINT32_MAX;
    if (var && x->wg_of[var]) s->var = x->wg_of[var] - 1;
    if (var && binding < 0) snprintf(s->array, sizeof s->array, "%s", kv_spv_name(m, var));
    if (x->file && x->col)
        snprintf(s->where, sizeof s->where, "%s:%u:%u", (const char *)(m->w + m->str[x->file] + 2), x->line, x->col);
    else if (x->file)
        snprintf(s->where, sizeof s->where, "%s:%u", (const char *)(m->w + m->str[x->file] + 2), x->line);
    else snprintf(s->where, sizeof s->where, "SPIR-V word %zu (%s)", at, op);
    return (uint32_t)o->n_sites;
}

static uint32_t emit2(struct walk *x, uint32_t op, uint32_t t, uint32_t a, uint32_t b)
{
    uint32_t id = kv_spv_id(&x->c.m);
    KV_INS(&x->body, op, t, id, a, b);
    return id;
}

/* idx as a 32-bit unsigned id, or 0 where it is not a 32-bit integer. */
static uint32_t as_uint(struct walk *x, uint32_t idx)
{
    struct kv_spv *m = &x->c.m;
    uint32_t v, t = kv_spv_type(m, idx);
    if (kv_spv_const(m, idx, &v)) return kv_spv_u32(m, v);
    if (kv_spv_op(m, t) != SpvOpTypeInt || m->w[m->def[t] + 2] != 32) return 0;
    if (t == x->c.t_u) return idx;
    uint32_t id = kv_spv_id(m);
    KV_INS(&x->body, SpvOpBitcast, x->c.t_u, id, idx);
    return id;
}

/* The check of index iu against bound (ids): a record where it fails, and the clamped index. */
static uint32_t check(struct walk *x, uint32_t iu, uint32_t bound, uint32_t site)
{
    struct kv_san_ctx *c = &x->c;
    uint32_t ok = emit2(x, SpvOpULessThan, c->t_b, iu, bound), bad = kv_spv_id(&c->m), cl = kv_spv_id(&c->m);
    KV_INS(&x->body, SpvOpLogicalNot, c->t_b, bad, ok);
    KV_INS(&x->body, SpvOpSelect, c->t_u, cl, ok, iu, kv_spv_u32(&c->m, 0));

    KV_INS(&x->body, SpvOpFunctionCall, c->t_v, kv_spv_id(&c->m), c->f_note, kv_spv_u32(&c->m, KV_SAN_MEMCHECK), site,
           iu, bound, kv_spv_u32(&c->m, 0), bad);
    return cl;
}

/* The bound of an index into type t (an id), its element type; 0 when unchecked. */
static uint32_t bound_of(struct walk *x, uint32_t t, uint32_t r, int buffer, uint32_t *elem, uint32_t *known)
{
    struct kv_spv *m = &x->c.m;
    const uint32_t *d = m->w + m->def[t];
    uint32_t op = kv_spv_op(m, t);
    *elem = 0;
    *known = UINT32_MAX;
    if (op == SpvOpTypeVector || op == SpvOpTypeMatrix) return *elem = d[2], *known = d[3], kv_spv_u32(m, d[3]);
    if (op == SpvOpTypeArray) {
        *elem = d[2];
        if (kv_spv_const(m, d[3], known)) return kv_spv_u32(m, *known);
        return as_uint(x, d[3]);
    }
    if (op != SpvOpTypeRuntimeArray) return 0;
    *elem = d[2];
    int32_t b = r ? m->binding[r] : -1;
    if (!buffer || b < 0 || b >= KV_SAN_MAX_BINDINGS) return 0;
    /* The header holds the binding's logical bytes; an array of this stride
     * (views of one binding may differ) has their ceiling in elements. */
    uint32_t stride = m->stride[t] ? m->stride[t] : 4, p = kv_spv_id(m), bytes = kv_spv_id(m);
    KV_INS(&x->body, SpvOpAccessChain, x->c.p_sb, p, x->c.rec, kv_spv_u32(m, 0), kv_spv_u32(m, KV_SAN_LOGICAL + (uint32_t)b));
    KV_INS(&x->body, SpvOpLoad, x->c.t_u, bytes, p);
    if (stride == 1) return bytes;
    uint32_t up = emit2(x, SpvOpIAdd, x->c.t_u, bytes, kv_spv_u32(m, stride - 1));
    return emit2(x, SpvOpUDiv, x->c.t_u, up, kv_spv_u32(m, stride));
}

/* Whether accesses through a pointer of storage class sc rooted at r are checked. */
static int checked_class(const struct kv_spv *m, uint32_t sc, uint32_t r)
{
    return sc == SpvStorageClassFunction || sc == SpvStorageClassPrivate || sc == SpvStorageClassWorkgroup ||
           ((sc == SpvStorageClassStorageBuffer || sc == SpvStorageClassUniform) && r && m->binding[r] >= 0);
}

/* racecheck-global: whether the access chain at i (its result's pointee t)
 * reaches a scalar or vector of a storage buffer's runtime array as
 * var.member[index] or var.member[index][component], its bound checked:
 * then its binding, index and constant bytes are kept for its stores. */
static void global_chain(struct walk *x, size_t i, uint32_t t)
{
    struct kv_spv *m = &x->c.m;
    const uint32_t *w = m->w + i;
    uint32_t len = kv_len(w[0]), var = w[3], k, c = 0, vt = kv_spv_type(m, var), sb = 0;
    const int32_t b = var < m->bound && x->root[var] == var ? m->binding[var] : -1;
    if (kv_spv_op(m, vt) == SpvOpTypePointer) {
        const uint32_t sc = m->w[m->def[vt] + 2];
        sb = sc == SpvStorageClassStorageBuffer || sc == SpvStorageClassUniform;
    }
    const uint32_t size = t ? type_bytes(m, t) : 0, op = t ? kv_spv_op(m, t) : 0;
    if (!x->c.global_binding || !sb || b < 0 || b >= KV_SAN_MAX_BINDINGS || len < 6 || len > 7 || !x->g_bound[w[2]] ||
        !x->g_idx[w[2]] || !kv_spv_const(m, w[4], &k) || (len == 7 && !kv_spv_const(m, w[6], &c)) || !size ||
        (op != SpvOpTypeInt && op != SpvOpTypeFloat && op != SpvOpTypeVector)) {
        x->g_bind[w[2]] = 0;
        return;
    }
    const uint32_t off = kv_san_member_offset(m, m->w[m->def[vt] + 3], k), comp = op == SpvOpTypeVector ? type_bytes(m, m->w[m->def[t] + 2]) : size;
    if (off == UINT32_MAX || !x->g_stride[w[2]]) return (void)(x->g_bind[w[2]] = 0);
    x->g_bind[w[2]] = (uint32_t)b + 1, x->g_off[w[2]] = off + c * size, x->g_size[w[2]] = comp;
    x->g_bytes[w[2]] = size;
}

/* racecheck-global: a store, or a load of a binding the module stores to,
 * through a pointer global_chain kept. */
static void global_access(struct walk *x, size_t i, int store)
{
    struct kv_spv *m = &x->c.m;
    const uint32_t p = m->w[i + (store ? 1 : 3)], u = x->c.t_u;
    if (p >= m->bound || !x->g_bind[p] || !(x->g_stored >> (x->g_bind[p] - 1) & 1u)) return;
    const uint32_t b = x->g_bind[p] - 1, size = x->g_size[p];
    if (!x->c.gunit || size < x->c.gunit) x->c.gunit = size < 4 ? size : 4;
    x->out->global_mask |= 1u << b;
    uint32_t byte = emit2(x, SpvOpIAdd, u, emit2(x, SpvOpIMul, u, x->g_idx[p], kv_spv_u32(m, x->g_stride[p])),
                          kv_spv_u32(m, x->g_off[p]));
    uint32_t inr = kv_spv_id(m);
    KV_INS(&x->body, SpvOpSelect, u, inr, emit2(x, SpvOpULessThan, x->c.t_b, x->g_idx[p], x->g_bound[p]),
           kv_spv_u32(m, 1), kv_spv_u32(m, 0));
    uint32_t site = add_site(x, KV_SAN_GLOBAL, (int32_t)b, 0, i, store ? "OpStore" : "OpLoad");
    KV_INS(&x->body, SpvOpFunctionCall, x->c.t_v, kv_spv_id(m), store ? x->c.f_gwrite : x->c.f_gread, kv_spv_u32(m, b),
           byte, kv_spv_u32(m, x->g_bytes[p]), inr, kv_spv_u32(m, site));
}

static void access_chain(struct walk *x, size_t i)
{
    struct kv_spv *m = &x->c.m;
    const uint32_t *w = m->w + i;
    uint32_t len = kv_len(w[0]), base = w[3], pt = kv_spv_type(m, base), r = x->root[base];
    uint32_t ops[64];
    if (kv_spv_op(m, pt) != SpvOpTypePointer || len > 64) return kv_words_put(&x->body, w, len);
    uint32_t sc = m->w[m->def[pt] + 2], t = m->w[m->def[pt] + 3], uoff = x->unit[base];
    int checked = checked_class(m, sc, r), buffer = sc != SpvStorageClassFunction && sc != SpvStorageClassPrivate &&
                                                    sc != SpvStorageClassWorkgroup;
    memcpy(ops, w, 4 * (size_t)len);
    for (uint32_t j = 4; j < len && t; j++) {
        uint32_t elem, op = kv_spv_op(m, t), v;
        if (op == SpvOpTypeStruct) {
            uint32_t k = const_of(m, w[j], 0), off = 0;
            for (uint32_t s = 0; s < k; s++) off += kv_spv_units(m, m->w[m->def[t] + 2 + s]);
            t = m->w[m->def[t] + 2 + k];
            if (uoff) uoff = emit2(x, SpvOpIAdd, x->c.t_u, uoff, kv_spv_u32(m, off));
            continue;
        }
        uint32_t bv, bound = checked ? bound_of(x, t, r, buffer, &elem, &bv) : 0, iu = as_uint(x, w[j]);
        if (!bound) bound_of(x, t, 0, 0, &elem, &bv);
        if (j == 5 && op == SpvOpTypeRuntimeArray) x->g_idx[w[2]] = iu, x->g_bound[w[2]] = bound, x->g_stride[w[2]] = m->stride[t];
        int in_range = kv_spv_const(m, w[j], &v) && v < bv;
        if (bound && iu && !in_range) {
            uint32_t site = add_site(x, KV_SAN_MEMCHECK, buffer ? m->binding[r] : -1, r, i, "OpAccessChain");
            ops[j] = iu = check(x, iu, bound, kv_spv_u32(m, site));
        }
        if (iu && bound && (op == SpvOpTypeArray || op == SpvOpTypeRuntimeArray))
            x->el_idx[w[2]] = iu, x->el_bound[w[2]] = bound, x->el_type[w[2]] = elem;
        else x->el_idx[w[2]] = 0;
        uint32_t eu = elem ? kv_spv_units(m, elem) : 0;
        if (uoff && (!iu || !eu)) uoff = 0;
        else if (uoff)
            uoff = emit2(x, SpvOpIAdd, x->c.t_u, uoff, emit2(x, SpvOpIMul, x->c.t_u, iu, kv_spv_u32(m, eu)));
        t = elem;
    }
    x->unit[w[2]] = t ? uoff : 0;
    global_chain(x, i, t);
    kv_words_put(&x->body, ops, len);
}

/* A cooperative matrix loaded or stored through an element pointer: its last
 * element, (rows or columns - 1) x stride past the first plus the other
 * extent in the array's elements, is checked against the array's bound
 * (recorded, not clamped: the matrix is the subgroup's). */
static void coopmat_extent(struct walk *x, size_t i, uint32_t op)
{
    struct kv_spv *m = &x->c.m;
    struct cm_op o;
    if (!cm_info(m, i, op, &o) || !x->el_idx[o.ptr]) return;
    uint32_t eb = type_bytes(m, x->el_type[o.ptr]);
    if (!eb) return;
    uint32_t major = o.colmajor ? o.cols : o.rows, minor = o.colmajor ? o.rows : o.cols;
    uint32_t tail = (minor * o.cb + eb - 1) / eb - 1, u = x->c.t_u, su = o.stride ? as_uint(x, o.stride) : 0;
    if (!su && major > 1) return;
    uint32_t ptr = o.ptr, last = emit2(x, SpvOpIAdd, u, x->el_idx[ptr], kv_spv_u32(m, tail));
    if (major > 1) last = emit2(x, SpvOpIAdd, u, last, emit2(x, SpvOpIMul, u, su, kv_spv_u32(m, major - 1)));
    uint32_t site = add_site(x, KV_SAN_MEMCHECK, -1, x->root[ptr], i, o.load ? "a cooperative-matrix load" :
                                                                           "a cooperative-matrix store");
    struct kv_san_site *st = &x->out->site[site - 1];
    if (x->root[ptr] && m->binding[x->root[ptr]] >= 0) st->binding = m->binding[x->root[ptr]], st->array[0] = '\0';
    uint32_t ok = emit2(x, SpvOpULessThan, x->c.t_b, last, x->el_bound[ptr]), bad = kv_spv_id(m);
    KV_INS(&x->body, SpvOpLogicalNot, x->c.t_b, bad, ok);
    KV_INS(&x->body, SpvOpFunctionCall, x->c.t_v, kv_spv_id(m), x->c.f_note, kv_spv_u32(m, KV_SAN_MEMCHECK),
           kv_spv_u32(m, site), last, x->el_bound[ptr], kv_spv_u32(m, 0), bad);
}

/* A cooperative matrix loaded from or stored to shadowed memory: the shadow
 * of each scalar unit it covers, line by line (rows, or columns when column
 * major), dealt out over the subgroup's lanes. */
static void coopmat_shadow(struct walk *x, size_t i, uint32_t op)
{
    struct kv_spv *m = &x->c.m;
    struct cm_op o;
    if (!x->c.shared || !x->c.cm || !cm_info(m, i, op, &o) || !x->unit[o.ptr]) return;
    uint32_t major = o.colmajor ? o.cols : o.rows, minor = o.colmajor ? o.rows : o.cols, u = x->c.t_u;
    uint32_t per = (minor * o.cb + o.ub - 1) / o.ub, su = o.stride ? as_uint(x, o.stride) : 0;
    uint32_t step = su ? emit2(x, SpvOpIMul, u, su, kv_spv_u32(m, o.eb / o.ub)) : kv_spv_u32(m, 0);
    if (!su && major > 1) return;
    uint32_t site = add_site(x, KV_SAN_RACECHECK, -1, x->root[o.ptr], i, o.load ? "a cooperative-matrix load" :
                                                                             "a cooperative-matrix store");
    KV_INS(&x->body, SpvOpFunctionCall, x->c.t_v, kv_spv_id(m), o.load ? x->c.f_cm_read : x->c.f_cm_write,
           x->unit[o.ptr], kv_spv_u32(m, major), kv_spv_u32(m, per), step, kv_spv_u32(m, site));
}

/* A load, store or atomic through a shadowed workgroup pointer. */
static void shadow(struct walk *x, size_t i, uint32_t op)
{
    struct kv_spv *m = &x->c.m;
    uint32_t p = m->w[i + kv_san_ptr_pos(op)], pt = kv_spv_type(m, p);
    if (!x->c.shared || p >= m->bound || !x->unit[p] || kv_spv_op(m, pt) != SpvOpTypePointer) return;
    uint32_t n = kv_spv_units(m, m->w[m->def[pt] + 3]);
    if (!n) return;
    uint32_t fn = kv_san_is_atomic(op) ? x->c.f_atomic : op == SpvOpLoad ? x->c.f_read : x->c.f_write;
    uint32_t site = add_site(x, KV_SAN_RACECHECK, -1, x->root[p], i, op == SpvOpLoad ? "OpLoad" : "OpStore");
    KV_INS(&x->body, SpvOpFunctionCall, x->c.t_v, kv_spv_id(m), fn, x->unit[p], kv_spv_u32(m, n), kv_spv_u32(m, site));
}

static void call(struct walk *x, uint32_t fn)
{
    KV_INS(&x->body, SpvOpFunctionCall, x->c.t_v, kv_spv_id(&x->c.m), fn);
}

static void rewrite_functions(struct walk *x)
{
    struct kv_spv *m = &x->c.m;
    uint32_t fn = 0;
    int prologue = 0;
    for (size_t i = m->first_fn; i < m->n; i += kv_len(m->w[i])) {
        const uint32_t *w = m->w + i;
        uint32_t op = kv_op(w[0]), sem;
        if (prologue && op != SpvOpVariable && op != SpvOpLine && op != SpvOpNoLine && op != SpvOpLabel) {
            call(x, x->c.f_prologue);
            prologue = 0;
        }
        if (op == SpvOpFunction) fn = w[2], prologue = x->c.shared && fn == m->entry_fn;
        if (op == SpvOpLine) x->file = w[1], x->line = w[2], x->col = w[3];
        if (op == SpvOpNoLine || op == SpvOpFunctionEnd) x->file = 0;
        if (op == SpvOpAccessChain || op == SpvOpInBoundsAccessChain) {
            access_chain(x, i);
            continue;
        }
        if (op == SpvOpLoad || op == SpvOpStore || kv_san_is_atomic(op)) shadow(x, i, op);
        if (op == SpvOpStore || op == SpvOpLoad) global_access(x, i, op == SpvOpStore);
        if (is_coopmat_access(op)) coopmat_extent(x, i, op), coopmat_shadow(x, i, op);
        if ((op == SpvOpReturn || op == SpvOpReturnValue) && fn == m->entry_fn) call(x, x->c.f_flush);
        if (op == SpvOpControlBarrier && x->c.sb && kv_spv_const(m, w[3], &sem)) /* the shadow's buffer ordered too */
            KV_INS(&x->body, SpvOpControlBarrier, w[1], w[2], kv_spv_u32(m, sem | 0x40u));
        /* a loop without its Unroll hint: unrolled, the checks went with every
         * copy (lavapipe took 150 s to build gemm's tile so, 14 s without) */
        else kv_words_put_rolled(&x->body, w);
        uint32_t scope = op == SpvOpControlBarrier ? const_of(m, w[1], 0) : 0;
        if ((x->c.shared || x->c.gintra) && (scope == SpvScopeWorkgroup || (scope == SpvScopeSubgroup && x->c.sg))) {
            uint32_t e = kv_spv_id(m), e1 = kv_spv_id(m), v = scope == SpvScopeWorkgroup ? x->c.epoch : x->c.sepoch;
            KV_INS(&x->body, SpvOpLoad, x->c.t_u, e, v);
            KV_INS(&x->body, SpvOpIAdd, x->c.t_u, e1, e, kv_spv_u32(m, 1));
            KV_INS(&x->body, SpvOpStore, v, e1);
        }
    }
}

/* The module put together: the entry point's interface grows by the new globals. */
static int assemble(struct walk *x)
{
    struct kv_san_ctx *c = &x->c;
    uint32_t cap = SpvCapabilityGroupNonUniform, vars[8], n_vars = 0, io[6], n_io = 0;
    const int n_caps = c->shared && (c->sg || c->cm) && !x->gnu_declared; /* the subgroup built-ins' capability */
    vars[n_vars++] = c->st, vars[n_vars++] = c->epoch, vars[n_vars++] = c->rec;
    if (c->shared) vars[n_vars++] = c->shw;
    if (c->shared && !c->sb) vars[n_vars++] = c->shr;
    if (c->shared && c->sg) vars[n_vars++] = c->sepoch;
    if (c->global_binding) vars[n_vars++] = c->gsh;
    if (c->new_lid) io[n_io++] = c->lid;
    if (c->new_wgid) io[n_io++] = c->wgid;
    if (c->new_nwg) io[n_io++] = c->nwg;
    if (c->new_sgsize) io[n_io++] = c->sgsize;
    if (c->new_sgid) io[n_io++] = c->sgid;
    if (c->new_sglane) io[n_io++] = c->sglane;
    return kv_spv_assemble(&c->m, &cap, n_caps, vars, n_vars, io, n_io, &x->body, &c->fns, &x->out->words,
                           &x->out->bytes);
}

static void walk_free(struct walk *x)
{
    free(x->root), free(x->unit), free(x->wg_of), free(x->opaque), free(x->body.w), free(x->c.fns.w);
    free(x->el_idx), free(x->el_bound), free(x->el_type);
    free(x->g_bind), free(x->g_idx), free(x->g_bound), free(x->g_stride), free(x->g_off), free(x->g_size);
    free(x->g_bytes);
    kv_spv_free(&x->c.m);
}

enum kv_status kv_san_instrument(const char *what, const uint32_t *words, size_t bytes, uint32_t binding,
                                 uint32_t shared_limit, uint32_t room, struct kv_san_module *out)
{
    struct walk x = {.out = out};
    char err[160];
    memset(out, 0, sizeof *out);
    out->binding = binding;
    if (kv_spv_index(&x.c.m, words, bytes / 4, err, sizeof err)) {
        kv_spv_free(&x.c.m);
        return kv_error(KV_EDATA, "%s: cannot instrument: %s", what, err);
    }
    size_t b = x.c.m.bound;
    x.root = calloc(b, sizeof *x.root), x.unit = calloc(b, sizeof *x.unit), x.wg_of = calloc(b, sizeof *x.wg_of);
    x.opaque = calloc(b, 1);
    x.el_idx = calloc(b, sizeof *x.el_idx), x.el_bound = calloc(b, sizeof *x.el_bound);
    x.el_type = calloc(b, sizeof *x.el_type);
    x.g_bind = calloc(b, sizeof *x.g_bind), x.g_idx = calloc(b, sizeof *x.g_idx), x.g_bound = calloc(b, sizeof *x.g_bound);
    x.g_stride = calloc(b, sizeof *x.g_stride), x.g_off = calloc(b, sizeof *x.g_off), x.g_size = calloc(b, sizeof *x.g_size);
    x.g_bytes = calloc(b, sizeof *x.g_bytes);
    enum kv_status st = KV_OK;
    if (!x.root || !x.unit || !x.wg_of || !x.opaque || !x.el_idx || !x.el_bound || !x.el_type || !x.g_bind || !x.g_idx ||
        !x.g_bound || !x.g_stride || !x.g_off || !x.g_size || !x.g_bytes)
        st = kv_error(KV_EDEVICE, "out of host memory");
    if (!st) {
        scan_uses(&x);
        plan_shadow(&x, shared_limit);
        if (kv_san_global_plan(&x.c.m, x.root, room, out, &x.g_stored, &x.c.gintra))
            x.c.global_binding = out->global_binding;
        x.c.gintra &= x.c.local && x.c.local <= 2048; /* the shadow holds a local index in 11 bits */
        kv_san_globals(&x.c, binding);
        for (int g = 0; g < out->n_wg; g++)
            for (uint32_t id = 1; id < b; id++)
                if (x.wg_of[id] == (uint32_t)g + 1 && x.c.shared) x.unit[id] = kv_spv_u32(&x.c.m, out->wg[g].first);
        rewrite_functions(&x);
        if (!x.c.gunit) x.c.gunit = 4; /* no access shadowed: kv_gwrite and kv_gread are never called */
        out->global_unit = x.c.gunit;
        kv_san_helpers(&x.c);
        out->shadow_units = x.c.units;
        if (assemble(&x)) st = kv_error(KV_EDEVICE, "out of host memory instrumenting %s", what);
    }
    walk_free(&x);
    if (st) kv_san_module_free(out);
    return st;
}

void kv_san_module_free(struct kv_san_module *m)
{
    free(m->words), free(m->site), free(m->wg);
    memset(m, 0, sizeof *m);
}
