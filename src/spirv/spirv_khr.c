#include "spirv/spirv_khr.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPV_ENABLE_UTILITY_CODE
#include <spirv/unified1/spirv.h>
/* The header's helper is a C99 inline definition: this unit provides it. */
extern void SpvHasResultAndType(SpvOp opcode, bool *hasResult, bool *hasResultType);

/* SPV_KHR_cooperative_matrix and SPV_KHR_bfloat16, newer than the headers. */
enum {
    OP_TYPE_COOPMAT_KHR = 4456, OP_COOPMAT_LOAD_KHR = 4457, OP_COOPMAT_STORE_KHR = 4458,
    OP_COOPMAT_MULADD_KHR = 4459, OP_COOPMAT_LENGTH_KHR = 4460,
    CAP_COOPMAT_KHR = 6022, CAP_BF16_TYPE = 5116, CAP_BF16_COOPMAT = 5118,
    FP_ENCODING_BF16 = 0, USE_A = 0, USE_B = 1, USE_ACC = 2, USE_NONE = 3,
};

struct mod {
    const uint32_t *w;
    size_t n;
    uint32_t bound;
    uint32_t *def;  /* result id -> word offset of its defining instruction (0: none) */
    uint8_t *use;   /* coopmat type id -> USE_* (bit mask of 1 << use) */
    uint32_t *twin;     /* coopmat type id -> its B twin (0: none) */
    uint32_t *twin_ptr; /* coopmat type id -> function pointer to its B twin */
    uint8_t *bval, *bptr; /* ids retyped to the B twin / a pointer to it */
    char *err;
    size_t err_size;
};

static int fail(struct mod *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err, m->err_size, fmt, ap);
    va_end(ap);
    return -1;
}

static uint32_t op_of(uint32_t word) { return word & 0xffffu; }
static uint32_t len_of(uint32_t word) { return word >> 16; }

/* Result type of id (0 when it has none). */
static uint32_t type_of(const struct mod *m, uint32_t id)
{
    if (id >= m->bound || !m->def[id]) return 0;
    bool res, rt;
    SpvHasResultAndType((SpvOp)op_of(m->w[m->def[id]]), &res, &rt);
    return rt ? m->w[m->def[id] + 1] : 0;
}

/* The fewest words of an instruction whose operands the rewrite reads. */
static uint32_t min_len(uint32_t op, bool res, bool rt)
{
    switch (op) {
    case SpvOpCapability: case SpvOpExtension: return 2;
    case SpvOpTypeFloat: case SpvOpStore: return 3;
    case SpvOpTypeInt: case SpvOpTypePointer: case SpvOpLoad: case SpvOpVariable: return 4;
    case SpvOpCooperativeMatrixStoreNV: return 5;
    case SpvOpTypeCooperativeMatrixNV: case SpvOpCooperativeMatrixLoadNV: case SpvOpCooperativeMatrixMulAddNV:
        return 6;
    default: return res ? (rt ? 3 : 2) : 1;
    }
}

static int index_module(struct mod *m)
{
    for (size_t i = 5; i < m->n;) {
        uint32_t op = op_of(m->w[i]), len = len_of(m->w[i]);
        bool res, rt;
        SpvHasResultAndType((SpvOp)op, &res, &rt);
        if (len < min_len(op, res, rt) || i + len > m->n) return fail(m, "truncated instruction at word %zu", i);
        if (res) {
            uint32_t id = m->w[i + (rt ? 2 : 1)], type = rt ? m->w[i + 1] : 0;
            if (id >= m->bound || type >= m->bound)
                return fail(m, "id %u beyond the bound %u", id >= m->bound ? id : type, m->bound);
            m->def[id] = (uint32_t)i;
        }
        i += len;
    }
    return 0;
}

/* Uses from the multiply-adds: A, B and accumulator types. A type used as
 * both A and B gets a B twin: the values that reach B operands ("B values")
 * and the function variables that carry them ("B pointers") are retyped. A B
 * value must come from a load (of a matrix, or of a B pointer) and go only to
 * B operands and B pointers; a B pointer must be a function variable used
 * only by loads and stores. */
