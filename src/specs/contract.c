/* A statement that is a matrix product of two inputs,
 *   T[i, j] = sum(k in 0..K, X[i or k, k or i] * Y[j or k, k or j]),
 * evaluated by BLAS (OpenBLAS's dgemm in row blocks, kv_dgemm_rows, as the
 * built-in gemm oracle) instead of the lanes: the values, and the magnitudes
 * as a second product, from which the rest follows exactly as the
 * evaluator's rules give it (inputs carry no error; each product rounds
 * once, u|x*y|; the sum adds lambda*sqrt(K)*u*sum|x*y|). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "kernels/blas_core.h"
#include "specs/contract.h"

/* Which of e's two indices is variable v: 0, 1, or -1 when neither or e is
 * not a 2-D access with plain variables. */
static int slot_of(const struct kv_sx *e, int v)
{
    if (e->op != KV_SX_ACCESS || e->n != 2 || e->kid[0]->op != KV_SX_VAR || e->kid[1]->op != KV_SX_VAR) return -1;
    return e->kid[0]->ref == v ? 0 : e->kid[1]->ref == v ? 1 : -1;
}

/* Operand e as a row-major [outer, K] matrix of doubles and its magnitudes. */
static int widen(const struct kv_ev_arr *a, int k_slot, double **val, double **mag)
{
    const int64_t rows = a->shape[1 - k_slot], K = a->shape[k_slot];
    *val = malloc((size_t)(rows * K) * sizeof(double));
    *mag = malloc((size_t)(rows * K) * sizeof(double));
    if (!*val || !*mag) return -1;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < K; k++) {
            size_t src = (size_t)(k_slot == 1 ? r * K + k : k * rows + r);
            double v = kv_load_f64(a->dtype, a->raw, src);
            (*val)[r * K + k] = v, (*mag)[r * K + k] = fabs(v);
        }
    return 0;
}

int kv_ev_contract_form(const struct kv_spec *sp, const struct kv_spec_stmt *s)
{
    const struct kv_sx *e = s->rhs;
    if (s->n_target != 2 || e->op != KV_SX_SUM || e->kid[0]->op != KV_SX_NUM || e->kid[0]->num != 0) return 0;
    const struct kv_sx *m = e->kid[2];
    if (m->op != KV_SX_MUL) return 0;
    const struct kv_sx *X = m->kid[0], *Y = m->kid[1];
    if (slot_of(X, e->ref) < 0 || slot_of(Y, e->ref) < 0) return 0;
    const int tx = sp->sym[X->ref].tensor, ty = sp->sym[Y->ref].tensor;
    return tx >= 0 && ty >= 0 && sp->tensors[tx].role == KV_INPUT && sp->tensors[ty].role == KV_INPUT;
}

int kv_ev_contract(struct kv_ev *x, int i, enum kv_status *st)
{
    const struct kv_spec_stmt *s = &x->s->stmt[i];
    if (!kv_ev_contract_form(x->s, s)) return 0;
    const struct kv_sx *e = s->rhs, *X = e->kid[2]->kid[0], *Y = e->kid[2]->kid[1];
    const int kv = e->ref;
    int xk = slot_of(X, kv), yk = slot_of(Y, kv);
    const struct kv_ev_arr *ax = &x->arr[X->ref], *ay = &x->arr[Y->ref];
    if (!ax->raw || !ay->raw || !kv_dtype_info(ax->dtype)->is_float || !kv_dtype_info(ay->dtype)->is_float) return 0;
    /* X holds target index 0, Y target index 1 (or the other way round) */
    const int xo = X->kid[1 - xk]->ref, yo = Y->kid[1 - yk]->ref;
    if (!((xo == 0 && yo == 1) || (xo == 1 && yo == 0))) return 0;
    const int64_t K = ax->shape[xk];
    if (ay->shape[yk] != K) return 0;
    double hi;
    struct kv_ev_arr *t = &x->arr[s->sym];
    /* the range must be the whole of K, a constant of the case */
    if (e->kid[1]->op == KV_SX_NUM) hi = e->kid[1]->num;
    else if (e->kid[1]->op == KV_SX_PARAM) hi = x->param[e->kid[1]->ref];
    else return 0;
    if (hi != (double)K) return 0;
    if (xo == 1) { /* T[i, j] with X holding j: swap the operands */
        const struct kv_ev_arr *tmp = ax;
        ax = ay, ay = tmp;
        int tk = xk;
        xk = yk, yk = tk;
    }
    double *xv = NULL, *xm = NULL, *yv = NULL, *ym = NULL;
    const int64_t R = t->shape[0], C = t->shape[1];
    if (widen(ax, xk, &xv, &xm) || widen(ay, yk, &yv, &ym)) {
        *st = kv_error(KV_EDEVICE, "out of host memory for a product in %s", x->s->path);
    } else {
        double *v = t->part[KV_EV_V], *S = t->part[KV_EV_S];
        kv_dgemm_rows(0, 1, (int)R, (int)C, (int)K, xv, (int)K, yv, (int)K, v, (int)C);
        if (!t->values_only) { /* a prepare statement's: its value alone */
            kv_dgemm_rows(0, 1, (int)R, (int)C, (int)K, xm, (int)K, ym, (int)K, S, (int)C);
            const double u = x->u, lam = K > 1 ? sqrt((double)K) * u : 0;
#pragma omp parallel for schedule(static)
            for (size_t n = 0; n < t->count; n++) {
                const double a = S[n];
                t->part[KV_EV_LAM][n] = lam * a, t->part[KV_EV_FIX][n] = u * a;
                t->part[KV_EV_CHN][n] = 0, t->part[KV_EV_PK][n] = a;
            }
        }
        *st = KV_OK;
    }
    free(xv), free(xm), free(yv), free(ym);
    return 1;
}
