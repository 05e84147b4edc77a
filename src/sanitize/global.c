/* racecheck-global's plan: which modules' storage-buffer accesses are
 * shadowed, and how (the rewrite is instrument.c's, the checks helpers.c's). */
#include "sanitize/global.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sanitize/helpers.h"

uint32_t kv_san_member_offset(const struct kv_spv *m, uint32_t st, uint32_t k)
{
    for (size_t i = m->after_ext; i < m->first_type; i += kv_len(m->w[i]))
        if (kv_op(m->w[i]) == SpvOpMemberDecorate && kv_len(m->w[i]) >= 5 && m->w[i + 1] == st && m->w[i + 2] == k &&
            m->w[i + 3] == SpvDecorationOffset)
            return m->w[i + 4];
    return UINT32_MAX;
}

/* Whether the module may use subgroup operations: a capability of them, the
 * group and non-uniform group instructions, the KHR subgroup ones,
 * cooperative matrices, or a barrier of subgroup scope. */
static int subgroup_ops(const struct kv_spv *m)
{
    static const uint32_t caps[] = {18, 62, 63, 64, 65, 66, 67, 68, 4423, 4431, 5297, 5357, 5568, 6022, 6026};
    for (size_t i = 5; i < m->first_type; i += kv_len(m->w[i]))
        for (size_t c = 0; kv_op(m->w[i]) == SpvOpCapability && c < sizeof caps / sizeof *caps; c++)
            if (m->w[i + 1] == caps[c]) return 1; /* a capability of subgroup (or group) operations */
    for (size_t i = m->first_fn; i < m->n; i += kv_len(m->w[i])) {
        const uint32_t op = kv_op(m->w[i]), scope = kv_len(m->w[i]) > 1 ? m->w[i + 1] : 0;
        uint32_t v;
        if ((op >= SpvOpGroupAll && op <= SpvOpGroupSMax) || (op >= SpvOpGroupNonUniformElect && op <= 366) ||
            (op >= 4421 && op <= 4432) || (op >= 4456 && op <= 4460) || (op >= 5358 && op <= 5362))
            return 1;
        if (op == SpvOpControlBarrier && !(kv_spv_const(m, scope, &v) && v == SpvScopeWorkgroup)) return 1;
    }
    return 0;
}

static int global_off(struct kv_san_module *o, const char *why)
{
    size_t n = strlen(o->note);
    snprintf(o->note + n, sizeof o->note - n, "%sracecheck-global off: %s", n ? "; " : "", why);
    return 0;
}

/* Whether a word of the module could make one workgroup wait for another:
 * an atomic outside shared memory whose result is used (a counter or flag
 * read back), or any such atomic where a load could see it without one (a
 * Coherent or Volatile buffer, a load made volatile or visible). An atomic
 * whose result nothing reads (adamw-step-bf16's atomicAnd and atomicOr,
 * which set an invocation's own half of a word) orders nothing. A word that
 * equals the result's id by chance counts as a use: the answer errs to 1. */
static int atomics_order(const struct kv_spv *m, const uint32_t *root)
{
    int atomics = 0, visible = 0; /* visible: a plain load may see an atomic */
    uint8_t *used = calloc(m->bound ? m->bound : 1, 1);
    if (!used) return 1;
    for (size_t i = m->first_fn; i < m->n; i += kv_len(m->w[i])) {
        const uint32_t op = kv_op(m->w[i]), len = kv_len(m->w[i]);
        bool res = false, rt = false;
        kv_spv_result(op, &res, &rt);
        for (uint32_t k = 1; k < len; k++)
            if (!(res && k == (rt ? 2u : 1u)) && m->w[i + k] < m->bound) used[m->w[i + k]] = 1;
        if (op == SpvOpLoad && len >= 5 && (m->w[i + 4] & (SpvMemoryAccessVolatileMask |
                                                             SpvMemoryAccessMakePointerVisibleMask)))
            visible = 1;
    }
    for (size_t i = 5; i < m->first_type; i += kv_len(m->w[i])) {
        const uint32_t op = kv_op(m->w[i]), len = kv_len(m->w[i]), d = op == SpvOpDecorate ? 2 : 3;
        if ((op == SpvOpDecorate || op == SpvOpMemberDecorate) && len > d &&
            (m->w[i + d] == SpvDecorationCoherent || m->w[i + d] == SpvDecorationVolatile))
            visible = 1;
    }
    int orders = 0;
    for (size_t i = m->first_fn; i < m->n && !orders; i += kv_len(m->w[i])) {
        const uint32_t op = kv_op(m->w[i]), pos = kv_san_ptr_pos(op), p = pos ? m->w[i + pos] : 0;
        const uint32_t r = p < m->bound ? root[p] : 0, rt = r ? kv_spv_type(m, r) : 0;
        if (!kv_san_is_atomic(op) || (rt && m->w[m->def[rt] + 2] == SpvStorageClassWorkgroup)) continue;
        atomics = 1;
        orders = op != SpvOpAtomicStore && used[m->w[i + 2]];
    }
    free(used);
    return orders || (atomics && visible);
}

/* An atomic is the only way one workgroup may wait for another's stores:
 * with none that can (atomics_order), any two workgroups' accesses of one
 * element, one of them a store, race. */
int kv_san_global_plan(const struct kv_spv *m, const uint32_t *root, uint32_t room, struct kv_san_module *o,
                       uint32_t *stored, int *intra)
{
    int any_atomic = 0;
    *stored = 0, *intra = 0;
    for (size_t i = m->first_fn; i < m->n; i += kv_len(m->w[i])) {
        const uint32_t op = kv_op(m->w[i]), pos = kv_san_ptr_pos(op), p = pos ? m->w[i + pos] : 0;
        const uint32_t r = p < m->bound ? root[p] : 0;
        any_atomic |= kv_san_is_atomic(op);
        if (op == SpvOpStore && r && m->binding[r] >= 0 && m->binding[r] < KV_SAN_MAX_BINDINGS)
            *stored |= 1u << m->binding[r];
    }
    const uint32_t at = o->binding + 1 + (o->shadow_binding ? 1 : 0);
    char why[96];
    if (!*stored) return 0;
    if (any_atomic && atomics_order(m, root)) return global_off(o, "the shader's atomics may order its workgroups");
    snprintf(why, sizeof why, "%u bindings leave no room for its shadow", at);
    if (at + 1 > room) return global_off(o, why);
    o->global_binding = at;
    /* between invocations of a workgroup too, where nothing but its barriers
     * can order them: no subgroup operation (a lane may load a word, hand it
     * to another through a shuffle, which stores it: ordered, not a race), no
     * cooperative matrix, no subgroup barrier, no atomic (a flag in shared
     * memory may order two invocations) */
    *intra = !subgroup_ops(m) && !any_atomic;
    return 1;
}