/* Whether word k (1-based after the opcode word) of an instruction of this
 * opcode is a literal rather than an id, for the opcodes whose literals
 * could equal an id of a B operand (a constant 2048 beside a %2048). */
static bool literal_word(uint32_t op, uint32_t k)
{
    switch (op) {
    case SpvOpSource: case SpvOpSourceExtension: case SpvOpName: case SpvOpMemberName: case SpvOpString:
    case SpvOpLine: case SpvOpExtension: case SpvOpExtInstImport: case SpvOpMemoryModel: case SpvOpEntryPoint:
    case SpvOpCapability: case SpvOpDecorate: case SpvOpMemberDecorate: case SpvOpTypeInt: case SpvOpTypeFloat:
        return true; /* no B operand can be named here */
    case SpvOpExecutionMode: return k >= 2;
    case SpvOpTypeVector: return k >= 3;
    case SpvOpConstant: case SpvOpSpecConstant: return k >= 3;
    case SpvOpExtInst: return k == 4;
    case SpvOpVectorShuffle: return k >= 5;
    case SpvOpCompositeExtract: return k >= 4;
    case SpvOpCompositeInsert: return k >= 5;
    case SpvOpLoad: return k >= 4;
    case SpvOpStore: case SpvOpCopyMemory: return k >= 3;
    case SpvOpCooperativeMatrixLoadNV: return k >= 6;
    case SpvOpCooperativeMatrixStoreNV: return k >= 5;
    case SpvOpLoopMerge: return k >= 3;
    case SpvOpSelectionMerge: return k >= 2;
    case SpvOpBranchConditional: return k >= 4;
    case SpvOpSwitch: return k >= 3 && (k - 3) % 2 == 0;
    default: return false;
    }
}

static int find_uses(struct mod *m)
{
    for (size_t i = 5; i < m->n; i += len_of(m->w[i])) {
        if (op_of(m->w[i]) != SpvOpCooperativeMatrixMulAddNV) continue;
        const uint32_t *in = m->w + i;
        uint32_t ta = type_of(m, in[3]), tb = type_of(m, in[4]), tc = type_of(m, in[5]);
        if (!ta || !tb || !tc) return fail(m, "a multiply-add operand without a type");
        m->use[ta] |= 1u << USE_A;
        m->use[tb] |= 1u << USE_B;
        m->use[tc] |= 1u << USE_ACC;
        m->use[in[1]] |= 1u << USE_ACC;
    }
    for (uint32_t t = 0; t < m->bound; t++) {
        unsigned u = m->use[t];
        if ((u & (1u << USE_ACC)) && (u & ~(1u << USE_ACC)))
            return fail(m, "cooperative matrix type %%%u is both an accumulator and an operand", t);
        if ((u & (1u << USE_A)) && (u & (1u << USE_B))) {
            m->twin[t] = m->bound++;
            m->twin_ptr[t] = m->bound++;
        }
    }
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t i = 5; i < m->n; i += len_of(m->w[i])) {
            const uint32_t *in = m->w + i;
            uint32_t op = op_of(in[0]), v = 0, ptr = 0;
            if (op == SpvOpCooperativeMatrixMulAddNV && m->twin[type_of(m, in[4])] && !m->bval[in[4]])
                m->bval[in[4]] = 1, changed = 1;
            if (op == SpvOpStore) ptr = in[1], v = in[2];
            if (op == SpvOpLoad) ptr = in[3], v = in[2];
            if (!ptr || ptr >= m->bound || v >= m->bound || m->bptr[ptr] == m->bval[v]) continue;
            m->bptr[ptr] = m->bval[v] = 1, changed = 1;
        }
    }
    for (uint32_t id = 0; id < m->bound; id++) {
        uint32_t op = m->def[id] ? op_of(m->w[m->def[id]]) : 0;
        if (m->bval[id] && op != SpvOpCooperativeMatrixLoadNV && op != SpvOpLoad)
            return fail(m, "B operand %%%u of a type also used as A is not loaded (opcode %u)", id, op);
        if (m->bptr[id] && (op != SpvOpVariable || m->w[m->def[id] + 3] != SpvStorageClassFunction))
            return fail(m, "B operand pointer %%%u is not a function variable", id);
    }
    for (size_t i = 5; i < m->n; i += len_of(m->w[i])) {
        const uint32_t *in = m->w + i;
        uint32_t op = op_of(in[0]), len = len_of(in[0]);
        for (uint32_t k = 1; k < len; k++) {
            uint32_t id = in[k];
            if (literal_word(op, k) || id >= m->bound || m->def[id] == i || !(m->bval[id] || m->bptr[id])) continue;
            if (m->bval[id] && ((op == SpvOpCooperativeMatrixMulAddNV && k == 4) ||
                                (op == SpvOpStore && k == 2 && in[1] < m->bound && m->bptr[in[1]])))
                continue;
            if (m->bptr[id] && ((op == SpvOpLoad && k == 3) || (op == SpvOpStore && k == 1))) continue;
            return fail(m, "%%%u carries B operands of a type also used as A but is used otherwise (opcode %u)",
                        id, op);
        }
    }
    return 0;
}

