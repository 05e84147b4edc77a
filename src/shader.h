/* User shaders for --shader STAGE=FILE: a .spv module, or GLSL compiled at run
 * time with libshaderc. */
#ifndef KV_SHADER_H
#define KV_SHADER_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* Load FILE as SPIR-V words into *words (malloc'd, caller frees). GLSL is
 * compiled for Vulkan 1.2 with #include resolved relative to the including
 * file; KV_SUBGROUP=1 is defined when subgroup_arith is set. Failures are
 * KV_EDATA with a one-line message naming the file. */
enum kv_status kv_shader_load(const char *path, int subgroup_arith, uint32_t **words,
                              size_t *bytes);

#endif
