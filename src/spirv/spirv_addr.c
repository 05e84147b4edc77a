#include "spirv/spirv_addr.h"

#include "spirv/spirv_addr_int.h"

static uint32_t get_aln(const struct ax *x, uint32_t id) { return id < x->n_aln ? x->aln[id] : 0; }

/* id's alignment a, pointee pt and buffer variable root (1 + its index, 0: none). */
static int set_aln(struct ax *x, uint32_t id, uint32_t a, uint32_t pt, int32_t root)
{
    if (id >= x->n_aln) {
        size_t n = 2 * (size_t)id + 64;
        uint32_t *al = realloc(x->aln, n * sizeof *al), *p = al ? realloc(x->pty, n * sizeof *p) : NULL;
        int32_t *r = p ? realloc(x->root, n * sizeof *r) : NULL;
        if (al) x->aln = al;
        if (p) x->pty = p;
        if (!r) return fail(x, "out of host memory");
        x->root = r;
        memset(x->aln + x->n_aln, 0, (n - x->n_aln) * sizeof *al);
        memset(x->pty + x->n_aln, 0, (n - x->n_aln) * sizeof *p);
        memset(x->root + x->n_aln, 0, (n - x->n_aln) * sizeof *r);
        x->n_aln = n;
    }
    x->aln[id] = a, x->pty[id] = pt, x->root[id] = root;
    return 0;
}

static int32_t get_root(const struct ax *x, uint32_t id) { return id < x->n_aln ? x->root[id] : 0; }

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

/* ---- the functions ---- */

static void put(struct ax *x, const uint32_t *w, size_t n) { kv_words_put(&x->body, w, n); }

