/* racecheck-global's plan (sanitize/san.h): whether a module's stores to
 * storage buffers are shadowed, at which binding, and whether between the
 * invocations of a workgroup too. */
#ifndef KV_SAN_GLOBAL_H
#define KV_SAN_GLOBAL_H

#include "sanitize/san.h"
#include "spirv/spv.h"

/* Decide for module m (root: each pointer id's variable) with room
 * bindings: o->global_binding past o's record buffer and shared shadow, or
 * 0 with a note in o->note where the module has atomics outside shared
 * memory that may order workgroups (a result read back, or a buffer a plain
 * load may see them through) or no binding is left. *stored: the
 * bindings (bit b) the module stores to; *intra: the check also between a
 * workgroup's invocations (no subgroup operation, no atomic). Returns 1
 * where the check is made. */
int kv_san_global_plan(const struct kv_spv *m, const uint32_t *root, uint32_t room, struct kv_san_module *o,
                       uint32_t *stored, int *intra);

/* The Offset of member k of struct type st, or UINT32_MAX. */
uint32_t kv_san_member_offset(const struct kv_spv *m, uint32_t st, uint32_t k);

#endif
