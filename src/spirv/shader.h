/* User shaders for --shader STAGE=FILE: a .spv module, or GLSL compiled at run
 * time with libshaderc. */
#ifndef KV_SHADER_H
#define KV_SHADER_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "spirv/glsl.h"

/* Load FILE as SPIR-V words into *words (malloc'd, caller frees). GLSL is
 * compiled for Vulkan 1.2 with #include resolved relative to the including
 * file; KV_SUBGROUP=1 is defined with KV_SHADER_SUBGROUP (the device has
 * subgroup arithmetic) and KV_INT8=1 with KV_SHADER_INT8 (8-bit storage, for
 * stages that have such a variant), KV_ABF16=1 and KV_BF16CM=1 (then the NV
 * float16 matrices rewritten as KHR bfloat16) with theirs; extra (may be NULL)
 * adds a foreign shader's defines and include folders. Failures are KV_EDATA
 * with a one-line message naming the file. */
enum kv_status kv_shader_load(const char *path, unsigned defines, const struct kv_glsl_extra *extra, uint32_t **words,
                              size_t *bytes);

#endif
