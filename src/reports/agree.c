/* Agreement between devices (--device all): for each case run on several
 * devices, each output of the first device against the same output of each
 * other: elements bitwise equal, and the largest distance in ULP of the
 * output's dtype. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report.h"

/* The case's name without its "@device" suffix. */
static size_t base_len(const char *name)
{
    const char *at = strrchr(name, '@');
    return at ? (size_t)(at - name) : strlen(name);
}

static void compare(const struct kv_output_result *a, const struct kv_output_result *b, struct kv_agreement *g)
{
    size_t n = a->m.elements < a->total ? a->m.elements : a->total, es = kv_dtype_info(a->dtype)->size;
    g->elements = n;
    for (size_t i = 0; i < n; i++) {
        if (!memcmp((const char *)a->data + i * es, (const char *)b->data + i * es, es)) {
            g->equal++;
            continue;
        }
        double x = kv_load_f64(a->dtype, a->data, i), y = kv_load_f64(a->dtype, b->data, i);
        double d = isnan(x) && isnan(y) ? 0 : isnan(x) || isnan(y) || isinf(x) || isinf(y) ? INFINITY
                                                                                              : fabs(x - y) / kv_ulp(a->dtype, y);
        if (d > g->max_ulp) g->max_ulp = d;
    }
}

enum kv_status kv_report_agreement(struct kv_report *r)
{
    for (size_t i = 0; i < r->n; i++) {
        const struct kv_case_result *a = &r->cases[i];
        if (a->device != 0) continue;
        for (size_t j = 0; j < r->n; j++) {
            const struct kv_case_result *b = &r->cases[j];
            if (b->device == 0 || base_len(a->name) != base_len(b->name) || strncmp(a->name, b->name, base_len(a->name)))
                continue;
            for (int p = 0; p < a->n_outputs; p++)
                for (int q = 0; q < b->n_outputs; q++) {
                    const struct kv_output_result *x = &a->out[p], *y = &b->out[q];
                    if (!x->data || !y->data || strcmp(x->name, y->name) || x->total != y->total || x->dtype != y->dtype)
                        continue;
                    struct kv_agreement *g = realloc(r->agree, (r->n_agree + 1) * sizeof *g);
                    if (!g) return kv_error(KV_EDEVICE, "out of host memory");
                    r->agree = g;
                    g = &r->agree[r->n_agree++];
                    memset(g, 0, sizeof *g);
                    snprintf(g->case_name, sizeof g->case_name, "%.*s", (int)base_len(a->name), a->name);
                    snprintf(g->output, sizeof g->output, "%s", x->name);
                    g->device_a = r->devices[a->device].index, g->device_b = r->devices[b->device].index;
                    compare(x, y, g);
                }
        }
    }
    return KV_OK;
}

void kv_table_agreement(FILE *f, const struct kv_report *r)
{
    if (!r->n_agree) return;
    fprintf(f, "agreement between devices (bitwise equal elements, largest distance in ULP):\n");
    for (size_t i = 0; i < r->n_agree; i++) {
        const struct kv_agreement *g = &r->agree[i];
        fprintf(f, "  %s %s: device %u vs %u: %zu of %zu equal, max %.3g ULP apart\n", g->case_name, g->output,
                g->device_a, g->device_b, g->equal, g->elements, g->max_ulp);
    }
}
