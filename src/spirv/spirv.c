#include "spirv/spirv.h"

#include <stdlib.h>
#include <string.h>

enum {
    OP_EXECUTION_MODE = 16, OP_EXECUTION_MODE_ID = 331, OP_TYPE_INT = 21, OP_TYPE_FLOAT = 22, OP_TYPE_VECTOR = 23,
    OP_TYPE_MATRIX = 24, OP_TYPE_ARRAY = 28, OP_TYPE_STRUCT = 30,
    OP_TYPE_POINTER = 32, OP_CONSTANT = 43, OP_CONSTANT_COMPOSITE = 44, OP_SPEC_CONSTANT = 50,
    OP_SPEC_CONSTANT_COMPOSITE = 51, OP_VARIABLE = 59, OP_DECORATE = 71, OP_MEMBER_DECORATE = 72,
    OP_ENTRY_POINT = 15, OP_TYPE_RUNTIME_ARRAY = 29, OP_SPEC_CONSTANT_TRUE = 48, OP_SPEC_CONSTANT_FALSE = 49,
};
enum { DEC_SPEC_ID = 1, DEC_BLOCK = 2, DEC_BUFFER_BLOCK = 3, DEC_ARRAY_STRIDE = 6, DEC_BUILTIN = 11,
       DEC_NON_WRITABLE = 24, DEC_NON_READABLE = 25,
       DEC_BINDING = 33, DEC_SET = 34, DEC_OFFSET = 35 };
enum { SC_UNIFORM_CONSTANT = 0, SC_UNIFORM = 2, SC_PUSH_CONSTANT = 9, SC_STORAGE_BUFFER = 12 };
enum { MODE_LOCAL_SIZE = 17, MODE_LOCAL_SIZE_ID = 38, BUILTIN_WORKGROUP_SIZE = 25,
       MODEL_GLCOMPUTE = 5 };

#define MAX_MEMBERS 64

struct id_info {
    uint16_t op;
    uint8_t block, buffer_block, has_binding, has_set, wg_builtin;
    uint8_t nonwritable, nonreadable, has_spec; /* on a variable, or on any member of a block */
    uint32_t spec_id;
    uint32_t binding, set, stride;
    uint32_t a, b, c;        /* operands by op: see reflect() */
    uint32_t *members;       /* struct member types, then offsets */
    uint32_t n_members;
};

static uint32_t type_size(const struct id_info *ids, uint32_t bound, uint32_t t, int depth)
{
    if (t >= bound || depth > 16) return 0;
    const struct id_info *i = &ids[t];
    switch (i->op) {
    case OP_TYPE_INT:
    case OP_TYPE_FLOAT: return i->a / 8;
    case OP_TYPE_VECTOR:
    case OP_TYPE_MATRIX: return i->b * type_size(ids, bound, i->a, depth + 1);
    case OP_TYPE_ARRAY: {
        uint32_t len = i->b < bound && ids[i->b].op == OP_CONSTANT ? ids[i->b].a : 0;
        uint32_t stride = i->stride ? i->stride : type_size(ids, bound, i->a, depth + 1);
        return len * stride;
    }
    case OP_TYPE_STRUCT: {
        uint32_t end = 0;
        for (uint32_t m = 0; m < i->n_members; m++) {
            uint32_t e = i->members[i->n_members + m] + type_size(ids, bound, i->members[m], depth + 1);
            if (e > end) end = e;
        }
        return end;
    }
    default: return 0;
    }
}

/* What the first pass gathers beside the ids. */
struct scan {
    int compute, have_local, local_by_id;
    uint32_t local[3], local_ids[3];
};

/* One instruction (op, its no operands o) of the first pass: types,
 * constants, variables, decorations, the entry point and workgroup size. */
