#include "spirv/spv.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void kv_words_put(struct kv_words *b, const uint32_t *w, size_t n)
{
    if (b->oom || !n) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 1024;
        while (cap < b->n + n) cap *= 2;
        uint32_t *p = realloc(b->w, cap * sizeof *p);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->w = p;
        b->cap = cap;
    }
    memcpy(b->w + b->n, w, n * sizeof *w);
    b->n += n;
}

void kv_words_put_rolled(struct kv_words *b, const uint32_t *w)
{
    const size_t n = kv_len(w[0]);
    kv_words_put(b, w, n);
    if (!b->oom && n > 3 && kv_op(w[0]) == SpvOpLoopMerge) b->w[b->n - n + 3] &= ~(uint32_t)SpvLoopControlUnrollMask;
}

void kv_words_ins(struct kv_words *b, uint32_t op, size_t n, const uint32_t *args)
{
    uint32_t head = (uint32_t)((n + 1) << 16) | op;
    kv_words_put(b, &head, 1);
    kv_words_put(b, args, n);
}

size_t kv_words_str(uint32_t *out, size_t max, const char *s)
{
    size_t len = strlen(s), n = len / 4 + 1;
    if (n > max) return 0;
    memset(out, 0, n * 4);
    memcpy(out, s, len);
    return n;
}

static int fail(char *err, size_t size, const char *msg, size_t at)
{
    snprintf(err, size, "%s at word %zu", msg, at);
    return -1;
}

static int is_global_decl(uint32_t op)
{
    return (op >= SpvOpTypeVoid && op <= SpvOpTypeForwardPointer) || (op >= SpvOpConstantTrue && op <= SpvOpSpecConstantOp) ||
           op == SpvOpVariable || op == SpvOpUndef || op == 4456 /* OpTypeCooperativeMatrixKHR */ ||
           op == SpvOpTypeCooperativeMatrixNV;
}

static void decoration(struct kv_spv *m, size_t i, uint32_t len)
{
    uint32_t id = m->w[i + 1], d = m->w[i + 2], v = len > 3 ? m->w[i + 3] : 0;
    if (id >= m->bound) return;
    if (d == SpvDecorationBinding) m->binding[id] = (int32_t)v;
    else if (d == SpvDecorationDescriptorSet) m->set[id] = (int32_t)v;
    else if (d == SpvDecorationArrayStride) m->stride[id] = v;
    else if (d == SpvDecorationBuiltIn) m->builtin[id] = (int32_t)v + 1;
    else if (d == SpvDecorationBlock || d == SpvDecorationBufferBlock) m->block[id] = 1;
}

static void note_section(struct kv_spv *m, size_t i, uint32_t op)
{
    if (op == SpvOpCapability || op == SpvOpExtension) m->after_ext = i + kv_len(m->w[i]);
    if (op == SpvOpEntryPoint && m->w[i + 1] == SpvExecutionModelGLCompute && !m->entry) {
        m->entry = i;
        m->entry_fn = m->w[i + 2];
    }
    if (op == SpvOpMemoryModel && kv_len(m->w[i]) >= 3) m->vulkan_mm = m->w[i + 2] == SpvMemoryModelVulkan;
    if (!m->first_type && is_global_decl(op)) m->first_type = i;
    if (!m->first_fn && op == SpvOpFunction) m->first_fn = i;
    if (op == SpvOpName && m->w[i + 1] < m->bound) m->name[m->w[i + 1]] = (uint32_t)i;
    if (op == SpvOpString && m->w[i + 1] < m->bound) m->str[m->w[i + 1]] = (uint32_t)i;
    if (op == SpvOpDecorate && kv_len(m->w[i]) >= 3) decoration(m, i, kv_len(m->w[i]));
    if (op == SpvOpMemberDecorate && kv_len(m->w[i]) >= 5 && m->w[i + 3] == SpvDecorationBuiltIn &&
        m->w[i + 1] < m->bound)
        m->builtin[m->w[i + 1]] = -1; /* a block of built-ins: none is ours to reuse */
}

