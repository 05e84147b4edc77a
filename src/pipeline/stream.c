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

int kv_transfers_forced(void)
{
    const char *e = getenv("KVERIFY_TEST_TRANSFERS");
    if (!e || !*e) return -1;
    return !strcmp(e, "staged") ? 0 : !strcmp(e, "streamed") ? 1 : -1;
}

/* memcpy on every thread: a download's first touch of its host pages, and a
 * copy into staging memory, go faster in parallel. */
static void copy(char *dst, const char *src, size_t len)
{
    enum { PART = 1 << 20 };
    if (len < 4 * PART) {
        memcpy(dst, src, len);
        return;
    }
#pragma omp parallel for schedule(static)
    for (size_t o = 0; o < len; o += PART) memcpy(dst + o, src + o, len - o < PART ? len - o : PART);
}

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
    if (!stage) { /* the device's buffers are mapped: no staging */
        for (int i = 0; i < n; i++)
            if (down) copy(pc[i].host, pc[i].buf->map, pc[i].bytes);
            else copy(pc[i].buf->map, pc[i].host, pc[i].bytes);
        return KV_OK;
    }
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
            if (!down) copy((char *)stage->map + used, (const char *)pc[i].host + off, len);
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
        for (int k = 0; k < nc; k++) copy((char *)ch[k].p->host + ch[k].off, (const char *)stage->map + ch[k].at, ch[k].len);
    }
cleanup:
    kv_vk_batch_destroy(&b);
    return st;
}