static enum kv_status scan_op(const char *what, uint32_t op, const uint32_t *o, uint32_t no, struct id_info *ids,
                              uint32_t bound, struct scan *sc)
{
#define ID(k) (no > (k) && o[k] < bound ? o[k] : 0)
    switch (op) {
    case OP_ENTRY_POINT:
        if (no >= 1 && o[0] == MODEL_GLCOMPUTE) sc->compute++;
        break;
    case OP_EXECUTION_MODE:
    case OP_EXECUTION_MODE_ID: /* LocalSizeId's: SPIR-V 1.6, glslc --target-env=vulkan1.3 */
        if (op == OP_EXECUTION_MODE && no >= 5 && o[1] == MODE_LOCAL_SIZE) {
            sc->local[0] = o[2], sc->local[1] = o[3], sc->local[2] = o[4];
            sc->have_local = 1;
        } else if (no >= 5 && o[1] == MODE_LOCAL_SIZE_ID) {
            sc->local_ids[0] = o[2], sc->local_ids[1] = o[3], sc->local_ids[2] = o[4];
            sc->local_by_id = 1;
        }
        break;
    case OP_TYPE_INT: case OP_TYPE_FLOAT: /* a: width; b: an int's signedness */
        if (ID(0) && no >= 2) ids[o[0]].op = (uint16_t)op, ids[o[0]].a = o[1], ids[o[0]].b = no >= 3 ? o[2] : 0;
        break;
    case OP_TYPE_VECTOR: case OP_TYPE_MATRIX: case OP_TYPE_ARRAY:
        if (ID(0) && no >= 3) ids[o[0]].op = (uint16_t)op, ids[o[0]].a = o[1], ids[o[0]].b = o[2];
        break;
    case OP_TYPE_RUNTIME_ARRAY:
        if (ID(0) && no >= 2) ids[o[0]].op = (uint16_t)op, ids[o[0]].a = o[1];
        break;
    case OP_SPEC_CONSTANT_TRUE: case OP_SPEC_CONSTANT_FALSE:
        if (ID(1)) ids[o[1]].op = OP_CONSTANT, ids[o[1]].a = o[0], ids[o[1]].c = op; /* c: the kind, below */
        break;
    case OP_TYPE_STRUCT:
        if (ID(0) && !ids[o[0]].members) {
            struct id_info *s = &ids[o[0]];
            s->op = OP_TYPE_STRUCT;
            s->n_members = no - 1;
            s->members = calloc(2 * (size_t)(no ? no : 1), sizeof(uint32_t));
            if (!s->members) return kv_error(KV_EDATA, "%s: out of memory reflecting SPIR-V", what);
            for (uint32_t m = 0; m + 1 < no; m++) s->members[m] = o[m + 1];
        }
        break;
    case OP_TYPE_POINTER:
        if (ID(0) && no >= 3) ids[o[0]].op = OP_TYPE_POINTER, ids[o[0]].a = o[1], ids[o[0]].b = o[2];
        break;
    case OP_CONSTANT: case OP_SPEC_CONSTANT:
        if (ID(1) && no >= 3) ids[o[1]].op = OP_CONSTANT, ids[o[1]].a = o[2], ids[o[1]].b = o[0];
        break;
    case OP_CONSTANT_COMPOSITE: case OP_SPEC_CONSTANT_COMPOSITE:
        if (ID(1) && no >= 5)
            ids[o[1]].op = OP_CONSTANT_COMPOSITE, ids[o[1]].a = o[2], ids[o[1]].b = o[3], ids[o[1]].c = o[4];
        break;
    case OP_VARIABLE:
        if (ID(1) && no >= 3) ids[o[1]].op = OP_VARIABLE, ids[o[1]].a = o[0], ids[o[1]].b = o[2];
        break;
    case OP_DECORATE:
        if (ID(0) && no >= 2) {
            struct id_info *t = &ids[o[0]];
            if (o[1] == DEC_BLOCK) t->block = 1;
            else if (o[1] == DEC_BUFFER_BLOCK) t->buffer_block = 1;
            else if (o[1] == DEC_BINDING && no >= 3) t->has_binding = 1, t->binding = o[2];
            else if (o[1] == DEC_SET && no >= 3) t->has_set = 1, t->set = o[2];
            else if (o[1] == DEC_ARRAY_STRIDE && no >= 3) t->stride = o[2];
            else if (o[1] == DEC_BUILTIN && no >= 3 && o[2] == BUILTIN_WORKGROUP_SIZE) t->wg_builtin = 1;
            else if (o[1] == DEC_NON_WRITABLE) t->nonwritable = 1;
            else if (o[1] == DEC_NON_READABLE) t->nonreadable = 1;
            else if (o[1] == DEC_SPEC_ID && no >= 3) t->has_spec = 1, t->spec_id = o[2];
        }
        break;
    default: break;
    }
#undef ID
    return KV_OK;
}