/* Where no rewrite follows an address: an instruction that names one is refused. */
static int unfollowed(struct ax *x, const uint32_t *w, uint32_t len, uint32_t skip)
{
    const uint32_t op = kv_op(w[0]);
    for (uint32_t k = 1; k < len; k++)
        if (k != skip && addressed(x, w[k]))
            return op == SpvOpFunctionCall ? fail(x, "it passes a buffer to a function")
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

/* The bytes an access through a pointer to t may touch: a scalar's, a
 * vector's, an array's of fixed length, a struct's to its last member's
 * end; 0 for a runtime array (each access through it is a chain of its
 * own, kept in range there); UINT64_MAX where the rewrite cannot tell. */
static uint64_t type_size(const struct ax *x, uint32_t t, int depth)
{
    const uint32_t *d = def_of(x, t), op = d ? kv_op(d[0]) : 0;
    uint32_t c;
    if (depth > 8 || !d) return UINT64_MAX;
    if (op == SpvOpTypeInt || op == SpvOpTypeFloat) return d[2] / 8;
    if (op == SpvOpTypeVector) return (uint64_t)d[3] * scalar_bytes(x, t);
    if (op == SpvOpTypeRuntimeArray) return 0;
    if (op == SpvOpTypeArray && x->m.stride[t] && kv_spv_const(&x->m, d[3], &c)) return (uint64_t)c * x->m.stride[t];
    if (op != SpvOpTypeStruct) return UINT64_MAX;
    uint64_t end = 0;
    for (uint32_t k = 0; k + 2 < kv_len(d[0]); k++) {
        uint32_t off;
        const uint64_t s = type_size(x, d[2 + k], depth + 1);
        if (!member_offset(x, t, k, &off) || s == UINT64_MAX) return UINT64_MAX;
        end = off + s > end ? off + s : end;
    }
    return end;
}

/* guard: *addr, a pointer into buffer variable v to a pt aligned to a, kept
 * within the variable's binding: its offset from the binding's address at
 * most the byte range (from the push constants) less pt's bytes, rounded
 * down to a. An index past the end (or below 0, as an unsigned offset)
 * lands on the binding's last words, its guard words or poisoned tail,
 * where the run sees it as on a bound binding; never past the buffer. */
static int clamp(struct ax *x, int v, uint32_t pt, uint32_t a, uint32_t *addr)
{
    struct kv_spv *m = &x->m;
    const uint64_t size = type_size(x, pt, 0);
    if (size == UINT64_MAX) return fail(x, "it reaches a type (through an address) whose bytes it cannot tell");
    const uint32_t b = kv_spv_bool(m), pp = kv_spv_id(m), rng = kv_spv_id(m), big = kv_spv_id(m), less = kv_spv_id(m);
    const uint32_t lim = kv_spv_id(m), off = kv_spv_id(m), lt = kv_spv_id(m), keep = kv_spv_id(m), out = kv_spv_id(m);
    const uint32_t lim0 = kv_spv_id(m);
    KV_INS(&x->body, SpvOpAccessChain, x->pm_ptr, pp, x->V2, x->cb[x->n_bind + x->var[v].binding]);
    KV_INS(&x->body, SpvOpLoad, x->u64, rng, pp);
    KV_INS(&x->body, SpvOpUGreaterThanEqual, b, big, rng, c64(x, size));
    KV_INS(&x->body, SpvOpISub, x->u64, less, rng, c64(x, size));
    KV_INS(&x->body, SpvOpSelect, x->u64, lim0, big, less, c64(x, 0));
    KV_INS(&x->body, SpvOpBitwiseAnd, x->u64, lim, lim0, c64(x, ~(uint64_t)(a ? a - 1 : 0)));
    KV_INS(&x->body, SpvOpISub, x->u64, off, *addr, x->var[v].fn_u);
    KV_INS(&x->body, SpvOpULessThanEqual, b, lt, off, lim);
    KV_INS(&x->body, SpvOpSelect, x->u64, keep, lt, off, lim);
    KV_INS(&x->body, SpvOpIAdd, x->u64, out, x->var[v].fn_u, keep);
    *addr = out;
    return 0;
}

/* An access chain through an address, made as the pointer arithmetic it
 * stands for, in 64 bits: the base as an integer, plus each index times its
 * ArrayStride (widened) and each member's Offset, made a pointer again.
 * Drivers make an access chain's byte offset in 32 bits even from a 64-bit
 * index (an NVIDIA H200 wraps there at 2^32 bytes); integer arithmetic they
 * must make as written. Its result is a PhysicalStorageBuffer pointer with
 * the alignment its offsets prove. A chain into the push constants reaches
 * the member n_mem later. */
static int chain(struct ax *x, const uint32_t *w, uint32_t len)
{
    const uint32_t op = kv_op(w[0]), base = w[3];
    if (x->n_bind && x->pc_old && base == x->pc_old) {
        uint32_t out[72], k;
        if (len > 64) return fail(x, "an access chain of %u words", len);
        memcpy(out, w, len * 4);
        if (len < 5 || !kv_spv_const(&x->m, w[4], &k)) return fail(x, "it reads its push constants whole");
        out[3] = x->V2, out[4] = kv_spv_u32(&x->m, k + x->n_mem);
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
    const int32_t root = a ? get_root(x, b) : 0;
    if (x->guard && root && clamp(x, root - 1, pt, a, &addr)) return -1;
    KV_INS(&x->body, SpvOpConvertUToPtr, a ? kv_spv_ptr(&x->m, SC_PSB, pt) : w[1], w[2], addr);
    return a ? set_aln(x, w[2], a, pt, root) : 0;
}

/* A buffer's length(), as a binding reads it: (its byte range - the array's
 * Offset) / its ArrayStride, the range from the push constants (0 where the
 * range is shorter than the Offset). */
static int array_length(struct ax *x, const uint32_t *w, uint32_t len)
{
    const int v = len >= 5 && w[3] < x->m.bound ? x->bind_of[w[3]] - 1 : -1;
    if (v < 0) return unfollowed(x, w, len, 0) || (put(x, w, len), 0);
    const uint32_t *bd = def_of(x, x->var[v].block), mi = w[4];
    uint32_t off;
    if (!bd || mi + 2 >= kv_len(bd[0]) || !member_offset(x, x->var[v].block, mi, &off) || !x->m.stride[bd[2 + mi]])
        return fail(x, "it reads the length() of an array without an Offset or an ArrayStride");
    struct kv_spv *m = &x->m;
    const uint32_t pp = kv_spv_id(m), r = kv_spv_id(m), gt = kv_spv_id(m), d = kv_spv_id(m), z = kv_spv_id(m);
    const uint32_t q = kv_spv_id(m);
    KV_INS(&x->body, SpvOpAccessChain, x->pm_ptr, pp, x->V2, x->cb[x->n_bind + x->var[v].binding]);
    KV_INS(&x->body, SpvOpLoad, x->u64, r, pp);
    KV_INS(&x->body, SpvOpUGreaterThan, kv_spv_bool(m), gt, r, c64(x, off));
    KV_INS(&x->body, SpvOpISub, x->u64, d, r, c64(x, off));
    KV_INS(&x->body, SpvOpSelect, x->u64, z, gt, d, c64(x, 0));
    KV_INS(&x->body, SpvOpUDiv, x->u64, q, z, c64(x, x->m.stride[bd[2 + mi]]));
    KV_INS(&x->body, SpvOpUConvert, w[1], w[2], q);
    return 0;
}

/* Whether a function reads a removed buffer's length() (x->lengths). */
static void find_lengths(struct ax *x)
{
    for (size_t i = x->m.first_fn; i < x->m.n; i += kv_len(x->m.w[i]))
        x->lengths |= kv_op(x->m.w[i]) == SpvOpArrayLength && kv_len(x->m.w[i]) >= 5 &&
                      x->m.w[i + 3] < x->m.bound && x->bind_of[x->m.w[i + 3]];
    x->lengths |= x->guard && x->n_bind; /* the ranges the guard keeps accesses within */
    x->n_mem = x->n_bind * (x->lengths ? 2u : 1u);
}

/* A load, store or cooperative-matrix access at pointer operand pi, its
 * memory operands from mi: through an address made here, Aligned added. */
static int access(struct ax *x, const uint32_t *w, uint32_t len, uint32_t pi, uint32_t mi)
{
    uint32_t out[72], n = len;
    if (len > 64 || len <= pi) return fail(x, "an access of %u words", len);
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
        if (len >= 4 && get_aln(x, sub(x, w[3]))) {
            const uint32_t p = sub(x, w[3]);
            if (set_aln(x, w[2], get_aln(x, p), x->pty[p], get_root(x, p))) return -1;
            KV_INS(&x->body, op, kv_spv_ptr(&x->m, SC_PSB, x->pty[p]), w[2], p);
            return 0;
        }
        break;
    case SpvOpExtInst: /* its instruction number is a literal */
        return unfollowed(x, w, len, 4) || (put(x, w, len), 0);
    /* the other instructions a pointer may be an operand of (Logical
     * addressing): where one names an address, refused */
    case SpvOpArrayLength: return array_length(x, w, len);
    case SpvOpFunctionCall: case SpvOpPhi: case SpvOpSelect: case SpvOpCopyMemory:
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
        x->var[v].fn_ptr = p, x->var[v].fn_u = u;
        if (set_aln(x, p, TOP_ALIGN, x->var[v].block, v + 1)) return -1;
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

int kv_spirv_addr(const uint32_t *in, size_t n_in, uint32_t n_bind, int guard, uint32_t **out, size_t *n_out,
                  int *lengths, char *err, size_t err_size)
{
    struct ax x = {.n_bind = n_bind, .guard = guard, .err = err, .err_size = err_size};
    *out = NULL, *n_out = 0;
    int rc = -1;
    if (n_bind > MAXB) return snprintf(err, err_size, "%u bindings, more than %d", n_bind, MAXB), -1;
    if (kv_spv_index(&x.m, in, n_in, err, err_size)) goto done;
    x.bind_of = calloc(x.m.bound, sizeof *x.bind_of);
    if (!x.bind_of) {
        fail(&x, "out of host memory");
        goto done;
    }
    if (kv_ax_scan_globals(&x)) goto done;
    x.u64 = kv_spv_u64(&x.m);
    find_lengths(&x);
    if (n_bind && kv_ax_declare_push(&x)) goto done;
    if (rewrite_functions(&x) || kv_ax_assemble(&x, out, n_out)) goto done;
    rc = 0;
    if (lengths) *lengths = x.lengths;
done:
    free(x.bind_of), free(x.aln), free(x.pty), free(x.root), free(x.off), free(x.body.w);
    kv_spv_free(&x.m);
    return rc;
}
