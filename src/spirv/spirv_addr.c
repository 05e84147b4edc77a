#include "spirv/spirv_addr.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spirv/spirv.h"
#include "spirv/spv.h"

enum {
    SC_UNIFORM_CONST = 0, SC_UNIFORM = 2, SC_PUSH = 9, SC_SB = 12, SC_PSB = 5349,
    CAP_PSB = 5347, CAP_INT64 = 11, AM_PSB64 = 5348,
    MEM_ALIGNED = 2, TOP_ALIGN = 16, /* a tensor's address is a multiple of 16 (kv_addr_push) */
    MAXB = KV_SPIRV_MAX_BINDINGS, MAXV = 64,
};

struct ax {
    struct kv_spv m;
    uint32_t n_bind;
    /* The buffer variables the build removes (several may alias one binding):
     * id -> 1 + their index here, 0: none. */
    int32_t *bind_of;
    int n_var;
    struct {
        uint32_t binding, block, psb; /* its block struct, and a PhysicalStorageBuffer pointer to it */
        uint8_t coherent, vol;
        uint32_t fn_ptr; /* the address the function loaded */
    } var[MAXV];
    uint32_t pc_old, P;  /* the module's push-constant variable and struct (0: none) */
    uint32_t P2, V2, pm_ptr, cb[MAXB], u64;
    int n_c64;
    uint64_t c64v[64];
    uint32_t c64id[64];
    uint32_t *aln, *pty;          /* id -> alignment (0: no address made here) and pointee type */
    size_t n_aln;
    uint32_t (*off)[3];           /* Offset decorations: struct, member, offset */
    size_t n_off, cap_off;
    struct kv_words body;
    char *err;
    size_t err_size;
};

static int fail(struct ax *x, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt), vsnprintf(x->err, x->err_size, fmt, ap), va_end(ap);
    return -1;
}

/* The instruction defining id, where it has the words its opcode's
 * operands the rewrite reads need (a type's), else NULL. */
static const uint32_t *def_of(const struct ax *x, uint32_t id)
{
    if (id >= x->m.bound || !x->m.def[id]) return NULL;
    const uint32_t *d = x->m.w + x->m.def[id], op = kv_op(d[0]), len = kv_len(d[0]);
    const uint32_t need = op == SpvOpTypePointer || op == SpvOpTypeArray || op == SpvOpTypeVector ||
                                  op == SpvOpTypeMatrix || op == SpvOpTypeInt
                              ? 4
                          : op == SpvOpTypeRuntimeArray || op == SpvOpTypeFloat ? 3
                                                                                : 2;
    return len >= need ? d : NULL;
}

/* A pointer type's storage class and pointee (0 where t is not a pointer type). */
static uint32_t pointee(const struct ax *x, uint32_t t, uint32_t *sc)
{
    const uint32_t *d = def_of(x, t);
    if (!d || kv_op(d[0]) != SpvOpTypePointer) return 0;
    if (sc) *sc = d[2];
    return d[3];
}

static int has_deco(const struct ax *x, uint32_t id, uint32_t deco)
{
    for (size_t i = 5; i < x->m.first_type; i += kv_len(x->m.w[i]))
        if (kv_op(x->m.w[i]) == SpvOpDecorate && x->m.w[i + 1] == id && x->m.w[i + 2] == deco) return 1;
    return 0;
}

static int has_member_deco(const struct ax *x, uint32_t st, uint32_t k, uint32_t deco)
{
    for (size_t i = 5; i < x->m.first_type; i += kv_len(x->m.w[i]))
        if (kv_op(x->m.w[i]) == SpvOpMemberDecorate && x->m.w[i + 1] == st && x->m.w[i + 2] == k &&
            x->m.w[i + 3] == deco)
            return 1;
    return 0;
}