/* Variable v's binding into out (once per (set, binding): several variables
 * may alias one buffer, as vec4[] and float[]; it is checked by its first view). */
static enum kv_status add_binding(const char *what, const struct id_info *ids, uint32_t bound,
                                  const struct id_info *v, uint32_t pointee, struct kv_spirv_iface *out)
{
    uint32_t set = v->has_set ? v->set : 0;
    for (int i = 0; i < out->n_bindings; i++)
        if (out->b[i].set == set && out->b[i].binding == v->binding) return KV_OK;
    if (out->n_bindings >= KV_SPIRV_MAX_BINDINGS) return kv_error(KV_EDATA, "%s: too many descriptor bindings", what);
    enum kv_binding_kind kind = KV_BIND_OTHER;
    /* Arrays of blocks would be one binding with several descriptors; treat as other. */
    if (v->b == SC_STORAGE_BUFFER) kind = KV_BIND_STORAGE;
    else if (v->b == SC_UNIFORM && pointee < bound)
        kind = ids[pointee].buffer_block ? KV_BIND_STORAGE : ids[pointee].block ? KV_BIND_UNIFORM : KV_BIND_OTHER;
    out->b[out->n_bindings].set = set;
    out->b[out->n_bindings].binding = v->binding;
    out->b[out->n_bindings].kind = kind;
    out->n_bindings++;
    return KV_OK;
}

/* The scalar under t (through vectors, matrices and arrays): its kind
 * (KV_SCALAR_*) and width in bits. */
static void scalar_of(const struct id_info *ids, uint32_t bound, uint32_t t, int *kind, uint32_t *bits)
{
    for (int depth = 0; t < bound && depth < 16; depth++) {
        const struct id_info *i = &ids[t];
        if (i->op == OP_TYPE_FLOAT) {
            *kind = KV_SCALAR_FLOAT, *bits = i->a;
            return;
        }
        if (i->op == OP_TYPE_INT) {
            *kind = i->b ? KV_SCALAR_INT : KV_SCALAR_UINT, *bits = i->a;
            return;
        }
        if (i->op != OP_TYPE_VECTOR && i->op != OP_TYPE_MATRIX && i->op != OP_TYPE_ARRAY &&
            i->op != OP_TYPE_RUNTIME_ARRAY)
            break;
        t = i->a;
    }
    *kind = KV_SCALAR_OTHER, *bits = 0;
}

/* What a storage binding holds and how it is used: the element of its
 * block's last member, and its read-only or write-only decoration. */
static void binding_detail(const struct id_info *ids, uint32_t bound, const struct id_info *v, uint32_t pointee,
                           struct kv_spirv_iface *out, int i)
{
    const struct id_info *blk = pointee < bound ? &ids[pointee] : NULL;
    out->b[i].writable = !(v->nonwritable || (blk && blk->nonwritable));
    out->b[i].readable = !(v->nonreadable || (blk && blk->nonreadable));
    out->b[i].elem_kind = KV_SCALAR_OTHER, out->b[i].elem_bits = 0;
    if (blk && blk->op == OP_TYPE_STRUCT && blk->n_members > 0)
        scalar_of(ids, bound, blk->members[blk->n_members - 1], &out->b[i].elem_kind, &out->b[i].elem_bits);
}

