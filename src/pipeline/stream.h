/* Uploads and downloads through a staging buffer of bounded size: a case's
 * tensors go to and from the device in chunks, so that host memory holds no
 * second copy of them (a plan is "streamed" past KV_STREAM_BYTES of
 * transfers; plan.c). */
#ifndef KV_STREAM_H
#define KV_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "vk/vk.h"

/* A plan streams its transfers where they pass this many bytes in all
 * (KVERIFY_TEST_STAGE_BYTES, for the tests, in its place, also as the
 * staging buffers' size). */
#define KV_STREAM_BYTES ((size_t)64 << 20)
/* The size of each of the two staging buffers (upload, readback). */
#define KV_STAGE_BYTES ((size_t)64 << 20)

/* One tensor's transfer: bytes between host memory and a device buffer's start. */
struct kv_piece {
    void *host;
    const struct kv_vk_buffer *buf;
    size_t bytes;
};

/* The transfer threshold and the staging size (see above). */
size_t kv_stream_threshold(void);
size_t kv_stage_bytes(void);
/* For the tests: KVERIFY_TEST_TRANSFERS=staged (every tensor staged whole)
 * gives 0, =streamed 1, unset -1 (chosen by the plan: direct where the
 * device's buffers are mapped, else streamed past the threshold). */
int kv_transfers_forced(void);

/* Copy the pieces to the device (down = 0) or from it (down = 1) through
 * stage (host-visible, mapped), as many submissions as it takes, two in
 * flight at a time (each through its half of stage), all waited for on
 * return; stage NULL: the pieces' buffers are mapped, and copied directly.
 * A download is preceded in submission order by the barrier that makes the
 * device's writes visible to transfers (the caller's). */
enum kv_status kv_stream(struct kv_vk_device *d, struct kv_vk_buffer *stage, const struct kv_piece *pc, int n,
                         int down);

/* bytes (a multiple of 4) at dst, 4-byte aligned, filled with word on
 * every thread, as the copies part them: a CPU device's mapped buffer filled
 * as vkCmdFillBuffer would, where the device fills on one thread. */
void kv_stream_fill(void *dst, size_t bytes, uint32_t word);

#endif