/* Member k's Offset in struct st: 1 with *off set, 0 where none is given. */
static int member_offset(const struct ax *x, uint32_t st, uint32_t k, uint32_t *off)
{
    for (size_t i = 0; i < x->n_off; i++)
        if (x->off[i][0] == st && x->off[i][1] == k) return *off = x->off[i][2], 1;
    return 0;
}

/* A constant index, sign-extended where its type is signed: 1 with *v set. */
static int const_index(const struct ax *x, uint32_t id, uint64_t *v)
{
    uint32_t c;
    if (!kv_spv_const(&x->m, id, &c)) return 0;
    const uint32_t *t = def_of(x, kv_spv_type(&x->m, id));
    *v = t && t[3] ? (uint64_t)(int64_t)(int32_t)c : c;
    return 1;
}

static uint32_t get_aln(const struct ax *x, uint32_t id) { return id < x->n_aln ? x->aln[id] : 0; }

static int set_aln(struct ax *x, uint32_t id, uint32_t a, uint32_t pt)
{
    if (id >= x->n_aln) {
        size_t n = 2 * (size_t)id + 64;
        uint32_t *al = realloc(x->aln, n * sizeof *al), *p = al ? realloc(x->pty, n * sizeof *p) : NULL;
        if (al) x->aln = al;
        if (!p) return fail(x, "out of host memory");
        x->pty = p;
        memset(x->aln + x->n_aln, 0, (n - x->n_aln) * sizeof *al);
        memset(x->pty + x->n_aln, 0, (n - x->n_aln) * sizeof *p);
        x->n_aln = n;
    }
    x->aln[id] = a, x->pty[id] = pt;
    return 0;
}

/* The alignment a proves, after an offset of v bytes more (v = 0: none). */
static uint32_t min_al(uint32_t a, uint64_t v)
{
    uint64_t low = v & (~v + 1);
    return v && low < a ? (uint32_t)low : a;
}

/* Whether id is a pointer through an address that the module made itself. */
static int orig_psb(const struct ax *x, uint32_t id)
{
    uint32_t sc = 0;
    return id < x->m.bound && pointee(x, kv_spv_type(&x->m, id), &sc) && sc == SC_PSB;
}

static int addressed(const struct ax *x, uint32_t id)
{
    return get_aln(x, id) || (id < x->m.bound && (x->bind_of[id] || (x->pc_old && id == x->pc_old && x->n_bind)));
}

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

static int scan_globals(struct ax *x)
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

/* The new push block: the addresses as 64-bit words, then the module's
 * members; its variable, V2. Each buffer variable's pointer type. */
static int declare_push(struct ax *x)
{
    struct kv_spv *m = &x->m;
    uint32_t members[MAXB + KV_SPIRV_MAX_PUSH + 2], n = 0;
    const uint32_t *pd = def_of(x, x->P);
    if (pd && kv_len(pd[0]) - 2 > KV_SPIRV_MAX_PUSH)
        return fail(x, "its push constants have more than %d members", KV_SPIRV_MAX_PUSH);
    x->pm_ptr = kv_spv_ptr(m, SC_PUSH, x->u64);
    for (uint32_t b = 0; b < x->n_bind; b++) x->cb[b] = kv_spv_u32(m, b);
    for (int v = 0; v < x->n_var; v++) x->var[v].psb = kv_spv_ptr(m, SC_PSB, x->var[v].block);
    uint32_t P2 = x->P2 = kv_spv_id(m);
    members[n++] = P2;
    for (uint32_t b = 0; b < x->n_bind; b++) members[n++] = x->u64;
    for (uint32_t k = 2; pd && k < kv_len(pd[0]); k++) members[n++] = pd[k];
    kv_words_ins(&m->globals, SpvOpTypeStruct, n, members);
    x->V2 = kv_spv_id(m);
    KV_INS(&m->globals, SpvOpVariable, kv_spv_ptr(m, SC_PUSH, P2), x->V2, SC_PUSH);
    KV_INS(&m->annot, SpvOpDecorate, P2, SpvDecorationBlock);
    for (uint32_t b = 0; b < x->n_bind; b++) KV_INS(&m->annot, SpvOpMemberDecorate, P2, b, SpvDecorationOffset, 8 * b);
    /* P's member decorations, shifted, are copied with the annotations (assemble) */
    for (int v = 0; v < x->n_var; v++) {
        if (x->var[v].coherent) member_decos(x, v, SpvDecorationCoherent);
        if (x->var[v].vol) member_decos(x, v, SpvDecorationVolatile);
    }
    return 0;
}

