/* The end of a case's device buffers: destroyed on a thread of their own
 * while the case is judged (kv_plan_retire), or with the rest of the plan
 * (kv_plan_free). */
#include "pipeline/plan.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { N_CASE_BUFS = 3 * KV_MAX_TENSORS + KV_MAX_STAGES * KV_ABI_MAX + 2 };

/* The buffers a case's runs use (not the sanitizer's, which a sanitized
 * run's rows read after it): into out, their number. */
static int case_buffers(struct kv_plan *p, struct kv_vk_buffer **out)
{
    int n = 0;
    for (int t = 0; t < KV_MAX_TENSORS; t++) out[n++] = &p->dev[t], out[n++] = &p->iso[t], out[n++] = &p->chain[t];
    for (int s = 0; s < KV_MAX_STAGES; s++)
        for (int i = 0; i < KV_ABI_MAX; i++) out[n++] = &p->product[s][i];
    out[n++] = &p->up, out[n++] = &p->down;
    return n;
}

struct kv_plan_retired {
    struct kv_vk_device *d;
    struct kv_vk_buffer b[N_CASE_BUFS];
    int n;
    void (*then)(void *ctx);
    void *ctx;
    pthread_t th;
};

static void *destroy_retired(void *arg)
{
    struct kv_plan_retired *r = arg;
    for (int i = 0; i < r->n; i++) kv_vk_buffer_destroy(r->d, &r->b[i]);
    if (r->then) r->then(r->ctx);
    return NULL;
}

void kv_plan_retire(struct kv_vk_device *d, struct kv_plan *p, void (*then)(void *ctx), void *ctx)
{
    if (!d || !p->streamed || p->retired) return;
    struct kv_plan_retired *r = calloc(1, sizeof *r);
    if (!r) return;
    r->d = d, r->then = then, r->ctx = ctx;
    struct kv_vk_buffer *all[N_CASE_BUFS];
    const int n = case_buffers(p, all);
    for (int i = 0; i < n; i++) { /* the handles to r; the sizes stay */
        struct kv_vk_buffer *b = all[i];
        if (!b->buf && !b->mem) continue;
        r->b[r->n++] = *b;
        b->buf = VK_NULL_HANDLE, b->mem = VK_NULL_HANDLE, b->map = NULL;
    }
    if (pthread_create(&r->th, NULL, destroy_retired, r) != 0) {
        destroy_retired(r);
        free(r);
        return;
    }
    p->retired = r;
}

void kv_plan_retired_join(struct kv_plan *p)
{
    if (p->retired) pthread_join(p->retired->th, NULL), free(p->retired), p->retired = NULL;
}

void kv_plan_free(struct kv_vk_device *d, struct kv_plan *p)
{
    kv_plan_retired_join(p);
    struct kv_vk_buffer *all[N_CASE_BUFS];
    const int n = case_buffers(p, all);
    for (int i = 0; i < n; i++) kv_vk_buffer_destroy(d, all[i]);
    for (int t = 0; t < KV_MAX_TENSORS; t++) {
        if (p->iso_lent[t]) memset(&p->iso_host[t], 0, sizeof p->iso_host[t]); /* the case's */
        else kv_tensor_free(&p->iso_host[t]);
        free(p->host_down[t][0]), free(p->host_down[t][1]);
    }
    for (int s = 0; s < KV_MAX_STAGES; s++)
        for (int i = 0; i < KV_ABI_MAX; i++) kv_tensor_free(&p->prod_host[s][i]);
    kv_vk_buffer_destroy(d, &p->san_dev);
    kv_vk_buffer_destroy(d, &p->san_up);
    kv_vk_buffer_destroy(d, &p->san_down);
    kv_vk_buffer_destroy(d, &p->san_shadow);
    kv_vk_buffer_destroy(d, &p->san_global);
    kv_vk_buffer_destroy(d, &p->loops_dev);
    kv_vk_buffer_destroy(d, &p->loops_down);
    kv_vk_buffer_destroy(d, &p->loops_flags);
}
