/* A failing case's run again in its stages' loop-cut builds, on a device
 * that cuts loops short (loops.h). */
#include "pipeline/loops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "sanitize/loops.h"

int kv_loops_wanted(const struct kv_runner *r, const struct kv_plan *p, const struct kv_run_opts *o)
{
    if (!r->d || !r->d->info.loop_cap || p->retired || o->fail_fast) return 0;
    for (int s = 0; s < r->k->n_stages; s++)
        if (p->win[s].addr) return 0;
    return 1;
}

/* Whether the run writes output t's row ch (0 isolated, 1 chained). */
static int written(const struct kv_case *c, const struct kv_plan *p, const int *run_stage, int t, int ch)
{
    const struct kv_kernel *k = c->k;
    return k->tensors[t].role == KV_OUTPUT && kv_tensor_on(c, t) && run_stage[k->tensors[t].stage] && !c->given[t] &&
           (ch == 0 || p->has_chain[t]);
}

/* The bytes of row ch of output t where the run lands it, guard words included. */
static size_t padded(const struct kv_plan *p, int t, int ch) { return ch ? p->chain[t].size : p->dev[t].size; }

/* The stages whose cut can show in a failing row of res (mark[s]): a row's
 * own stage, and every stage before it where the row is chained (or has no
 * stage). */
static void marked(const struct kv_kernel *k, const struct kv_case_result *res, int *mark)
{
    memset(mark, 0, sizeof(int) * KV_MAX_STAGES);
    for (int i = 0; i < res->n_outputs; i++) {
        const struct kv_output_result *o = &res->out[i];
        if (o->pass) continue;
        int s = 0;
        while (s < k->n_stages && (!o->stage || strcmp(k->stages[s].name, o->stage))) s++;
        if (s < k->n_stages && !o->chained) mark[s] = 1;
        else
            for (int u = 0; u < k->n_stages && (u <= s || s == k->n_stages); u++) mark[u] = 1;
    }
}

/* Host memory the check may take for the plain run's outputs, kept while the loop-cut run writes over them. */
#define KV_LOOPS_KEEP ((size_t)1 << 30)

enum kv_status kv_loops_check(struct kv_runner *r, struct kv_case *c, struct kv_plan *p, const int *run_stage,
                              const int *chain_stage, struct kv_case_result *res)
{
    enum kv_status st = KV_OK;
    const struct kv_kernel *k = c->k;
    void *kept[KV_MAX_TENSORS][2] = {{0}};
    int any = 0, covered = 1, same = 1, mark[KV_MAX_STAGES];
    size_t keep = 0;
    marked(k, res, mark);
    for (int s = 0; s < k->n_stages; s++) {
        if (!run_stage[s] || !mark[s]) continue;
        KV_TRY(kv_runner_loops(r, c, s));
        const int built = kv_runner_pipe(r, c, s, KV_VARIANT_LOOPS) != kv_runner_pipe(r, c, s, KV_VARIANT_PLAIN);
        any |= built;
        covered &= built || r->loops_tried[s][kv_runner_pipe(r, c, s, KV_VARIANT_PLAIN) == &r->alt[s]] == 2;
        mark[s] = built;
    }
    for (int t = 0; t < k->n_tensors; t++)
        for (int ch = 0; ch < 2; ch++) keep += written(c, p, run_stage, t, ch) ? padded(p, t, ch) : 0;
    if (!any || keep > KV_LOOPS_KEEP) { /* no loop to cut (the failure is the kernel's), or too large to check */
        res->loops_checked = covered && !any;
        goto cleanup;
    }
    const size_t slots = 2 * (size_t)k->n_stages * KV_LOOPS_SLOT;
    uint32_t local = 1; /* the most invocations of a workgroup */
    for (int s = 0; s < k->n_stages; s++) {
        const uint32_t l = r->local[s][0] * r->local[s][1] * r->local[s][2];
        local = l > local ? l : local;
    }
    if (!p->loops_dev.buf) {
        KV_TRY(kv_vk_buffer_create(r->d, slots, KV_MEM_DEVICE, &p->loops_dev));
        KV_TRY(kv_vk_buffer_create(r->d, slots, KV_MEM_READBACK, &p->loops_down));
        KV_TRY(kv_vk_buffer_create(r->d, (size_t)KV_LOOPS_GROUPS * local * 4, KV_MEM_DEVICE, &p->loops_flags));
    }
    for (int t = 0; t < k->n_tensors; t++) /* the plain run's outputs, put back after */
        for (int ch = 0; ch < 2; ch++)
            if (written(c, p, run_stage, t, ch)) {
                kept[t][ch] = malloc(padded(p, t, ch));
                KV_CHECK(kept[t][ch], KV_EDEVICE, "out of host memory");
                memcpy(kept[t][ch], kv_plan_download(p, t, ch), padded(p, t, ch));
            }
    double ms[KV_MAX_STAGES], up, down;
    KV_TRY(kv_plan_run(r, c, p, run_stage, chain_stage, 0, KV_VARIANT_LOOPS, ms, NULL, &up, &down));
    unsigned long long n = 0;
    char first[160] = "";
    /* every stage runs again (the run fills every output's sentinels first), the marked ones in their
     * loop-cut builds: their counts (a stage not marked may keep an earlier case's build) */
    for (int s = 0; s < k->n_stages; s++)
        for (int pass = 0; pass < 2; pass++) {
            if (!run_stage[s] || !mark[s] || (pass == 1 && !chain_stage[s])) continue;
            const uint32_t v = ((const uint32_t *)p->loops_down.map)[(2 * (size_t)s + (size_t)pass) * KV_LOOPS_SLOT / 4];
            if (v && !first[0]) snprintf(first, sizeof first, "stage %s%s", k->stages[s].name, pass ? " (chained)" : "");
            n += v;
        }
    for (int t = 0; t < k->n_tensors; t++)
        for (int ch = 0; ch < 2; ch++)
            if (kept[t][ch]) {
                void *got = (void *)kv_plan_download(p, t, ch); /* mapped, or the plan's host copy */
                same &= kv_same_values(c->t[t].dtype, kept[t][ch], got, c->t[t].count);
                memcpy(got, kept[t][ch], padded(p, t, ch));
            }
    if (n && same)
        st = kv_error(KV_EDEVICE,
                      "%s: %s ends every loop of a shader invocation after %u iterations in all, without an error, "
                      "and cut the loops of %llu invocations short here (%s first): the outputs it gave cannot be "
                      "judged; run the case on another device", c->name, r->d->info.name, r->d->info.loop_cap, n, first);
    res->loops_checked = covered && !n;
cleanup:
    for (int t = 0; t < KV_MAX_TENSORS; t++) free(kept[t][0]), free(kept[t][1]);
    return st;
}
