/* Stages bound by device address: where a tensor is longer than a binding
 * reaches (maxStorageBufferRange) and the stage has no windows, its source
 * is built again with KV_ADDR (shaders/addr.glsl), which reads every tensor
 * through a 64-bit address in the push constants, and runs in one dispatch
 * with no descriptor set. The arithmetic is the same source's; the runner
 * makes the builds the first time a case needs them (kv_runner_addr). */
#ifndef KV_PIPELINE_ADDR_H
#define KV_PIPELINE_ADDR_H

#include "kernels/kernel.h"
#include "vk/vk.h"

/* Why stage s of kernel k cannot read its tensors through addresses on dev
 * where it runs shader (a --shader path, or NULL: the built-in source) with
 * an --abi file or not, as text, or NULL where it can: the stage has no
 * KV_ADDR build, the device lacks bufferDeviceAddress, it is an --abi
 * stage, or its --shader's source does not name KV_ADDR (a .spv cannot be
 * built again). The runner's builds: kv_runner_addr (runner.h). */
const char *kv_addr_lacks(const struct kv_vk_info *dev, const struct kv_kernel *k, int s, const char *shader,
                          int abi);

/* An addressed dispatch's push constants into out (at least 8 * n + push_size
 * bytes): each binding's address (its buffer's, plus its offset), in order,
 * then the stage's own push_size bytes. */
void kv_addr_push(struct kv_vk_device *d, const struct kv_vk_range *bind, int n, const void *push,
                  uint32_t push_size, unsigned char *out);

#endif
