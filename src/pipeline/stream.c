#include "pipeline/stream.h"

#include <stdlib.h>
#include <string.h>

static size_t env_bytes(size_t dflt)
{
    const char *e = getenv("KVERIFY_TEST_STAGE_BYTES");
    unsigned long long v = e && *e ? strtoull(e, NULL, 10) : 0;
    return v >= 16 ? (size_t)v : dflt;
}

size_t kv_stream_threshold(void) { return env_bytes(KV_STREAM_BYTES); }
size_t kv_stage_bytes(void) { return env_bytes(KV_STAGE_BYTES); }

/* One chunk of a piece in the staging buffer. */
struct chunk {
    const struct kv_piece *p;
    size_t off, len, at;
};

enum kv_status kv_stream(struct kv_vk_device *d, struct kv_vk_buffer *stage, const struct kv_piece *pc, int n,
                         int down)
{
    enum kv_status st = KV_OK;
    enum { MAX_CHUNKS = 64 };
    struct kv_vk_batch b = {0};
    int i = 0;
    size_t off = 0;
    while (i < n && pc[i].bytes == 0) i++;
    while (i < n) {
        struct chunk ch[MAX_CHUNKS];
        int nc = 0;
        size_t used = 0;
        KV_TRY(kv_vk_batch_begin(d, 0, 0, &b));
        while (i < n && used < stage->size && nc < MAX_CHUNKS) {
            size_t len = pc[i].bytes - off < stage->size - used ? pc[i].bytes - off : stage->size - used;
            ch[nc++] = (struct chunk){&pc[i], off, len, used};
            struct kv_vk_range host = {stage, used, len}, dev = {pc[i].buf, off, len};
            if (!down) memcpy((char *)stage->map + used, (const char *)pc[i].host + off, len);
            if (down) kv_vk_batch_copy(&b, dev, host);
            else kv_vk_batch_copy(&b, host, dev);
            used += len, off += len;
            if (off == pc[i].bytes) {
                off = 0;
                do i++;
                while (i < n && pc[i].bytes == 0);
            }
        }
        if (down) kv_vk_batch_barrier(&b, KV_BARRIER_TRANSFER_TO_HOST);
        else KV_TRY(kv_vk_buffer_flush(d, stage));
        KV_TRY(kv_vk_batch_submit(&b));
        kv_vk_batch_destroy(&b);
        memset(&b, 0, sizeof b);
        if (!down) continue;
        KV_TRY(kv_vk_buffer_invalidate(d, stage));
        for (int k = 0; k < nc; k++) memcpy((char *)ch[k].p->host + ch[k].off, (const char *)stage->map + ch[k].at, ch[k].len);
    }
cleanup:
    kv_vk_batch_destroy(&b);
    return st;
}
