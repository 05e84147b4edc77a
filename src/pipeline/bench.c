#include "pipeline/bench.h"

#include <math.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/compare.h"

/* Stage s dispatched `runs` times between barriers in one submission; with
 * stamps non-NULL, a timestamp before the first and after each. */
static enum kv_status bench_batch(struct kv_runner *r, struct kv_case *c, struct kv_plan *p, int s, int runs,
                                  uint32_t cap, struct kv_vk_batch *b, int *stamps)
{
    enum kv_status st = KV_OK;
    KV_TRY(kv_vk_batch_begin(r->d, (uint32_t)(runs * p->win[s].n), stamps ? (uint32_t)runs + 2 : 0, b));
    if (stamps) stamps[0] = kv_vk_batch_stamp(b);
    for (int i = 0; i < runs; i++) {
        KV_TRY(kv_plan_dispatch(r, c, p, s, 0, cap, 0, b));
        kv_vk_batch_barrier(b, KV_BARRIER_COMPUTE_TO_COMPUTE);
        if (stamps) stamps[i + 1] = kv_vk_batch_stamp(b);
    }
    st = kv_vk_batch_submit(b);
cleanup:
    return st;
}

enum kv_status kv_plan_bench(struct kv_runner *r, struct kv_case *c, struct kv_plan *p, const int *run_stage, int n,
                             double warmup_s, uint32_t cap, double *min_ms, double *median_ms)
{
    enum kv_status st = KV_OK;
    const struct kv_kernel *k = r->k;
    enum { WARMUP = 3 };
    double *t = malloc((size_t)n * sizeof *t);
    KV_CHECK(t, KV_EDEVICE, "out of host memory for --bench");
    /* Batches of the first stage until the device has been busy warmup_s
     * seconds: each batch twice the last (at most 256 dispatches), or what
     * the time left needs at the rate seen so far, if fewer. */
    int first = 0;
    while (first < k->n_stages && !run_stage[first]) first++;
    double t0 = kv_now_ms(), done = 0;
    for (int runs = 1; first < k->n_stages && kv_now_ms() - t0 < warmup_s * 1e3;) {
        struct kv_vk_batch b;
        st = bench_batch(r, c, p, first, runs, cap, &b, NULL);
        kv_vk_batch_destroy(&b);
        if (st) goto cleanup;
        done += runs;
        const double el = kv_now_ms() - t0, need = ceil((warmup_s * 1e3 - el) * done / el);
        runs = need < 2 * runs ? (need < 1 ? 1 : (int)need) : (2 * runs < 256 ? 2 * runs : 256);
    }
    for (int s = 0; s < k->n_stages; s++) {
        min_ms[s] = median_ms[s] = 0;
        if (!run_stage[s]) continue;
        struct kv_vk_batch b;
        int stamps[1024 + WARMUP + 2];
        st = bench_batch(r, c, p, s, n + WARMUP, cap, &b, stamps);
        for (int i = 0; !st && i < n; i++) t[i] = kv_vk_batch_ms(&b, stamps[WARMUP + i], stamps[WARMUP + i + 1]);
        kv_vk_batch_destroy(&b);
        if (st) goto cleanup;
        median_ms[s] = kv_quantile(t, (size_t)n, 0.5);
        min_ms[s] = kv_quantile(t, (size_t)n, 0.0);
    }
cleanup:
    free(t);
    return st;
}