int kv_spv_index(struct kv_spv *m, const uint32_t *w, size_t n, char *err, size_t err_size)
{
    memset(m, 0, sizeof *m);
    if (n < 5 || w[0] != SpvMagicNumber) return fail(err, err_size, "not SPIR-V (no magic number)", 0);
    m->w = w;
    m->n = n;
    m->version = w[1];
    m->bound = m->next = w[3];
    if (m->bound > (1u << 22)) return fail(err, err_size, "id bound too large", 3);
    size_t b = m->bound;
    m->def = calloc(b, sizeof *m->def);
    m->name = calloc(b, sizeof *m->name);
    m->binding = malloc(b * sizeof *m->binding);
    m->set = malloc(b * sizeof *m->set);
    m->stride = calloc(b, sizeof *m->stride);
    m->builtin = calloc(b, sizeof *m->builtin);
    m->block = calloc(b, 1);
    m->str = calloc(b, sizeof *m->str);
    if (!m->def || !m->name || !m->binding || !m->set || !m->stride || !m->builtin || !m->block || !m->str)
        return fail(err, err_size, "out of host memory", 0);
    for (size_t i = 0; i < b; i++) m->binding[i] = m->set[i] = -1;
    for (size_t i = 5; i < n;) {
        uint32_t op = kv_op(w[i]), len = kv_len(w[i]);
        if (len == 0 || i + len > n) return fail(err, err_size, "truncated instruction", i);
        bool res, rt;
        kv_spv_result(op, &res, &rt);
        if (res) {
            size_t at = i + (rt ? 2 : 1);
            if (at >= i + len || w[at] >= b) return fail(err, err_size, "result id beyond the bound", i);
            m->def[w[at]] = (uint32_t)i;
        }
        note_section(m, i, op);
        i += len;
    }
    if (!m->entry) return fail(err, err_size, "no GLCompute entry point", 0);
    if (!m->first_fn) return fail(err, err_size, "no function", 0);
    if (!m->first_type) m->first_type = m->first_fn;
    if (!m->after_ext) return fail(err, err_size, "no capability", 0);
    return 0;
}

void kv_spv_free(struct kv_spv *m)
{
    free(m->def), free(m->name), free(m->binding), free(m->set), free(m->stride), free(m->builtin);
    free(m->block), free(m->str), free(m->globals.w), free(m->annot.w);
    memset(m, 0, sizeof *m);
}

uint32_t kv_spv_op(const struct kv_spv *m, uint32_t id)
{
    return id < m->bound && m->def[id] ? kv_op(m->w[m->def[id]]) : 0;
}

uint32_t kv_spv_type(const struct kv_spv *m, uint32_t id)
{
    if (id >= m->bound || !m->def[id]) return 0;
    bool res, rt;
    kv_spv_result(kv_op(m->w[m->def[id]]), &res, &rt);
    return rt ? m->w[m->def[id] + 1] : 0;
}

int kv_spv_const(const struct kv_spv *m, uint32_t id, uint32_t *v)
{
    if (kv_spv_op(m, id) != SpvOpConstant) return 0;
    uint32_t t = m->w[m->def[id] + 1];
    if (kv_spv_op(m, t) != SpvOpTypeInt || m->w[m->def[t] + 2] != 32) return 0;
    *v = m->w[m->def[id] + 3];
    return 1;
}

uint32_t kv_spv_units(const struct kv_spv *m, uint32_t type)
{
    uint32_t op = kv_spv_op(m, type), len;
    const uint32_t *d = m->w + (op ? m->def[type] : 0);
    switch (op) {
    case SpvOpTypeInt: case SpvOpTypeFloat: case SpvOpTypeBool: return 1;
    case SpvOpTypeVector: return d[3];
    case SpvOpTypeMatrix: return d[3] * kv_spv_units(m, d[2]);
    case SpvOpTypeArray: {
        uint32_t n;
        if (!kv_spv_const(m, d[3], &n)) return 0;
        uint64_t u = (uint64_t)n * kv_spv_units(m, d[2]);
        return u < (1u << 24) ? (uint32_t)u : 0;
    }
    case SpvOpTypeStruct: {
        uint64_t u = 0;
        len = kv_len(d[0]);
        for (uint32_t i = 2; i < len; i++) {
            uint32_t e = kv_spv_units(m, d[i]);
            if (!e) return 0;
            u += e;
        }
        return u < (1u << 24) ? (uint32_t)u : 0;
    }
    default: return 0;
    }
}

