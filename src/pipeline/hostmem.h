/* Whether a case fits: its shapes against the kernel and the device's
 * limits, and the host memory it will certainly hold against what the
 * machine has available. */
#ifndef KV_HOSTMEM_H
#define KV_HOSTMEM_H

#include <stdint.h>

#include "kernels/kernel.h"
#include "vk/vk.h"

struct kv_run_opts;

/* A lower bound of the host memory case c holds at its peak on device dev
 * (NULL: none): each input generated (and staged for upload where the plan
 * is not streamed), each output downloaded (twice where a chained rerun
 * makes it again), each intermediate's rounded oracle (what its isolated
 * stage reads) where it is made whole; on a CPU device (lavapipe) each input
 * and intermediate also in the device's buffers, with the outputs. With the
 * run's options o (NULL: not counted), the oracle of each output not made
 * block by block: its float64 values and scales, 16 bytes an element (or a
 * sampled element, where it holds its sample alone), and what else the
 * kernel's oracle holds (kernel.oracle_host). */
uint64_t kv_case_host_floor(const struct kv_case *c, const struct kv_vk_info *dev, const struct kv_run_opts *o);

/* The memory available to a new allocation: /proc/meminfo's MemAvailable
 * (KVERIFY_TEST_MEM_AVAILABLE, bytes, in its place for the tests); 0 where
 * unknown. */
uint64_t kv_host_available(void);

/* Check a case's shapes against the kernel and the device's limits (dev
 * NULL: the kernel's alone) in a run with options o (NULL: the built-in
 * shaders), and (host) that its inputs and outputs fit the host's
 * available memory. */
enum kv_status kv_case_check(struct kv_case *c, const struct kv_vk_info *dev, const struct kv_run_opts *o,
                             int host);

#endif
