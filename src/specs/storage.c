/* Which of a spec's arrays the evaluator stores (spec.h, kv_spec_storage):
 * a math temp computed element by element and read only where each of its
 * elements is read about once is computed where it is read instead (no
 * array of it is held), and so is such an output that only statements of
 * its own stage read; an output no statement reads, or read only so, is
 * made block by block as it is judged, or holds only the elements --sample
 * verifies, unless BLAS makes it whole (a product of two inputs). */
#include <stdlib.h>

#include "specs/contract.h"
#include "specs/spec.h"

/* e holds no reduction, and every array it reads is indexed by plain
 * variables (no index can fall outside its array: bind checks the extents). */
static int pointwise(const struct kv_sx *e)
{
    if (!e) return 1;
    if (e->op == KV_SX_SUM || e->op == KV_SX_RMAX || e->op == KV_SX_RMIN) return 0;
    if (e->op == KV_SX_FUNC && (e->ref == KV_FN_NORMAL || e->ref == KV_FN_UNIFORM)) return 0;
    for (int i = 0; i < e->n; i++) {
        if (e->op == KV_SX_ACCESS && e->kid[i]->op != KV_SX_VAR) return 0;
        if (!pointwise(e->kid[i])) return 0;
    }
    return 1;
}

/* Every read of symbol y in e, where live index variables are bound, has at
 * most ndim of them: no read repeats y's elements along a variable that does
 * not index it (a broadcast, which recomputing would multiply). */
static int read_unbroadcast(const struct kv_sx *e, int y, int live, int ndim)
{
    if (!e) return 1;
    if (e->op == KV_SX_ACCESS && e->ref == y && live > ndim) return 0;
    const int body = e->op == KV_SX_SUM || e->op == KV_SX_RMAX || e->op == KV_SX_RMIN ? 2 : -1;
    for (int i = 0; i < e->n; i++)
        if (!read_unbroadcast(e->kid[i], y, live + (i == body), ndim)) return 0;
    return 1;
}

int kv_spec_read_by_other_stage(const struct kv_spec *s, int y)
{
    for (int i = 0; i < s->n_stmts; i++)
        if (!s->stmt[i].prepare && s->sym[s->stmt[i].sym].stage != s->sym[y].stage && kv_sx_reads(s->stmt[i].rhs, y))
            return 1;
    return 0;
}

void kv_spec_storage(struct kv_spec *s)
{
    const int store_all = getenv("KVERIFY_TEST_STORE_TEMPS") != NULL; /* tests: every temp held, as before */
    for (int y = 0; y < s->n_syms; y++) {
        struct kv_spec_sym *sy = &s->sym[y];
        sy->virt = 0;
        if (sy->stmt < 0 || store_all) continue;
        /* an output too, where only statements of its own stage read it (a
         * later stage reads it rounded, isolated) and BLAS does not make it:
         * computed where read, and judged block by block as it is made */
        if (sy->tensor >= 0 && (s->tensors[sy->tensor].role != KV_OUTPUT || kv_spec_read_by_other_stage(s, y) ||
                                kv_ev_contract_form(s, &s->stmt[sy->stmt])))
            continue;
        const struct kv_spec_stmt *st = &s->stmt[sy->stmt];
        int ok = !st->prepare && pointwise(st->rhs);
        for (int v = 0; ok && v < st->n_target; v++) ok = !st->ext[v][0];
        for (int i = 0; ok && i < s->n_stmts; i++)
            ok = read_unbroadcast(s->stmt[i].rhs, y, s->stmt[i].n_target, sy->ndim);
        sy->virt = ok;
    }
    s->k.sample_outputs = 0;
    for (int t = 0; t < s->k.n_tensors; t++) {
        int read = 0;
        for (int i = 0; i < s->n_stmts && !read; i++) read = kv_sx_reads(s->stmt[i].rhs, t);
        /* a product of two inputs stays whole: BLAS makes it (contract.h) */
        const int blas = s->sym[t].stmt >= 0 && kv_ev_contract_form(s, &s->stmt[s->sym[t].stmt]);
        if (s->tensors[t].role == KV_OUTPUT && (!read || s->sym[t].virt) && !blas) s->k.sample_outputs |= 1ull << t;
    }
}