/* The push-constant block's members: offset, size, scalar kind and width. */
static void push_members(const struct id_info *ids, uint32_t bound, uint32_t pointee, struct kv_spirv_iface *out)
{
    const struct id_info *s = pointee < bound ? &ids[pointee] : NULL;
    if (!s || s->op != OP_TYPE_STRUCT) return;
    for (uint32_t m = 0; m < s->n_members && out->n_push < KV_SPIRV_MAX_PUSH; m++) {
        out->push[out->n_push].offset = s->members[s->n_members + m];
        out->push[out->n_push].size = type_size(ids, bound, s->members[m], 0);
        scalar_of(ids, bound, s->members[m], &out->push[out->n_push].kind, &out->push[out->n_push].bits);
        out->n_push++;
    }
}

/* Specialization constants: SpecId, kind, width. */
static void spec_constants(const struct id_info *ids, uint32_t bound, struct kv_spirv_iface *out)
{
    for (uint32_t id = 0; id < bound && out->n_spec < KV_SPIRV_MAX_SPEC; id++) {
        if (!ids[id].has_spec || ids[id].op != OP_CONSTANT) continue;
        int kind = KV_SCALAR_BOOL;
        uint32_t bits = 32;
        if (ids[id].c != OP_SPEC_CONSTANT_TRUE && ids[id].c != OP_SPEC_CONSTANT_FALSE)
            scalar_of(ids, bound, ids[id].b, &kind, &bits);
        out->spec[out->n_spec].id = ids[id].spec_id;
        out->spec[out->n_spec].kind = kind;
        out->spec[out->n_spec].bits = bits;
        out->n_spec++;
    }
}

/* Bindings in (set, binding) order, so that messages name the first. */
static void sort_bindings(struct kv_spirv_iface *out)
{
    for (int i = 1; i < out->n_bindings; i++)
        for (int j = i; j > 0 && (out->b[j - 1].set > out->b[j].set ||
                                  (out->b[j - 1].set == out->b[j].set && out->b[j - 1].binding > out->b[j].binding)); j--) {
            __typeof__(out->b[0]) t = out->b[j];
            out->b[j] = out->b[j - 1];
            out->b[j - 1] = t;
        }
}