/* ---- the functions ---- */

static void put(struct ax *x, const uint32_t *w, size_t n) { kv_words_put(&x->body, w, n); }

/* Where no rewrite follows an address: an instruction that names one is refused. */
static int unfollowed(struct ax *x, const uint32_t *w, uint32_t len, uint32_t skip)
{
    const uint32_t op = kv_op(w[0]);
    for (uint32_t k = 1; k < len; k++)
        if (k != skip && addressed(x, w[k]))
            return op == SpvOpArrayLength    ? fail(x, "it reads a buffer's length()")
                   : op == SpvOpFunctionCall ? fail(x, "it passes a buffer to a function")
                   : op == SpvOpPhi || op == SpvOpSelect
                       ? fail(x, "it chooses between pointers into buffers (a phi or a select)")
                       : fail(x, "it gives a buffer, or a pointer into one, to an instruction the address build "
                                 "cannot follow (opcode %u)", op);
    return 0;
}

/* A buffer variable's use: the address the function loaded. */
static uint32_t sub(struct ax *x, uint32_t id)
{
    return id < x->m.bound && x->bind_of[id] ? x->var[x->bind_of[id] - 1].fn_ptr : id;
}

/* The bytes of the scalars under a vector or matrix type. */
static uint32_t scalar_bytes(const struct ax *x, uint32_t t)
{
    const uint32_t *d = def_of(x, t);
    while (d && (kv_op(d[0]) == SpvOpTypeVector || kv_op(d[0]) == SpvOpTypeMatrix)) d = def_of(x, d[2]);
    return d && (kv_op(d[0]) == SpvOpTypeInt || kv_op(d[0]) == SpvOpTypeFloat) && d[2] >= 8 ? d[2] / 8 : 1;
}

/* An index as a 64-bit integer (its signedness kept), made before its use. */
static uint32_t widen(struct ax *x, uint32_t idx)
{
    const uint32_t *t = def_of(x, kv_spv_type(&x->m, idx));
    if (!t || kv_op(t[0]) != SpvOpTypeInt || t[2] >= 64) return idx;
    uint32_t id = kv_spv_id(&x->m);
    KV_INS(&x->body, t[3] ? SpvOpSConvert : SpvOpUConvert, x->u64, id, idx);
    return id;
}

/* A 64-bit constant. */
static uint32_t c64(struct ax *x, uint64_t v)
{
    for (int i = 0; i < x->n_c64; i++)
        if (x->c64v[i] == v) return x->c64id[i];
    uint32_t id = kv_spv_id(&x->m);
    KV_INS(&x->m.globals, SpvOpConstant, x->u64, id, (uint32_t)v, (uint32_t)(v >> 32));
    if (x->n_c64 < 64) x->c64v[x->n_c64] = v, x->c64id[x->n_c64++] = id;
    return id;
}

/* addr + idx * step, 64-bit, made before its use (idx widened first). */
static uint32_t add_scaled(struct ax *x, uint32_t addr, uint32_t idx, uint64_t step)
{
    uint32_t t = kv_spv_id(&x->m), sum = kv_spv_id(&x->m);
    KV_INS(&x->body, SpvOpIMul, x->u64, t, widen(x, idx), c64(x, step));
    KV_INS(&x->body, SpvOpIAdd, x->u64, sum, addr, t);
    return sum;
}

