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
/* Whether output t of case c is judged, in a run with options o, against an
 * oracle made block by block (never held whole), and whether its oracle holds
 * its sampled elements alone (compact; --sample). */
int kv_output_blocked(const struct kv_case *c, int t, const struct kv_run_opts *o);
int kv_output_compact(const struct kv_case *c, int t, const struct kv_run_opts *o);
/* Whether --sample verifies output t at fewer elements than it has. */
int kv_output_sampled(const struct kv_case *c, int t, const struct kv_run_opts *o);
/* Compare data (output t, from `source`) against ref and append a row named
 * <output><suffix> to res. chained adds the allowance for device intermediates. */
enum kv_status kv_compare_row(struct kv_case *c, int t, const struct kv_oracle_ref *ref, const void *data,
                              const char *suffix, int chained, const char *source, size_t guard_bad, size_t nondet,
                              const struct kv_run_opts *o, struct kv_case_result *res);

/* Whether output t's isolated and chained rows against ref may be judged in
 * one pass (kv_compare_pair): its oracle made in blocks that hold the
 * chained row's slack beside the isolated row's (kernel.block_pair), no
 * whole-array allowance, no sample. KVERIFY_TEST_NO_PAIR=1: never (tests
 * compare the two). */
int kv_row_pairable(const struct kv_case *c, int t, const struct kv_oracle_ref *ref);
/* The device's isolated and chained rows of output t (data[0], data[1])
 * judged in one pass, each block of the oracle made once: the first row
 * appended to res, the second written to *chained for the caller to append
 * in its place. The rows are the ones kv_compare_row makes. */
enum kv_status kv_compare_pair(struct kv_case *c, int t, const struct kv_oracle_ref *ref, const void *const data[2],
                               const size_t guard_bad[2], const size_t nondet[2], const struct kv_run_opts *o,
                               struct kv_case_result *res, struct kv_output_result *chained);
/* The remark on the last row of res (output t, a candidate): judged with
 * the oracle's intermediates where it has no candidate for them. */
void kv_row_isolation_remark(const struct kv_case *c, int t, struct kv_case_result *res);

#endif
