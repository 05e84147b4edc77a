/* A stage run through an interface file (--abi, formats/abi.h): its shader
 * checked against the file by SPIR-V reflection, its specialization
 * constants, the host-side products it binds, and its push constants and
 * group counts for a case. */
#ifndef KV_ABI_STAGE_H
#define KV_ABI_STAGE_H

#include "formats/abi.h"
#include "spirv/glsl.h"
#include "spirv/spirv.h"
#include "vk/vk.h"

/* Check the reflected shader against the file: bindings (set 0, storage
 * buffers, every output written is declared and writable, a write-only one
 * maps to an output and a read-only one to an input, element types fit the
 * tensors), push block (size, and each member's offset and type) and
 * specialization constants (ids, types; their values must be constants:
 * pipelines are made once). KV_EDATA naming the field. */
enum kv_status kv_abi_check(const char *what, const struct kv_abi *a, const struct kv_kernel *k,
                            const struct kv_spirv_iface *got, struct kv_vk_spec *spec);
/* Descriptor slots the pipeline has: the largest binding + 1. */
uint32_t kv_abi_slots(const struct kv_abi *a);
/* The file's defines and include folders for its shader's compile into x;
 * NULL without a file. */
const struct kv_glsl_extra *kv_abi_glsl_extra(const struct kv_abi *a, struct kv_glsl_extra *x);
/* Binding b's product for case c: a * b, b broadcast over a (b's shape is
 * the tail of a's), rounded to a's dtype; out is allocated. */
enum kv_status kv_abi_product(const struct kv_case *c, const struct kv_abi_binding *b, struct kv_tensor *out);
/* The push bytes and group counts of case c (each at most max[i]). */
enum kv_status kv_abi_launch(const struct kv_case *c, const struct kv_abi *a, const uint32_t max[3], void *push,
                             uint32_t groups[3]);

#endif