/* An access chain through an address, made as the pointer arithmetic it
 * stands for, in 64 bits: the base as an integer, plus each index times its
 * ArrayStride (widened) and each member's Offset, made a pointer again.
 * Drivers make an access chain's byte offset in 32 bits even from a 64-bit
 * index (an NVIDIA H200 wraps there at 2^32 bytes); integer arithmetic they
 * must make as written. Its result is a PhysicalStorageBuffer pointer with
 * the alignment its offsets prove. A chain into the push constants reaches
 * the member n_bind later. */
static int chain(struct ax *x, const uint32_t *w, uint32_t len)
{
    const uint32_t op = kv_op(w[0]), base = w[3];
    if (x->n_bind && x->pc_old && base == x->pc_old) {
        uint32_t out[72], k;
        if (len > 64) return fail(x, "an access chain of %u words", len);
        memcpy(out, w, len * 4);
        if (len < 5 || !kv_spv_const(&x->m, w[4], &k)) return fail(x, "it reads its push constants whole");
        out[3] = x->V2, out[4] = kv_spv_u32(&x->m, k + x->n_bind);
        return unfollowed(x, out, len, 0) || (put(x, out, len), 0);
    }
    const uint32_t b = sub(x, base);
    uint32_t a = get_aln(x, b), cur = a ? x->pty[b] : 0;
    if (!a && orig_psb(x, base)) cur = pointee(x, kv_spv_type(&x->m, base), NULL);
    if (!cur) return unfollowed(x, w, len, 0) || (put(x, w, len), 0);
    uint32_t addr = kv_spv_id(&x->m), k = 4;
    uint64_t konst = 0;
    KV_INS(&x->body, SpvOpConvertPtrToU, x->u64, addr, b);
    if (op == SpvOpPtrAccessChain || op == SpvOpInBoundsPtrAccessChain) {
        const uint32_t stride = x->m.stride[kv_spv_type(&x->m, base)];
        if (a || len < 5 || !stride) return fail(x, "it steps a pointer into a buffer (OpPtrAccessChain)");
        addr = add_scaled(x, addr, w[k++], stride);
    }
    for (; k < len; k++) {
        const uint32_t *d = def_of(x, cur), cop = d ? kv_op(d[0]) : 0;
        uint64_t c;
        uint32_t off;
        const int is_c = const_index(x, w[k], &c);
        if (addressed(x, w[k])) return fail(x, "it indexes by a pointer");
        if (cop == SpvOpTypeStruct) {
            if (!is_c || c + 2 >= kv_len(d[0])) return fail(x, "a struct member it indexes is not a constant");
            if (!member_offset(x, cur, (uint32_t)c, &off)) return fail(x, "a struct member it reaches has no Offset");
            konst += off, a = a ? min_al(a, off) : 0, cur = d[2 + c];
            continue;
        }
        uint64_t step;
        if (cop == SpvOpTypeArray || cop == SpvOpTypeRuntimeArray) step = x->m.stride[cur];
        else if (cop == SpvOpTypeVector) step = scalar_bytes(x, cur);
        else return fail(x, "it indexes into a type (opcode %u) the address build cannot follow", cop);
        if (!step) return fail(x, "an array it indexes has no ArrayStride");
        if (is_c) konst += c * step, a = a ? min_al(a, c * step) : 0;
        else addr = add_scaled(x, addr, w[k], step), a = a ? min_al(a, step) : 0;
        cur = d[2];
    }
    if (konst) {
        uint32_t sum = kv_spv_id(&x->m);
        KV_INS(&x->body, SpvOpIAdd, x->u64, sum, addr, c64(x, konst));
        addr = sum;
    }
    const uint32_t pt = pointee(x, w[1], NULL);
    KV_INS(&x->body, SpvOpConvertUToPtr, a ? kv_spv_ptr(&x->m, SC_PSB, pt) : w[1], w[2], addr);
    return a ? set_aln(x, w[2], a, pt) : 0;
}