struct out {
    uint32_t *w;
    size_t n, cap;
};

static int put(struct out *o, const uint32_t *w, size_t n)
{
    if (o->n + n > o->cap) {
        size_t cap = (o->cap + n) * 2;
        uint32_t *p = realloc(o->w, cap * sizeof *p);
        if (!p) return -1;
        o->w = p, o->cap = cap;
    }
    memcpy(o->w + o->n, w, n * sizeof *w);
    o->n += n;
    return 0;
}

static int put_op(struct out *o, uint32_t op, const uint32_t *operands, uint32_t n)
{
    uint32_t head = ((n + 1) << 16) | op;
    return put(o, &head, 1) || put(o, operands, n);
}

static int put_string_op(struct out *o, uint32_t op, const char *s)
{
    uint32_t words[16] = {0};
    size_t len = strlen(s), n = len / 4 + 1;
    if (n > 16) return -1;
    memcpy(words, s, len);
    return put_op(o, op, words, (uint32_t)n);
}

/* The B twin pointer for a function pointer type to a twinned matrix type. */
static uint32_t twin_ptr_of(const struct mod *m, uint32_t ptr_type)
{
    if (ptr_type >= m->bound || !m->def[ptr_type]) return 0;
    const uint32_t *d = m->w + m->def[ptr_type];
    if (op_of(d[0]) != SpvOpTypePointer || d[2] != SpvStorageClassFunction || d[3] >= m->bound) return 0;
    return m->twin_ptr[d[3]];
}

/* The layout constant for a column-major flag: %true -> ColumnMajor. */
static int layout_of(struct mod *m, uint32_t flag, const uint32_t layout_ids[2], uint32_t *id)
{
    uint32_t op = flag < m->bound && m->def[flag] ? op_of(m->w[m->def[flag]]) : 0;
    *id = 0; /* set on failure too */
    if (op != SpvOpConstantTrue && op != SpvOpConstantFalse)
        return fail(m, "column-major flag %%%u is not a constant", flag);
    *id = layout_ids[op == SpvOpConstantTrue];
    return 0;
}

/* An NV matrix type as a KHR one with its use (and its B twin, with the
 * twin's pointer type); the use and layout constants before the first.
 * 0 done, 1 out of memory, -1 failed (message set). */
