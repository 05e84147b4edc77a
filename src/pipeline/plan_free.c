/* The end of a case's device buffers: destroyed on a thread of their own
 * while the case is judged (kv_plan_retire), or with the rest of the plan
 * (kv_plan_free). */
#include "pipeline/plan.h"

#include <pthread.h>
#include <stdlib.h>

struct kv_plan_retired {
    struct kv_vk_device *d;
    struct kv_vk_buffer b[3 * KV_MAX_TENSORS + KV_MAX_STAGES * KV_ABI_MAX + 2];
    int n;
    pthread_t th;
};

static void *destroy_retired(void *arg)
{
    struct kv_plan_retired *r = arg;
    for (int i = 0; i < r->n; i++) kv_vk_buffer_destroy(r->d, &r->b[i]);
    return NULL;
}

/* b's handles to r (where it has any); its size stays */
static void retire(struct kv_plan_retired *r, struct kv_vk_buffer *b)
{
    if (!b->buf && !b->mem) return;
    r->b[r->n++] = *b;
    b->buf = VK_NULL_HANDLE, b->mem = VK_NULL_HANDLE, b->map = NULL;
}

void kv_plan_retire(struct kv_vk_device *d, struct kv_plan *p)
{
    if (!d || !p->streamed || p->retired) return;
    struct kv_plan_retired *r = calloc(1, sizeof *r);
    if (!r) return;
    r->d = d;
    for (int t = 0; t < KV_MAX_TENSORS; t++) retire(r, &p->dev[t]), retire(r, &p->iso[t]), retire(r, &p->chain[t]);
    for (int s = 0; s < KV_MAX_STAGES; s++)
        for (int i = 0; i < KV_ABI_MAX; i++) retire(r, &p->product[s][i]);
    retire(r, &p->up), retire(r, &p->down);
    if (pthread_create(&r->th, NULL, destroy_retired, r) != 0) {
        destroy_retired(r);
        free(r);
        return;
    }
    p->retired = r;
}

void kv_plan_free(struct kv_vk_device *d, struct kv_plan *p)
{
    if (p->retired) pthread_join(p->retired->th, NULL), free(p->retired), p->retired = NULL;
    for (int t = 0; t < KV_MAX_TENSORS; t++) {
        kv_vk_buffer_destroy(d, &p->dev[t]);
        kv_vk_buffer_destroy(d, &p->iso[t]);
        kv_vk_buffer_destroy(d, &p->chain[t]);
        kv_tensor_free(&p->iso_host[t]);
        free(p->host_down[t][0]), free(p->host_down[t][1]);
    }
    for (int s = 0; s < KV_MAX_STAGES; s++)
        for (int i = 0; i < KV_ABI_MAX; i++) kv_vk_buffer_destroy(d, &p->product[s][i]), kv_tensor_free(&p->prod_host[s][i]);
    kv_vk_buffer_destroy(d, &p->up);
    kv_vk_buffer_destroy(d, &p->down);
    kv_vk_buffer_destroy(d, &p->san_dev);
    kv_vk_buffer_destroy(d, &p->san_up);
    kv_vk_buffer_destroy(d, &p->san_down);
    kv_vk_buffer_destroy(d, &p->san_shadow);
}
