/* Rewrite a SPIR-V module's NV cooperative matrices (SPV_NV_cooperative_matrix,
 * what Debian 12's glslang compiles) as KHR ones (SPV_KHR_cooperative_matrix),
 * optionally with every 16-bit float type made bfloat16 (SPV_KHR_bfloat16).
 * That is how kverify's bf16 tensor-core stages are built: written in GLSL
 * against NV cooperative matrices of float16_t, compiled by glslc, rewritten
 * here at build time.
 *
 * KHR matrices carry a use (A, B or accumulator) that NV ones do not: the use
 * of each type is taken from the multiply-adds. A type used as both A and B
 * gets a twin for B, and the loads that feed B operands are retyped; such a
 * B operand must come straight from a load and be used nowhere else. The
 * column-major flag of loads and stores becomes a layout constant. */
#ifndef KV_SPIRV_KHR_H
#define KV_SPIRV_KHR_H

#include <stddef.h>
#include <stdint.h>

/* Returns 0 and a malloc'd module in *out (n_out words), or -1 with a
 * message in err. */
int kv_spirv_nv_to_khr(const uint32_t *in, size_t n_in, int bf16, uint32_t **out, size_t *n_out, char *err,
                       size_t err_size);

#endif
