/* Rows of a case's result (pipeline/run.c): an output compared with an oracle. */
#ifndef KV_ROW_H
#define KV_ROW_H

#include "pipeline/runner.h"

/* The oracle one output is judged against: values, scales, bound, the
 * per-element allowances, name. */
struct kv_oracle_ref {
    const double *y, *S;
    struct kv_bound bound;
    struct kv_allow allow;
    const char *name; /* "spec" or "exact" */
    int check;        /* 1 + j: check j's reference, made in blocks (y and S NULL: kernel.check_block) */
};

/* KVERIFY_TEST_FULL_ORACLE=1: every oracle whole, none made block by block
 * or holding only the sampled elements (tests compare the two). */
int kv_test_full_oracle(void);
/* Compare data (output t, from `source`) against ref and append a row named
 * <output><suffix> to res. chained adds the allowance for device intermediates. */
enum kv_status kv_compare_row(struct kv_case *c, int t, const struct kv_oracle_ref *ref, const void *data,
                              const char *suffix, int chained, const char *source, size_t guard_bad, size_t nondet,
                              const struct kv_run_opts *o, struct kv_case_result *res);

#endif
