/* Stages bound by device address: where a tensor is longer than a binding
 * reaches (maxStorageBufferRange) and the stage has no windows, it reads
 * every tensor through a 64-bit address in its push constants and runs in
 * one dispatch with no descriptor set. The build is the stage's own SPIR-V
 * rewritten (spirv/spirv_addr.h), or, where its source has one, its KV_ADDR
 * build (shaders/addr.glsl) with its accesses made 64-bit pointer
 * arithmetic by the same rewrite; the arithmetic is the bound build's. The
 * runner makes the builds the first time a case needs them
 * (kv_runner_addr). */
#ifndef KV_PIPELINE_ADDR_H
#define KV_PIPELINE_ADDR_H

#include "kernels/kernel.h"
#include "vk/vk.h"

/* Why no stage reads its tensors through addresses on dev, as text, or
 * NULL where they can: the device lacks bufferDeviceAddress or shaderInt64. */
const char *kv_addr_lacks(const struct kv_vk_info *dev);
/* Whether dev's address builds are guarded (spirv_addr.h): on a CPU device
 * an access past a tensor through an address would reach kverify's own
 * memory, where a GPU faults (the device lost: exit 4). Such a device takes
 * the bound build rewritten, never a KV_ADDR build (its pointers are its
 * own, which no guard follows). */
int kv_addr_guarded(const struct kv_vk_info *dev);
/* Whether stage s of kernel k, run from shader (a --shader path, or NULL:
 * the built-in source), has a KV_ADDR build of its source. */
int kv_addr_source(const struct kv_kernel *k, int s, const char *shader);

/* An addressed dispatch's push constants into out (at least 16 * n +
 * push_size bytes; an --abi stage's n is its file's slots, push_size its
 * push bytes): each binding's address (its buffer's, plus its offset), in
 * order; with lengths (a build that reads a buffer's length()) each
 * binding's byte range after them; then the stage's own push_size bytes.
 * KV_EDEVICE where an address is not a multiple of 16. */
enum kv_status kv_addr_push(struct kv_vk_device *d, const struct kv_vk_range *bind, int n, int lengths,
                            const void *push, uint32_t push_size, unsigned char *out);

#endif
