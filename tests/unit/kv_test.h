/* Helpers shared by the unit tests. Include after cmocka.h. */
#ifndef KV_TEST_H
#define KV_TEST_H

#include "kernels/kernel.h"

/* A case of `kernel` with `params` ("k=v,..."), its tensors allocated and
 * inputs generated from seed, as the runner does. */
static inline const struct kv_kernel *kv_test_inputs(struct kv_case *c, const char *kernel, const char *params,
                                                     uint64_t seed)
{
    const struct kv_kernel *k = kv_kernel_find(kernel);
    assert_non_null(k);
    assert_int_equal(kv_case_init(c, k, seed), KV_OK);
    assert_int_equal(kv_param_apply(c, params), KV_OK);
    assert_int_equal(kv_case_shapes(c), KV_OK);
    assert_int_equal(kv_case_alloc(c), KV_OK);
    assert_int_equal(k->inputs(c), KV_OK);
    return k;
}

/* kv_test_inputs, then the oracle run. */
static inline const struct kv_kernel *kv_test_case(struct kv_case *c, const char *kernel, const char *params,
                                                   uint64_t seed)
{
    const struct kv_kernel *k = kv_test_inputs(c, kernel, params, seed);
    assert_int_equal(k->oracle(c), KV_OK);
    return k;
}

#endif