static int coopmat_type(struct mod *m, const uint32_t *in, const uint32_t consts[4], uint32_t uint_type,
                        uint32_t *const_done, struct out *o)
{
    int r = 0;
    if (!*const_done) {
        for (uint32_t k = 0; k < 3 && !r; k++) {
            uint32_t ops[3] = {uint_type, consts[k], k};
            r = put_op(o, SpvOpConstant, ops, 3);
        }
        *const_done = 1;
    }
    unsigned u = m->use[in[1]];
    uint32_t use = (u & (1u << USE_ACC)) ? USE_ACC : (u & (1u << USE_A)) ? USE_A : (u & (1u << USE_B)) ? USE_B : USE_NONE;
    if (use == USE_NONE) return fail(m, "cooperative matrix type %%%u is in no multiply-add", in[1]);
    uint32_t ops[6] = {in[1], in[2], in[3], in[4], in[5], consts[use]};
    if (!r) r = put_op(o, OP_TYPE_COOPMAT_KHR, ops, 6);
    if (!r && m->twin[in[1]]) {
        ops[0] = m->twin[in[1]], ops[5] = consts[USE_B];
        uint32_t ptr[3] = {m->twin_ptr[in[1]], SpvStorageClassFunction, m->twin[in[1]]};
        r = put_op(o, OP_TYPE_COOPMAT_KHR, ops, 6) || put_op(o, SpvOpTypePointer, ptr, 3);
    }
    return r ? 1 : 0;
}

/* An NV matrix load or store as a KHR one: the column-major flag becomes a
 * layout constant, a load feeding B operands gets the twin type. */
static int coopmat_access(struct mod *m, uint32_t op, const uint32_t *in, uint32_t len, const uint32_t consts[4],
                          struct out *o)
{
    uint32_t ops[16], lay;
    if (op == SpvOpCooperativeMatrixLoadNV) { /* type result pointer stride colmajor [access] */
        if (len > 14 || layout_of(m, in[5], consts, &lay)) return len > 14 ? fail(m, "long load") : -1;
        ops[0] = m->bval[in[2]] ? m->twin[in[1]] : in[1], ops[1] = in[2], ops[2] = in[3];
        ops[3] = lay, ops[4] = in[4];
        for (uint32_t k = 6; k < len; k++) ops[k - 1] = in[k];
        return put_op(o, OP_COOPMAT_LOAD_KHR, ops, len - 1) ? 1 : 0;
    }
    /* pointer object stride colmajor [access] */
    if (len > 14 || layout_of(m, in[4], consts, &lay)) return len > 14 ? fail(m, "long store") : -1;
    ops[0] = in[1], ops[1] = in[2], ops[2] = lay, ops[3] = in[3];
    for (uint32_t k = 5; k < len; k++) ops[k - 1] = in[k];
    return put_op(o, OP_COOPMAT_STORE_KHR, ops, len - 1) ? 1 : 0;
}

