/* Matrix products among a spec's statements, by BLAS (contract.c). */
#ifndef KV_SPEC_CONTRACT_H
#define KV_SPEC_CONTRACT_H

#include "specs/ev_ops.h"

/* 1 when statement i of x is the product of two inputs and was evaluated
 * into its target's parts (*st: KV_OK or out of memory), 0 when it is not
 * such a statement (nothing done). */
int kv_ev_contract(struct kv_ev *x, int i, enum kv_status *st);

/* Whether statement s has the form kv_ev_contract evaluates: a sum over k
 * from 0 of a product of two 2-D inputs indexed by the target's indices and
 * k (whether it applies also takes their dtypes and extents). */
int kv_ev_contract_form(const struct kv_spec *sp, const struct kv_spec_stmt *s);

#endif
