/* The loop-cut build: a compute module rewritten so that it counts the
 * invocations whose loops a device ended short, at a back edge, without the
 * loop's own exit (Mesa's llvmpipe ends every loop of an invocation after
 * 65535 iterations in all: vk/loop_cap.c). Each invocation has a flag in a
 * storage buffer: every structured loop's (OpLoopMerge) header clears it and
 * its back edges set it (a conditional one as it is taken). A loop left by
 * its own exit (its header's test, a break, a conditional back edge not
 * taken) leaves it clear; a loop cut short at a back edge leaves it set,
 * which its merge block reads. The entry point's returns add 1 to word 0 of
 * the count buffer for each invocation that saw a loop cut. The flag is
 * written and read with atomics, which no compiler moves across an
 * iteration or drops (counters in registers were: the cut is added by the
 * device's back end, after the shader compiler has moved their updates),
 * and a loop the compiler unrolls takes no back edge on the device either. */
#ifndef KV_SAN_LOOPS_H
#define KV_SAN_LOOPS_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* The flags: KV_LOOPS_GROUPS parts of a workgroup's invocations, a
 * workgroup's its linear index modulo this. A CPU device runs the workgroups
 * of a dispatch in the order of that index on its threads, so that those in
 * flight at once are far fewer and never share a part. */
#define KV_LOOPS_GROUPS 4096u

/* words (bytes) rewritten into *out (malloc'd, *out_bytes), the count
 * buffer at descriptor set 0, binding, the flags (4 bytes an invocation,
 * KV_LOOPS_GROUPS workgroups) at binding + 1; *loops: how many loops it
 * counts (0: none, or a workgroup size that is not fixed: the module then
 * has no build). KV_EDATA for a module it cannot read. */
enum kv_status kv_loops_instrument(const char *what, const uint32_t *words, size_t bytes, uint32_t binding,
                                   uint32_t **out, size_t *out_bytes, int *loops);

/* Whether words (bytes, a module kv_loops_instrument read) has no loop. */
int kv_loops_none(const uint32_t *words, size_t bytes);

#endif
