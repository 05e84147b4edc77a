/* A job's cases: built from its options and given files (validated before
 * any device work), and freed; the options' defaults. */
#include <stdlib.h>
#include <string.h>

#include "pipeline/jobs.h"

#include "pipeline/hostmem.h"

uint64_t kv_kopts_seeds(const struct kv_kernel *k, const struct kopts *o)
{
    return o->seeds_given ? o->seeds : o->sweep ? (uint64_t)k->sweep_seeds : 1;
}

/* Build every case (validated, before any device work). */
static enum kv_status build_cases(const struct kv_kernel *k, const struct kopts *o, const struct kv_given *g,
                                  struct kv_case **out, size_t *n)
{
    enum kv_status st = KV_OK;
    const char *const none[] = {"", NULL};
    const char *const *shapes = o->sweep ? k->sweep : none;
    size_t n_shapes = 0;
    while (shapes[n_shapes]) n_shapes++;
    const uint64_t seeds = kv_kopts_seeds(k, o);
    *n = 0;
    *out = calloc(n_shapes * seeds, sizeof **out);
    KV_CHECK(*out, KV_EUSAGE, "too many cases");
    for (size_t s = 0; s < n_shapes; s++)
        for (uint64_t j = 0; j < seeds; j++) {
            struct kv_case *c = &(*out)[(*n)++];
            KV_TRY(kv_case_init(c, k, o->seed + j));
            int explicit_param[KV_MAX_PARAMS] = {0};
            for (int i = 0; i < k->n_params; i++)
                if (o->set[i]) {
                    KV_TRY(kv_param_set(c, i, o->set[i]));
                    explicit_param[i] = 1;
                }
            if (shapes[s][0]) KV_TRY(kv_param_apply(c, shapes[s]));
            if (g->n) {
                KV_TRY(kv_given_apply(g, c, explicit_param, o->seed_given));
                c->seed += j; /* a fixture's seed starts the range */
            }
            kv_case_name(c);
            KV_TRY(kv_case_check(c, NULL, NULL, 1));
        }
cleanup:
    return st;
}

enum kv_status kv_job_build(struct kv_job *j)
{
    enum kv_status st = KV_OK;
    if (j->o.inputs) KV_TRY(kv_given_inputs(j->k, j->o.inputs, &j->given));
    for (int i = 0; i < j->o.n_candidates; i++) KV_TRY(kv_given_candidate(j->k, j->o.candidate[i], &j->given));
    KV_TRY(build_cases(j->k, &j->o, &j->given, &j->cases, &j->n_cases));
    /* An output without a candidate runs on the device; with --no-device it
     * is listed as not judged (at least one output must have a candidate,
     * unless --save only writes the case: its inputs and its oracle). */
    for (size_t i = 0; i < j->n_cases; i++) {
        int any = 0;
        for (int t = 0; t < j->k->n_tensors; t++) {
            const struct kv_kernel *k = j->k;
            if (k->tensors[t].role != KV_OUTPUT || !kv_tensor_on(&j->cases[i], t)) continue;
            any |= j->cases[i].given[t] != NULL;
            if (!j->cases[i].given[t] && !j->o.no_device) j->need_device = 1;
        }
        KV_CHECK(any || !j->o.no_device || j->o.run.save_dir, KV_EUSAGE,
                 "--no-device: no output has a candidate (--candidate OUTPUT=FILE.npy) and no --save DIR");
    }
cleanup:
    return st;
}

void kv_job_free(struct kv_job *j)
{
    free(j->cases);
    j->cases = NULL;
    for (int s = 0; s < KV_MAX_STAGES; s++) free(j->o.abi[s]), j->o.abi[s] = NULL, j->o.run.abi[s] = NULL;
    j->n_cases = 0;
    kv_given_free(&j->given);
}

void kv_kopts_init(struct kopts *o)
{
    memset(o, 0, sizeof *o);
    kv_criteria_default(&o->run.crit);
    o->run.repeat = 1;
    o->run.bench_warmup_s = 0.5;
    o->seed = 1;
    o->out.regress_factor = 2;
}