static int rewrite(struct mod *m, int bf16, struct out *o)
{
    uint32_t uint_type = 0, consts[4] = {0}, const_done = 0;
    for (size_t i = 5; i < m->n; i += len_of(m->w[i]))
        if (op_of(m->w[i]) == SpvOpTypeInt && m->w[i + 2] == 32 && m->w[i + 3] == 0) uint_type = m->w[i + 1];
    if (!uint_type) return fail(m, "no 32-bit unsigned integer type for the use and layout constants");
    for (int k = 0; k < 3; k++) consts[k] = m->bound++; /* 0, 1, 2: uses and layouts */
    uint32_t header[5] = {m->w[0], m->w[1], m->w[2], m->bound, m->w[4]};
    if (put(o, header, 5)) return fail(m, "out of memory");
    int r = 0;
    for (size_t i = 5; i < m->n && !r; i += len_of(m->w[i])) {
        const uint32_t *in = m->w + i;
        uint32_t op = op_of(in[0]), len = len_of(in[0]);
        switch (op) {
        case SpvOpCapability:
            if (in[1] == SpvCapabilityCooperativeMatrixNV) {
                uint32_t caps[3] = {CAP_COOPMAT_KHR, CAP_BF16_TYPE, CAP_BF16_COOPMAT};
                for (int k = 0; k < (bf16 ? 3 : 1) && !r; k++) r = put_op(o, SpvOpCapability, &caps[k], 1);
            } else if (!(bf16 && in[1] == SpvCapabilityFloat16)) {
                r = put(o, in, len);
            }
            break;
        case SpvOpExtension:
            if (strncmp((const char *)(in + 1), "SPV_NV_cooperative_matrix", (len - 1) * 4) == 0) {
                r = put_string_op(o, SpvOpExtension, "SPV_KHR_cooperative_matrix");
                if (!r && bf16) r = put_string_op(o, SpvOpExtension, "SPV_KHR_bfloat16");
            } else {
                r = put(o, in, len);
            }
            break;
        case SpvOpTypeFloat:
            if (bf16 && in[2] == 16) {
                uint32_t ops[3] = {in[1], 16, FP_ENCODING_BF16};
                r = put_op(o, SpvOpTypeFloat, ops, 3);
            } else {
                r = put(o, in, len);
            }
            break;
        case SpvOpTypeCooperativeMatrixNV:
            if ((r = coopmat_type(m, in, consts, uint_type, &const_done, o)) < 0) return -1;
            break;
        case SpvOpCooperativeMatrixLoadNV:
        case SpvOpCooperativeMatrixStoreNV:
            if ((r = coopmat_access(m, op, in, len, consts, o)) < 0) return -1;
            break;
        case SpvOpCooperativeMatrixMulAddNV:
            r = put_op(o, OP_COOPMAT_MULADD_KHR, in + 1, len - 1);
            break;
        case SpvOpLoad: /* type result pointer [access] */
        case SpvOpVariable: { /* type result class [init] */
            uint32_t ops[16];
            if (len > 16) return fail(m, "long instruction");
            memcpy(ops, in + 1, (len - 1) * sizeof *ops);
            if (op == SpvOpLoad && m->bval[in[2]]) ops[0] = m->twin[in[1]];
            if (op == SpvOpVariable && m->bptr[in[2]]) ops[0] = twin_ptr_of(m, in[1]);
            if (!ops[0]) return fail(m, "%%%u: no B twin for its type", in[2]);
            r = put_op(o, op, ops, len - 1);
            break;
        }
        case SpvOpCooperativeMatrixLengthNV:
            r = put_op(o, OP_COOPMAT_LENGTH_KHR, in + 1, len - 1);
            break;
        default:
            r = put(o, in, len);
        }
    }
    return r ? fail(m, "out of memory") : 0;
}

int kv_spirv_nv_to_khr(const uint32_t *in, size_t n_in, int bf16, uint32_t **out, size_t *n_out, char *err,
                       size_t err_size)
{
    struct mod m = {.w = in, .n = n_in, .err = err, .err_size = err_size};
    struct out o = {0};
    *out = NULL, *n_out = 0;
    if (n_in < 5 || in[0] != SpvMagicNumber || in[3] > (1u << 22)) return fail(&m, "not a SPIR-V module");
    m.bound = in[3];
    size_t cap = (size_t)m.bound * 3 + 4; /* room for the twins, their pointers and constants */
    m.def = calloc(cap, sizeof *m.def);
    m.use = calloc(cap, 1);
    m.twin = calloc(cap, sizeof *m.twin);
    m.twin_ptr = calloc(cap, sizeof *m.twin_ptr);
    m.bval = calloc(cap, 1);
    m.bptr = calloc(cap, 1);
    int r = !m.def || !m.use || !m.twin || !m.twin_ptr || !m.bval || !m.bptr ? fail(&m, "out of memory") : 0;
    if (!r) r = index_module(&m);
    if (!r) r = find_uses(&m);
    if (!r) r = rewrite(&m, bf16, &o);
    free(m.def), free(m.use), free(m.twin), free(m.twin_ptr), free(m.bval), free(m.bptr);
    if (r) {
        free(o.w);
        return -1;
    }
    *out = o.w, *n_out = o.n;
    return 0;
}
