/* Which of a case's outputs feed other stages, and which stages rerun
 * chained on the device's own intermediates (pipeline/chains.h). */
#include "pipeline/chains.h"

/* Whether a stage reads a tensor that another stage produces. */
int kv_consumes_intermediate(const struct kv_kernel *k, int s)
{
    const struct kv_stage_def *sd = &k->stages[s];
    for (int b = 0; b < sd->n_bindings; b++) {
        const struct kv_tensor_def *td = &k->tensors[sd->bindings[b]];
        if (td->role == KV_OUTPUT && td->stage != s) return 1;
    }
    return 0;
}

int kv_is_intermediate(const struct kv_case *c, int t)
{
    const struct kv_kernel *k = c->k;
    if (k->tensors[t].role != KV_OUTPUT || !kv_tensor_on(c, t)) return 0;
    for (int s = 0; s < k->n_stages; s++)
        if (kv_stage_on(c, s) && s != k->tensors[t].stage)
            for (int b = 0; b < k->stages[s].n_bindings; b++)
                if (k->stages[s].bindings[b] == t) return 1;
    return 0;
}

void kv_case_chains(const struct kv_case *c, const struct kv_abi *const *abi, int *run_stage, int *chain_stage)
{
    const struct kv_kernel *k = c->k;
    for (int t = 0; t < k->n_tensors; t++)
        if (kv_tensor_on(c, t) && k->tensors[t].role == KV_OUTPUT && !c->given[t]) run_stage[k->tensors[t].stage] = 1;
    for (int s = 0; s < k->n_stages; s++) {
        chain_stage[s] = run_stage[s] && kv_consumes_intermediate(k, s) && !abi[s]; /* --abi: its own inputs */
        for (int b = 0; chain_stage[s] && b < k->stages[s].n_bindings; b++) {
            const struct kv_tensor_def *td = &k->tensors[k->stages[s].bindings[b]];
            if (td->role == KV_OUTPUT && td->stage != s && !run_stage[td->stage]) chain_stage[s] = 0;
        }
    }
}