enum kv_status kv_spirv_reflect(const char *what, const uint32_t *w, size_t n, struct kv_spirv_iface *out)
{
    enum kv_status st = KV_OK;
    struct id_info *ids = NULL;
    struct scan sc = {0};
    memset(out, 0, sizeof *out);
    KV_CHECK(n >= 5 && w[0] == 0x07230203u, KV_EDATA, "%s: not a SPIR-V module (bad magic number)", what);
    uint32_t bound = w[3];
    KV_CHECK(bound > 0 && bound < (1u << 22), KV_EDATA, "%s: SPIR-V id bound %u is implausible", what, bound);
    ids = calloc(bound, sizeof *ids);
    KV_CHECK(ids, KV_EDATA, "%s: out of memory reflecting SPIR-V", what);
    for (size_t pc = 5; pc < n;) {
        uint32_t wc = w[pc] >> 16, op = w[pc] & 0xffffu;
        KV_CHECK(wc > 0 && pc + wc <= n, KV_EDATA, "%s: truncated SPIR-V instruction at word %zu", what, pc);
        KV_TRY(scan_op(what, op, &w[pc + 1], wc - 1, ids, bound, &sc));
        pc += wc;
    }
    /* Offsets are decorated before the struct is declared: second pass. */
    for (size_t pc = 5; pc < n; pc += w[pc] >> 16) {
        uint32_t wc = w[pc] >> 16, op = w[pc] & 0xffffu;
        const uint32_t *o = &w[pc + 1];
        if (op == OP_MEMBER_DECORATE && wc >= 5 && o[0] < bound && o[2] == DEC_OFFSET) {
            struct id_info *s = &ids[o[0]];
            if (s->members && o[1] < s->n_members) s->members[s->n_members + o[1]] = o[3];
        }
        if (op == OP_MEMBER_DECORATE && wc >= 4 && o[0] < bound && o[2] == DEC_NON_WRITABLE) ids[o[0]].nonwritable = 1;
        if (op == OP_MEMBER_DECORATE && wc >= 4 && o[0] < bound && o[2] == DEC_NON_READABLE) ids[o[0]].nonreadable = 1;
    }
    KV_CHECK(sc.compute, KV_EDATA, "%s: SPIR-V has no GLCompute entry point", what);
    KV_CHECK(sc.compute == 1, KV_EDATA, "%s: SPIR-V has %d GLCompute entry points; a stage runs a module's one "
             "(build the module with the one entry point you mean)", what, sc.compute);
    memcpy(out->local, sc.local, sizeof out->local);
    for (uint32_t id = 0; id < bound; id++) {
        struct id_info *v = &ids[id];
        if (v->wg_builtin && v->op == OP_CONSTANT_COMPOSITE) {
            /* A WorkgroupSize builtin overrides LocalSize. */
            uint32_t c[3] = {v->a, v->b, v->c};
            for (int k = 0; k < 3; k++) out->local[k] = c[k] < bound ? ids[c[k]].a : 0;
            sc.have_local = 1;
        }
        if (v->op != OP_VARIABLE) continue;
        uint32_t ptr = v->a;
        uint32_t pointee = ptr < bound && ids[ptr].op == OP_TYPE_POINTER ? ids[ptr].b : 0;
        if (v->b == SC_PUSH_CONSTANT) {
            out->push_size = type_size(ids, bound, pointee, 0);
            push_members(ids, bound, pointee, out);
        } else if (v->has_binding) {
            int before = out->n_bindings;
            KV_TRY(add_binding(what, ids, bound, v, pointee, out));
            if (out->n_bindings > before) binding_detail(ids, bound, v, pointee, out, before);
        }
    }
    spec_constants(ids, bound, out);
    sort_bindings(out);
    if (sc.local_by_id && !sc.have_local) {
        for (int k = 0; k < 3; k++)
            out->local[k] = sc.local_ids[k] < bound && ids[sc.local_ids[k]].op == OP_CONSTANT ? ids[sc.local_ids[k]].a : 0;
        sc.have_local = 1;
    }
    KV_CHECK(sc.have_local && out->local[0] && out->local[1] && out->local[2], KV_EDATA,
             "%s: SPIR-V declares no workgroup size", what);
cleanup:
    if (ids)
        for (uint32_t i = 0; i < bound; i++) free(ids[i].members);
    free(ids);
    return st;
}

static const char *kind_name(enum kv_binding_kind k)
{
    return k == KV_BIND_STORAGE ? "storage buffer" : k == KV_BIND_UNIFORM ? "uniform buffer" : "image/sampler";
}

