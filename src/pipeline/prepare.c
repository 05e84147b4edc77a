#include "pipeline/prepare.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/threads.h"
#include "pipeline/chains.h"
#include "pipeline/hostmem.h"
#include "pipeline/stream.h"

enum kv_status kv_case_stages(const struct kv_runner *r, const struct kv_case *c, int *run_stage, int *chain_stage,
                              int *any)
{
    if (r->d) kv_case_chains(c, r->abi, run_stage, chain_stage);
    else /* none runs without a device */
        for (int s = 0; s < c->k->n_stages; s++) run_stage[s] = chain_stage[s] = 0;
    for (int s = 0; s < c->k->n_stages; s++) {
        *any |= run_stage[s];
        if (run_stage[s] && r->missing[s][0]) return kv_error(KV_ENODEV, "%s", r->missing[s]);
    }
    return KV_OK;
}

void kv_early_plan_free(struct kv_vk_device *d, struct kv_early_plan *e)
{
    if (!e) return;
    if (d) kv_plan_free(d, &e->p);
    free(e);
}

struct kv_early_plan *kv_early_plan(struct kv_runner *r, struct kv_case *c)
{
    int run_stage[KV_MAX_STAGES] = {0}, chain_stage[KV_MAX_STAGES] = {0}, any = 0;
    struct kv_early_plan *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->r = r;
    /* the device's limits first, as the case's run checks them */
    if (!r->d || kv_case_check(c, &r->d->info, NULL, 0) || kv_case_stages(r, c, run_stage, chain_stage, &any) ||
        !any || kv_plan_alloc(r, c, chain_stage, &e->p)) {
        kv_early_plan_free(r->d, e);
        kv_error_clear();
        return NULL;
    }
    memcpy(e->p_made, c->p, sizeof e->p_made);
    return e;
}

int kv_early_plan_take(struct kv_early_plan *e, const struct kv_runner *r, const struct kv_case *c,
                       struct kv_plan *p)
{
    int fits = e->r == r;
    for (int i = 0; i < c->k->n_params; i++)
        fits &= e->p_made[i].i == c->p[i].i && e->p_made[i].c == c->p[i].c &&
                !memcmp(&e->p_made[i].f, &c->p[i].f, sizeof c->p[i].f);
    if (fits) *p = e->p;
    else kv_plan_free(r->d, &e->p);
    free(e);
    return fits;
}

struct kv_plan_beside {
    pthread_t th;
    struct kv_runner *r;
    struct kv_case shape; /* the thread's own copy: the main thread allocates the case's tensors meanwhile */
    struct kv_early_plan *early;
};

static void *beside_thread(void *arg)
{
    struct kv_plan_beside *b = arg;
    b->early = kv_early_plan(b->r, &b->shape);
    return NULL;
}

int kv_overlap_off(void)
{
    const char *off = getenv("KVERIFY_TEST_NO_OVERLAP");
    return off && *off == '1';
}

struct kv_plan_beside *kv_plan_beside_start(struct kv_runner *r, const struct kv_case *c, int any_stage)
{
    if (!r->d || !any_stage || kv_overlap_off()) return NULL;
    size_t bytes = 0;
    for (int s = 0; s < c->k->n_stages; s++)
        if (r->abi[s]) return NULL;
    for (int t = 0; t < c->k->n_tensors; t++)
        if (kv_tensor_on(c, t)) bytes += kv_tensor_bytes(&c->t[t]);
    if (bytes <= kv_stream_threshold()) return NULL;
    struct kv_plan_beside *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->r = r, b->shape = *c;
    if (pthread_create(&b->th, NULL, beside_thread, b) != 0) {
        free(b);
        return NULL;
    }
    kv_threads_beside(1); /* a core to the thread */
    return b;
}

struct kv_early_plan *kv_plan_beside_join(struct kv_plan_beside *b)
{
    if (!b) return NULL;
    pthread_join(b->th, NULL);
    kv_threads_beside(0);
    struct kv_early_plan *e = b->early;
    free(b);
    return e;
}