const char *kv_spv_name(const struct kv_spv *m, uint32_t id)
{
    if (id >= m->bound || !m->name[id]) return "";
    return (const char *)(m->w + m->name[id] + 2);
}

uint32_t kv_spv_id(struct kv_spv *m) { return m->next++; }

/* The first instruction of the module with opcode op and these operands after its result id. */
static uint32_t find_in(const uint32_t *w, size_t from, size_t to, uint32_t op, size_t n, const uint32_t *ops)
{
    for (size_t i = from; i < to; i += kv_len(w[i]))
        if (kv_op(w[i]) == op && kv_len(w[i]) == n + 2 && (!n || !memcmp(w + i + 2, ops, n * 4))) return w[i + 1];
    return 0;
}

/* The module's type (or one declared here) with these operands. */
static uint32_t find_type(const struct kv_spv *m, uint32_t op, size_t n, const uint32_t *ops)
{
    uint32_t id = find_in(m->w, 5, m->first_fn, op, n, ops);
    return id ? id : find_in(m->globals.w, 0, m->globals.n, op, n, ops);
}

static uint32_t type(struct kv_spv *m, uint32_t *cache, uint32_t op, size_t n, const uint32_t *ops)
{
    if (*cache) return *cache;
    *cache = find_type(m, op, n, ops);
    if (*cache) return *cache;
    uint32_t args[8] = {*cache = kv_spv_id(m)};
    if (n) memcpy(args + 1, ops, n * 4);
    kv_words_ins(&m->globals, op, n + 1, args);
    return *cache;
}

uint32_t kv_spv_void(struct kv_spv *m) { return type(m, &m->t_void, SpvOpTypeVoid, 0, NULL); }
uint32_t kv_spv_bool(struct kv_spv *m) { return type(m, &m->t_bool, SpvOpTypeBool, 0, NULL); }
uint32_t kv_spv_uint(struct kv_spv *m) { return type(m, &m->t_uint, SpvOpTypeInt, 2, (uint32_t[]){32, 0}); }
uint32_t kv_spv_u64(struct kv_spv *m) { return type(m, &m->t_u64, SpvOpTypeInt, 2, (uint32_t[]){64, 0}); }
uint32_t kv_spv_uvec3(struct kv_spv *m)
{
    uint32_t u = kv_spv_uint(m);
    return type(m, &m->t_uvec3, SpvOpTypeVector, 2, (uint32_t[]){u, 3});
}

uint32_t kv_spv_fn(struct kv_spv *m, uint32_t ret, int n, const uint32_t *params)
{
    uint32_t ops[8] = {ret}, id = 0;
    if (n) memcpy(ops + 1, params, (size_t)n * 4);
    return type(m, &id, SpvOpTypeFunction, (size_t)n + 1, ops);
}

uint32_t kv_spv_ptr(struct kv_spv *m, uint32_t sclass, uint32_t t)
{
    for (int i = 0; i < m->n_ptr; i++)
        if (m->pkey[i][0] == sclass && m->pkey[i][1] == t) return m->pid[i];
    uint32_t id = kv_spv_id(m);
    KV_INS(&m->globals, SpvOpTypePointer, id, sclass, t);
    if (m->n_ptr < 64) m->pkey[m->n_ptr][0] = sclass, m->pkey[m->n_ptr][1] = t, m->pid[m->n_ptr++] = id;
    return id;
}

uint32_t kv_spv_u32(struct kv_spv *m, uint32_t value)
{
    for (int i = 0; i < m->n_const; i++)
        if (m->cval[i] == value) return m->cid[i];
    uint32_t id = kv_spv_id(m), u = kv_spv_uint(m);
    KV_INS(&m->globals, SpvOpConstant, u, id, value);
    if (m->n_const < 512) m->cval[m->n_const] = value, m->cid[m->n_const++] = id;
    return id;
}

uint32_t kv_spv_true(struct kv_spv *m)
{
    if (m->c_true) return m->c_true;
    m->c_true = kv_spv_id(m);
    KV_INS(&m->globals, SpvOpConstantTrue, kv_spv_bool(m), m->c_true);
    return m->c_true;
}