/* A load, store or cooperative-matrix access at pointer operand pi, its
 * memory operands from mi: through an address made here, Aligned added. */
static int access(struct ax *x, const uint32_t *w, uint32_t len, uint32_t pi, uint32_t mi)
{
    uint32_t out[72], n = len;
    if (len > 64) return fail(x, "an access of %u words", len);
    memcpy(out, w, len * 4);
    out[pi] = sub(x, w[pi]);
    const uint32_t a = get_aln(x, out[pi]);
    if (unfollowed(x, w, len < mi ? len : mi, pi)) return -1; /* the memory operands are literals */
    if (a && mi > len) return fail(x, "a cooperative-matrix access without a stride");
    if (a && len == mi) {
        out[n++] = MEM_ALIGNED, out[n++] = a;
    } else if (a && !(w[mi] & MEM_ALIGNED)) { /* Aligned's literal comes first: Volatile has none */
        out[mi] = w[mi] | MEM_ALIGNED;
        memmove(out + mi + 2, out + mi + 1, (len - mi - 1) * 4);
        out[mi + 1] = a, n++;
    }
    out[0] = (n << 16) | kv_op(w[0]);
    put(x, out, n);
    return 0;
}

/* An atomic: its pointer at pi, where a buffer variable becomes its address. */
static int atomic(struct ax *x, const uint32_t *w, uint32_t len, uint32_t pi)
{
    uint32_t out[16];
    if (len > 16 || pi >= len) return fail(x, "an atomic of %u words", len);
    memcpy(out, w, len * 4);
    out[pi] = sub(x, w[pi]);
    return unfollowed(x, w, len, pi) || (put(x, out, len), 0);
}

static int is_atomic(uint32_t op)
{
    return (op >= SpvOpAtomicLoad && op <= SpvOpAtomicXor) || op == SpvOpAtomicFlagTestAndSet ||
           op == SpvOpAtomicFlagClear || op == 5614 || op == 5615 || op == 6035; /* FMin, FMax, FAdd EXT */
}

static int instruction(struct ax *x, const uint32_t *w, uint32_t len)
{
    const uint32_t op = kv_op(w[0]);
    switch (op) {
    case SpvOpAccessChain: case SpvOpInBoundsAccessChain: case SpvOpPtrAccessChain: case SpvOpInBoundsPtrAccessChain:
        return len < 4 ? fail(x, "a short access chain") : chain(x, w, len);
    case SpvOpLoad: return access(x, w, len, 3, 4);
    case SpvOpStore: return access(x, w, len, 1, 3);
    case KV_OP_COOPMAT_LOAD_KHR: return access(x, w, len, 3, 6);
    case KV_OP_COOPMAT_STORE_KHR: return access(x, w, len, 1, 5);
    case KV_OP_COOPMAT_LOAD_NV: return access(x, w, len, 3, 6);
    case KV_OP_COOPMAT_STORE_NV: return access(x, w, len, 1, 5);
    case SpvOpCopyObject:
        if (get_aln(x, sub(x, w[3]))) {
            const uint32_t p = sub(x, w[3]);
            if (set_aln(x, w[2], get_aln(x, p), x->pty[p])) return -1;
            KV_INS(&x->body, op, kv_spv_ptr(&x->m, SC_PSB, x->pty[p]), w[2], p);
            return 0;
        }
        break;
    case SpvOpExtInst: /* its instruction number is a literal */
        return unfollowed(x, w, len, 4) || (put(x, w, len), 0);
    /* the other instructions a pointer may be an operand of (Logical
     * addressing): where one names an address, refused */
    case SpvOpFunctionCall: case SpvOpArrayLength: case SpvOpPhi: case SpvOpSelect: case SpvOpCopyMemory:
    case SpvOpCopyMemorySized: case SpvOpBitcast: case SpvOpConvertPtrToU: case SpvOpVariable:
    case SpvOpReturnValue: case SpvOpPtrEqual: case SpvOpPtrNotEqual: case SpvOpPtrDiff:
        return unfollowed(x, w, len, 0) || (put(x, w, len), 0);
    default:
        if (is_atomic(op)) return atomic(x, w, len, op == SpvOpAtomicStore || op == SpvOpAtomicFlagClear ? 1 : 3);
    }
    put(x, w, len); /* no operand of it is a pointer (its literals may look like ids) */
    return 0;
}