enum kv_status kv_spirv_check(const char *what, const struct kv_spirv_iface *got,
                              uint32_t n_bindings, uint32_t required, uint32_t push_size, const char *push_doc)
{
    uint32_t seen = 0;
    for (int i = 0; i < got->n_bindings; i++) {
        uint32_t set = got->b[i].set, bnd = got->b[i].binding;
        if (set != 0)
            return kv_error(KV_EDATA, "%s: binding %u is in descriptor set %u; the stage uses set 0 only",
                            what, bnd, set);
        if (bnd >= n_bindings)
            return kv_error(KV_EDATA, "%s: declares binding %u, but the stage has %u bindings (0..%u); "
                            "see 'kverify list --abi'", what, bnd, n_bindings, n_bindings - 1);
        if (got->b[i].kind != KV_BIND_STORAGE)
            return kv_error(KV_EDATA, "%s: binding %u is a %s; the stage binds storage buffers (buffer blocks)",
                            what, bnd, kind_name(got->b[i].kind));
        seen |= 1u << bnd;
    }
    for (uint32_t b = 0; b < n_bindings; b++)
        if ((required & (1u << b)) && !(seen & (1u << b)))
            return kv_error(KV_EDATA, "%s: binding %u is missing (the stage's output); the stage has %u "
                            "storage buffers (see 'kverify list --abi')", what, b, n_bindings);
    int kinds[KV_SPIRV_MAX_PUSH];
    const int n_kinds = kv_spirv_doc_kinds(push_doc, kinds, KV_SPIRV_MAX_PUSH);
    const int m = kv_spirv_push_misfit(got, push_size, n_kinds >= 0 && 4u * (uint32_t)n_kinds == push_size ? kinds : NULL, 1);
    if (m < 0) return KV_OK;
    const uint32_t off = got->push[m].offset, size = got->push[m].size;
    if (size > push_size || off > push_size - size)
        return kv_error(KV_EDATA, "%s: push-constant member %d (%u bytes at offset %u) lies past the stage's %u bytes "
                        "(%s); see 'kverify list --abi'", what, m, size, off, push_size, push_doc ? push_doc : "");
    /* the stage's field where the member starts: the doc's (off/4)th "type name;" */
    const char *f = push_doc;
    for (uint32_t i = 0; i < off / 4 && f && strchr(f, ';'); i++) f = strchr(f, ';') + 1;
    while (f && *f == ' ') f++;
    const int flen = f && strchr(f, ';') && off % 4 == 0 ? (int)(strchr(f, ';') - f) : 0;
    return kv_error(KV_EDATA, "%s: push-constant member %d is %u bytes of %u-bit %s at offset %u, where the stage has "
                    "%.*s%s (%s); see 'kverify list --abi'", what, m, size, got->push[m].bits,
                    kv_spirv_kind_name(got->push[m].kind), off, flen, f ? f : "", flen ? "" : "32-bit fields", push_doc);
}

const char *kv_spirv_kind_name(int kind)
{
    static const char *const names[] = {"non-scalar", "float", "int", "uint", "bool"};
    return kind >= 0 && kind <= KV_SCALAR_BOOL ? names[kind] : "non-scalar";
}

int kv_spirv_doc_kinds(const char *doc, int *kinds, int max)
{
    int n = 0;
    if (!doc) return -1;
    for (const char *s = doc;;) {
        while (*s == ' ') s++;
        if (!*s) return n;
        const size_t t = strcspn(s, " ;");
        int kind = t == 4 && !strncmp(s, "uint", 4)    ? KV_SCALAR_UINT
                   : t == 3 && !strncmp(s, "int", 3)   ? KV_SCALAR_INT
                   : t == 5 && !strncmp(s, "float", 5) ? KV_SCALAR_FLOAT
                                                       : -1;
        const char *semi = strchr(s, ';');
        if (kind < 0 || !semi || n >= max) return -1;
        kinds[n++] = kind;
        s = semi + 1;
    }
}

int kv_spirv_push_misfit(const struct kv_spirv_iface *got, uint32_t push_size, const int *kinds, int sign_free)
{
    for (int m = 0; m < got->n_push; m++) {
        const uint32_t off = got->push[m].offset, size = got->push[m].size;
        if (size > push_size || off > push_size - size) return m;
        if (got->push[m].kind == KV_SCALAR_OTHER || !kinds) continue; /* a struct's fields: its range only */
        if (got->push[m].bits != 32 || off % 4 || size % 4) return m;
        for (uint32_t w = off / 4; w < (off + size) / 4; w++) {
            const int a = got->push[m].kind, b = kinds[w];
            if (a != b && !(sign_free && a != KV_SCALAR_FLOAT && b != KV_SCALAR_FLOAT)) return m;
        }
    }
    return -1;
}