int kv_spv_assemble(struct kv_spv *m, const uint32_t *caps, int n_caps, const uint32_t *vars, uint32_t n_vars,
                    const uint32_t *io, uint32_t n_io, const struct kv_words *body, const struct kv_words *fns,
                    uint32_t **out, size_t *bytes)
{
    struct kv_words o = {0};
    uint32_t head[5] = {m->w[0], m->w[1], m->w[2], m->next, m->w[4]};
    kv_words_put(&o, head, 5);
    for (int i = 0; i < n_caps; i++) KV_INS(&o, SpvOpCapability, caps[i]);
    kv_words_put(&o, m->w + 5, m->after_ext - 5);
    if (m->version < 0x10300) {
        uint32_t s[16];
        size_t n = kv_words_str(s, 16, "SPV_KHR_storage_buffer_storage_class");
        kv_words_ins(&o, SpvOpExtension, n, s);
    }
    kv_words_put(&o, m->w + m->after_ext, m->entry - m->after_ext);
    const uint32_t elen = kv_len(m->w[m->entry]), nv = m->version >= 0x10400 ? n_vars : 0;
    const uint32_t e0 = (m->w[m->entry] & 0xffffu) | ((elen + nv + n_io) << 16);
    kv_words_put(&o, &e0, 1);
    kv_words_put(&o, m->w + m->entry + 1, elen - 1);
    kv_words_put(&o, vars, nv);
    kv_words_put(&o, io, n_io);
    const size_t after = m->entry + elen;
    kv_words_put(&o, m->w + after, m->first_type - after);
    kv_words_put(&o, m->annot.w, m->annot.n);
    kv_words_put(&o, m->w + m->first_type, m->first_fn - m->first_type);
    kv_words_put(&o, m->globals.w, m->globals.n);
    kv_words_put(&o, body->w, body->n);
    if (fns) kv_words_put(&o, fns->w, fns->n);
    o.w[3] = m->next;
    if (o.oom || m->globals.oom || m->annot.oom || body->oom || (fns && fns->oom)) return free(o.w), -1;
    *out = o.w;
    *bytes = 4 * o.n;
    return 0;
}

uint32_t kv_spv_builtin(struct kv_spv *m, int builtin, uint32_t type, uint32_t *is_new)
{
    for (uint32_t id = 1; id < m->bound; id++)
        if (m->builtin[id] == builtin + 1 && kv_spv_op(m, id) == SpvOpVariable) return id;
    uint32_t v = kv_spv_id(m);
    KV_INS(&m->globals, SpvOpVariable, kv_spv_ptr(m, SpvStorageClassInput, type), v, SpvStorageClassInput);
    KV_INS(&m->annot, SpvOpDecorate, v, SpvDecorationBuiltIn, (uint32_t)builtin);
    *is_new = 1;
    return v;
}

uint32_t kv_spv_local_size(const struct kv_spv *m)
{
    uint32_t local = 0, xyz[3];
    for (size_t i = 5; i < m->first_type; i += kv_len(m->w[i])) {
        if (kv_op(m->w[i]) == SpvOpExecutionMode && m->w[i + 2] == SpvExecutionModeLocalSize && kv_len(m->w[i]) >= 6)
            local = m->w[i + 3] * m->w[i + 4] * m->w[i + 5];
        /* SPIR-V 1.6 (glslc --target-env=vulkan1.3): the sizes as constants' ids, 0 where one is specialized */
        if (kv_op(m->w[i]) == SpvOpExecutionModeId && m->w[i + 2] == SpvExecutionModeLocalSizeId && kv_len(m->w[i]) >= 6)
            local = kv_spv_const(m, m->w[i + 3], &xyz[0]) && kv_spv_const(m, m->w[i + 4], &xyz[1]) &&
                            kv_spv_const(m, m->w[i + 5], &xyz[2])
                        ? xyz[0] * xyz[1] * xyz[2]
                        : 0;
    }
    for (uint32_t id = 1; id < m->bound; id++) /* a WorkgroupSize built-in may be specialized */
        if (m->builtin[id] == SpvBuiltInWorkgroupSize + 1 && kv_spv_op(m, id) != SpvOpConstantComposite) return 0;
    return local;
}