/* Each function's addresses, loaded from the push constants after its
 * first block's variables. */
static int load_addresses(struct ax *x)
{
    for (int v = 0; v < x->n_var; v++) {
        uint32_t pp = kv_spv_id(&x->m), u = kv_spv_id(&x->m), p = kv_spv_id(&x->m);
        KV_INS(&x->body, SpvOpAccessChain, x->pm_ptr, pp, x->V2, x->cb[x->var[v].binding]);
        KV_INS(&x->body, SpvOpLoad, x->u64, u, pp);
        KV_INS(&x->body, SpvOpConvertUToPtr, x->var[v].psb, p, u);
        x->var[v].fn_ptr = p;
        if (set_aln(x, p, TOP_ALIGN, x->var[v].block)) return -1;
    }
    return 0;
}

static int rewrite_functions(struct ax *x)
{
    const uint32_t *w = x->m.w;
    int state = 0; /* 1: before the first block, 2: in its variables */
    for (size_t i = x->m.first_fn; i < x->m.n; i += kv_len(w[i])) {
        const uint32_t op = kv_op(w[i]), len = kv_len(w[i]);
        if (op == SpvOpFunction) state = 1;
        else if (state == 1 && op == SpvOpLabel) state = 3;
        else if (state == 2 && op != SpvOpVariable && op != SpvOpLine && op != SpvOpNoLine) {
            if (load_addresses(x)) return -1;
            state = 0;
        }
        if (state == 3) {
            put(x, w + i, len);
            state = 2;
            continue;
        }
        if (op == SpvOpFunction || op == SpvOpFunctionParameter || op == SpvOpFunctionEnd) {
            put(x, w + i, len);
        } else if (instruction(x, w + i, len)) {
            return -1;
        }
    }
    return x->body.oom || x->m.globals.oom || x->m.annot.oom ? fail(x, "out of host memory") : 0;
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
 * block's member decorations are copied onto the new block, n_bind later
 * (offsets 8 n_bind later); a removed buffer's BufferBlock becomes Block. */
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
            c[1] = x->P2, c[2] += x->n_bind;
            if (c[3] == SpvDecorationOffset && len >= 5) c[4] += 8 * x->n_bind;
            kv_words_put(o, c, len);
        }
    }
}

static int assemble(struct ax *x, uint32_t **out, size_t *n_out)
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

int kv_spirv_addr(const uint32_t *in, size_t n_in, uint32_t n_bind, uint32_t **out, size_t *n_out, char *err,
                  size_t err_size)
{
    struct ax x = {.n_bind = n_bind, .err = err, .err_size = err_size};
    *out = NULL, *n_out = 0;
    int rc = -1;
    if (n_bind > MAXB) return snprintf(err, err_size, "%u bindings, more than %d", n_bind, MAXB), -1;
    if (kv_spv_index(&x.m, in, n_in, err, err_size)) goto done;
    x.bind_of = calloc(x.m.bound, sizeof *x.bind_of);
    if (!x.bind_of) {
        fail(&x, "out of host memory");
        goto done;
    }
    if (scan_globals(&x)) goto done;
    x.u64 = kv_spv_u64(&x.m);
    if (n_bind && declare_push(&x)) goto done;
    if (rewrite_functions(&x) || assemble(&x, out, n_out)) goto done;
    rc = 0;
done:
    free(x.bind_of), free(x.aln), free(x.pty), free(x.off), free(x.body.w);
    kv_spv_free(&x.m);
    return rc;
}
