#include "pipeline/stream.h"

#include <stdint.h>
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

/* The parts that the threads take of len bytes at dst: on the destination's
 * 2 MiB bounds, so that where the pages are huge (kv_malloc_big) two threads
 * never fault the same page. Part k of n is [lo, hi). */
enum { PART = 2 << 20 };
struct parts {
    size_t head, n, len; /* the bytes to the first bound, the parts, len */
};

static struct parts parts_of(const void *dst, size_t len)
{
    const size_t head = (PART - ((uintptr_t)dst & (PART - 1))) & (PART - 1);
    const size_t n = !len ? 0 : head >= len ? 1 : (head ? 1 : 0) + (len - head + PART - 1) / PART;
    return (struct parts){head, n, len};
}

static void part(const struct parts *p, size_t k, size_t *lo, size_t *hi)
{
    *lo = k == 0 ? 0 : p->head ? p->head + (k - 1) * PART : k * PART;
    const size_t end = p->head ? p->head + k * PART : (k + 1) * PART;
    *hi = end < p->len ? end : p->len;
}

/* memcpy on every thread: a download's first touch of its host pages, and a
 * copy into staging memory, go faster in parallel. */
static void copy(char *dst, const char *src, size_t len)
{
    if (len < 4 * (size_t)PART) {
        memcpy(dst, src, len);
        return;
    }
    const struct parts ps = parts_of(dst, len);
#pragma omp parallel for schedule(static)
    for (size_t k = 0; k < ps.n; k++) {
        size_t lo, hi;
        part(&ps, k, &lo, &hi);
        memcpy(dst + lo, src + lo, hi - lo);
    }
}

void kv_stream_fill(void *dst, size_t bytes, uint32_t word)
{
    const struct parts ps = parts_of(dst, bytes);
#pragma omp parallel for schedule(static) if (bytes >= 4 * (size_t)PART)
    for (size_t k = 0; k < ps.n; k++) {
        size_t lo, hi;
        part(&ps, k, &lo, &hi);
        uint32_t *w = (uint32_t *)((char *)dst + lo);
        for (size_t i = 0; i < (hi - lo) / 4; i++) w[i] = word;
    }
}

/* One chunk of a piece in the staging buffer. */
struct chunk {
    const struct kv_piece *p;
    size_t off, len, at;
};

/* A part of the staging buffer, the transfers through it in flight, and
 * their batch (restarted at each turn: made anew, it cost a driver about a
 * millisecond a turn). */
struct slot {
    struct kv_vk_batch b;
    struct chunk ch[64];
    int nc;
    size_t at, used;
};

/* The slot's transfers waited for, and a download's chunks copied out (its
 * batch kept for the slot's next turn). */
static enum kv_status finish(struct kv_vk_device *d, struct kv_vk_buffer *stage, struct slot *s, int down)
{
    enum kv_status st = KV_OK;
    KV_TRY(kv_vk_batch_wait(&s->b));
    if (down) {
        KV_TRY(kv_vk_buffer_sync(d, stage, s->at, s->used, 1));
        for (int k = 0; k < s->nc; k++)
            copy((char *)s->ch[k].p->host + s->ch[k].off, (const char *)stage->map + s->ch[k].at, s->ch[k].len);
    }
cleanup:
    return st;
}

enum kv_status kv_stream(struct kv_vk_device *d, struct kv_vk_buffer *stage, const struct kv_piece *pc, int n,
                         int down)
{
    enum kv_status st = KV_OK;
    if (!stage) { /* the device's buffers are mapped: no staging */
        for (int i = 0; i < n; i++)
            if (down) copy(pc[i].host, pc[i].buf->map, pc[i].bytes);
            else copy(pc[i].buf->map, pc[i].host, pc[i].bytes);
        return KV_OK;
    }
    /* The staging buffer's two halves in turn (where it has room for two):
     * the device copies through one while the host copies through the
     * other. Halves on 256-byte bounds, so that flushing or invalidating
     * one leaves the other's memory alone. */
    const size_t A = 256, half = (size_t)stage->size / 2 / A * A;
    const int n_slots = half ? 2 : 1;
    const size_t cap = half ? half : (size_t)stage->size;
    struct slot sl[2];
    memset(sl, 0, sizeof sl);
    int i = 0, cur = 0;
    size_t off = 0;
    while (i < n && pc[i].bytes == 0) i++;
    while (i < n) {
        struct slot *s = &sl[cur];
        if (s->b.in_flight) KV_TRY(finish(d, stage, s, down)); /* its last turn's transfers */
        s->at = (size_t)cur * cap, s->used = 0, s->nc = 0;
        if (s->b.d) KV_TRY(kv_vk_batch_restart(&s->b));
        else KV_TRY(kv_vk_batch_begin(d, 0, 0, &s->b));
        while (i < n && s->used < cap && s->nc < (int)(sizeof s->ch / sizeof s->ch[0])) {
            size_t len = pc[i].bytes - off < cap - s->used ? pc[i].bytes - off : cap - s->used, at = s->at + s->used;
            s->ch[s->nc++] = (struct chunk){&pc[i], off, len, at};
            struct kv_vk_range host = {stage, at, len}, dev = {pc[i].buf, off, len};
            if (!down) copy((char *)stage->map + at, (const char *)pc[i].host + off, len);
            if (down) kv_vk_batch_copy(&s->b, dev, host);
            else kv_vk_batch_copy(&s->b, host, dev);
            s->used += len, off += len;
            if (off == pc[i].bytes) {
                off = 0;
                do i++;
                while (i < n && pc[i].bytes == 0);
            }
        }
        if (down) kv_vk_batch_barrier(&s->b, KV_BARRIER_TRANSFER_TO_HOST);
        else KV_TRY(kv_vk_buffer_sync(d, stage, s->at, s->used, 0));
        KV_TRY(kv_vk_batch_send(&s->b));
        cur = (cur + 1) % n_slots;
    }
    for (int k = 0; k < n_slots; k++) /* the older turn first */
        if (sl[(cur + k) % n_slots].b.in_flight) KV_TRY(finish(d, stage, &sl[(cur + k) % n_slots], down));
cleanup:
    for (int k = 0; k < 2; k++) kv_vk_batch_destroy(&sl[k].b);
    return st;
}
