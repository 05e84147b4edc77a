/* A failing run of a case (the plain one, or a stress run) run again in its
 * stages' loop-cut builds, on a device that cuts loops short (loops.h). */
#include "pipeline/loops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "sanitize/loops.h"

int kv_loops_wanted(const struct kv_runner *r, const struct kv_plan *p, const struct kv_run_opts *o)
{
    /* a retired plan first: its runner may be freed meanwhile on the retire thread (run.c's r_live) */
    if (p->retired || o->fail_fast || !r->d || !r->d->info.loop_cap) return 0;
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

/* The stages whose cut can show in a failing row of res from row `from` on
 * (mark[s]): a row's own stage, and every stage before it where the row is
 * chained (or has no stage). */
static void marked(const struct kv_kernel *k, const struct kv_case_result *res, int from, int *mark)
{
    memset(mark, 0, sizeof(int) * KV_MAX_STAGES);
    for (int i = from; i < res->n_outputs; i++) {
        const struct kv_output_result *o = &res->out[i];
        if (o->pass) continue;
        int s = 0;
        while (s < k->n_stages && (!o->stage || strcmp(k->stages[s].name, o->stage))) s++;
        if (s < k->n_stages && !o->chained) mark[s] = 1;
        else
            for (int u = 0; u < k->n_stages && (u <= s || s == k->n_stages); u++) mark[u] = 1;
    }
}

/* Host memory the check may take for the checked run's outputs, kept while the loop-cut run writes over them. */
#define KV_LOOPS_KEEP ((size_t)1 << 30)

/* The count and flag buffers, made once per plan. */
static enum kv_status buffers(struct kv_runner *r, const struct kv_kernel *k, struct kv_plan *p)
{
    if (p->loops_dev.buf) return KV_OK;
    uint32_t local = 1; /* the most invocations of a workgroup */
    for (int s = 0; s < k->n_stages; s++) {
        const uint32_t l = r->local[s][0] * r->local[s][1] * r->local[s][2];
        local = l > local ? l : local;
    }
    const size_t slots = 2 * (size_t)k->n_stages * KV_LOOPS_SLOT;
    KV_TRY_RET(kv_vk_buffer_create(r->d, slots, KV_MEM_DEVICE, &p->loops_dev));
    KV_TRY_RET(kv_vk_buffer_create(r->d, slots, KV_MEM_READBACK, &p->loops_down));
    return kv_vk_buffer_create(r->d, (size_t)KV_LOOPS_GROUPS * local * 4, KV_MEM_DEVICE, &p->loops_flags);
}

/* The invocations cut in the marked stages (every stage ran again, the
 * marked ones in their loop-cut builds; a stage not marked may keep an
 * earlier case's build), and where the first was, into first. */
static unsigned long long cut_count(const struct kv_kernel *k, const struct kv_plan *p, const int *mark,
                                    const int *chain_stage, const struct kv_stress_run *sr, char *first, size_t size)
{
    unsigned long long n = 0;
    first[0] = '\0';
    for (int s = 0; s < k->n_stages; s++)
        for (int pass = 0; pass < 2; pass++) {
            if (!mark[s] || (pass == 1 && !chain_stage[s])) continue;
            const uint32_t v = ((const uint32_t *)p->loops_down.map)[(2 * (size_t)s + (size_t)pass) * KV_LOOPS_SLOT / 4];
            if (v && !first[0])
                snprintf(first, size, "stage %s%s%s%s", k->stages[s].name, pass ? " (chained)" : "",
                         !sr ? "" : sr->variant == KV_VARIANT_SANITIZED ? " in the sanitized run" : " in the stress run ",
                         sr && sr->variant != KV_VARIANT_SANITIZED ? sr->tag + 1 : "");
            n += v;
        }
    return n;
}

/* The checked run's outputs put back from kept (freed); whether the run again gave the same values. */
static int put_back(const struct kv_case *c, struct kv_plan *p, void *kept[][2])
{
    int same = 1;
    for (int t = 0; t < c->k->n_tensors; t++)
        for (int ch = 0; ch < 2; ch++)
            if (kept[t][ch]) {
                void *got = (void *)kv_plan_download(p, t, ch); /* mapped, or the plan's host copy */
                same &= kv_same_values(c->t[t].dtype, kept[t][ch], got, c->t[t].count);
                memcpy(got, kept[t][ch], padded(p, t, ch));
                free(kept[t][ch]), kept[t][ch] = NULL;
            }
    return same;
}

enum kv_status kv_loops_check(struct kv_runner *r, struct kv_case *c, struct kv_plan *p, const int *run_stage,
                              const int *chain_stage, const struct kv_stress_run *sr, int from,
                              struct kv_case_result *res, int *clear)
{
    const int reversed = sr && sr->variant == KV_VARIANT_REVERSED, sanitized = sr && sr->variant == KV_VARIANT_SANITIZED;
    const int variant = sanitized ? KV_VARIANT_LOOPS_SANITIZED : reversed ? KV_VARIANT_LOOPS_REVERSED : KV_VARIANT_LOOPS;
    const int as_run = sanitized ? KV_VARIANT_SANITIZED : reversed ? KV_VARIANT_REVERSED : KV_VARIANT_PLAIN;
    enum kv_status st = KV_OK;
    const struct kv_kernel *k = c->k;
    void *kept[KV_MAX_TENSORS][2] = {{0}};
    int any = 0, covered = 1, mark[KV_MAX_STAGES];
    size_t keep = 0;
    *clear = 0;
    marked(k, res, from, mark); /* then: the stages with a loop-cut build, whose counts are read */
    for (int s = 0; s < k->n_stages; s++) {
        if (!run_stage[s] || !mark[s]) continue;
        int at;
        KV_TRY(kv_runner_loops(r, c, s, variant, &at));
        const int built = kv_runner_pipe(r, c, s, variant) != kv_runner_pipe(r, c, s, as_run);
        any |= built;
        covered &= built || r->loops_tried[s][at] == 2;
        mark[s] = built;
    }
    for (int t = 0; t < k->n_tensors; t++)
        for (int ch = 0; ch < 2; ch++) keep += written(c, p, run_stage, t, ch) ? padded(p, t, ch) : 0;
    int clear_before = 1; /* every failing run of the case before this one was checked and counted no cut */
    for (int i = 0; i < from; i++) clear_before &= res->out[i].pass || res->loops_checked;
    unsigned long long n = 0;
    if (any && keep <= KV_LOOPS_KEEP) { /* else no loop to cut (the failure is the kernel's), or too large to check */
        KV_TRY(buffers(r, k, p));
        for (int t = 0; t < k->n_tensors; t++) /* the checked run's outputs, put back after */
            for (int ch = 0; ch < 2; ch++)
                if (written(c, p, run_stage, t, ch)) {
                    kept[t][ch] = malloc(padded(p, t, ch));
                    KV_CHECK(kept[t][ch], KV_EDEVICE, "out of host memory");
                    memcpy(kept[t][ch], kv_plan_download(p, t, ch), padded(p, t, ch));
                }
        double ms[KV_MAX_STAGES], up, down;
        char first[160];
        KV_TRY(kv_plan_run(r, c, p, run_stage, chain_stage, sr ? sr->cap : 0, variant, ms, NULL, &up, &down));
        n = cut_count(k, p, mark, chain_stage, sr, first, sizeof first);
        if (put_back(c, p, kept) && n)
            st = kv_error(KV_EDEVICE,
                          "%s: %s ends every loop of a shader invocation after %u iterations in all, without an "
                          "error, and cut the loops of %llu invocation%s short here (%s first): a loop that long, or "
                          "one that never ends, cannot be judged on this device; run the case on another device to "
                          "tell", c->name, r->d->info.name, r->d->info.loop_cap, n, n == 1 ? "" : "s", first);
    }
    *clear = covered && !n && (any ? keep <= KV_LOOPS_KEEP : 1);
    res->loops_checked = clear_before && *clear;
cleanup:
    for (int t = 0; t < KV_MAX_TENSORS; t++) free(kept[t][0]), free(kept[t][1]);
    return st;
}
