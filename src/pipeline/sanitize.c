#include "pipeline/sanitize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/abi_stage.h"

struct names {
    const struct kv_kernel *k;
    const struct kv_runner *r;
    int s;
    char buf[96];
};

/* The tensor at a binding of stage s, for a reason. */
static const char *binding_name(const void *ctx, int binding)
{
    struct names *n = (struct names *)ctx;
    const struct kv_abi *a = n->r->abi[n->s];
    const struct kv_stage_def *sd = &n->k->stages[n->s];
    const char *name = NULL;
    if (!a && binding < sd->n_bindings) name = n->k->tensors[sd->bindings[binding]].name;
    for (int i = 0; a && i < a->n_bindings; i++)
        if (a->b[i].binding == (uint32_t)binding && a->b[i].tensor >= 0) name = n->k->tensors[a->b[i].tensor].name;
    if (!name) return "a buffer";
    snprintf(n->buf, sizeof n->buf, "tensor %s", name);
    return n->buf;
}

/* A note on what the sanitized run could not check, once per case. */
static void add_note(struct kv_case_result *res, const char *why)
{
    size_t used = strlen(res->sanitize);
    if (why[0] && !strstr(res->sanitize, why) && used + strlen(why) + 3 < sizeof res->sanitize)
        snprintf(res->sanitize + used, sizeof res->sanitize - used, "%s%s", used ? "; " : "", why);
}

/* The rows of one stage's records. */
static int stage_rows(struct kv_runner *r, int s, int pass, const uint32_t *buf, struct kv_case_result *res,
                      unsigned *shown)
{
    struct kv_san_result sr;
    const struct kv_san_module *m = r->san_mod[s];
    kv_san_read(m, buf, &sr);
    int clean = 1;
    struct names nm = {r->k, r, s, ""};
    char stage[80];
    snprintf(stage, sizeof stage, "%s%s", r->k->stages[s].name, pass ? " (chained)" : "");
    int unlinear = m->subgroup_epochs && (sr.flags & KV_SAN_FLAG_SUBGROUPS);
    if (unlinear) {
        char why[160];
        snprintf(why, sizeof why, "stage %s: racecheck off: this device's subgroups are not consecutive local "
                 "invocation indices", r->k->stages[s].name);
        add_note(res, why);
    }
    if (sr.flags & KV_SAN_FLAG_GLOBAL_OFF) {
        char why[160];
        snprintf(why, sizeof why, "stage %s: racecheck-global off: its storage buffers need more than %u shadow words",
                 r->k->stages[s].name, KV_SAN_GLOBAL_MAX);
        add_note(res, why);
    }
    for (int kind = 0; kind < KV_SAN_KINDS; kind++) {
        if (!sr.count[kind] || (kind == KV_SAN_RACECHECK && unlinear)) continue;
        clean = 0;
        /* the chained rerun's records of a kind the isolated run has shown already add nothing */
        if ((*shown & (1u << kind)) || res->n_outputs >= (int)KV_COUNT(res->out)) continue;
        *shown |= 1u << kind;
        struct kv_output_result *out = &res->out[res->n_outputs++];
        memset(out, 0, sizeof *out);
        snprintf(out->name, sizeof out->name, "%s", kv_san_kind_name(kind));
        out->stage = r->k->stages[s].name;
        out->source = "device";
        out->oracle = "sanitizer";
        out->judged = 1;
        out->sanitizer = kv_san_kind_name(kind);
        out->total = (size_t)sr.count[kind];
        kv_san_reason(m, &sr, kind, stage, binding_name, &nm, out->remark, sizeof out->remark);
    }
    return clean;
}

int kv_sanitize_rows(struct kv_runner *r, struct kv_case *c, struct kv_plan *p, const int *run_stage,
                     const int *chain_stage, struct kv_case_result *res)
{
    int clean = 1;
    for (int s = 0; s < c->k->n_stages; s++) {
        if (!run_stage[s]) continue;
        char why[400] = "";
        if (r->san_missing[s][0]) snprintf(why, sizeof why, "%s", r->san_missing[s]);
        else if (r->san_mod[s] && r->san_mod[s]->note[0])
            snprintf(why, sizeof why, "stage %s: %s", c->k->stages[s].name, r->san_mod[s]->note);
        add_note(res, why);
        if (!r->san[s].pipeline) continue;
        unsigned shown = 0;
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 1 && !chain_stage[s]) continue;
            const uint32_t *buf = (const uint32_t *)((const char *)p->san_down.map + (size_t)(2 * s + pass) * KV_SAN_SLOT);
            clean &= stage_rows(r, s, pass, buf, res, &shown);
        }
    }
    return clean;
}
