/* The spec layer's limits at 32 bits: a tensor of up to 2^32-1 elements
 * passes validate and one more is refused; the launch rule caps groups.x at
 * 2^31 invocations, so that a shader's grid-stride step (gl_NumWorkGroups.x
 * x local_x) fits a uint, where one group per 256 elements of 2^32-1 would
 * make it 2^32, a step of 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "kv_test.h"
#include "specs/spec.h"

static const char *TEXT =
    "{\"kernel\": \"ew\", \"params\": [{\"name\": \"n\", \"type\": \"int\", \"default\": 1000, \"min\": 1, "
    "\"max\": 8589934592}],"
    " \"tensors\": [{\"name\": \"x\", \"role\": \"input\", \"dtype\": \"f32\", \"shape\": \"n\", \"dist\": \"normal\"},"
    " {\"name\": \"y\", \"role\": \"output\", \"dtype\": \"bf16\", \"shape\": \"n\"}],"
    " \"math\": [\"y[i] = 2 * x[i]\"], \"stages\": [{\"name\": \"s\", \"shader\": \"s.comp\", \"push\": [\"n\"]}]}";

/* Case n of s validated (its status) and, where valid, launched on a device
 * of group-count limit max_x with 256 invocations a group. */
static enum kv_status launch(struct kv_spec *s, int64_t n, uint32_t max_x, uint32_t groups[3], uint32_t *push)
{
    struct kv_case c;
    assert_int_equal(kv_case_init(&c, &s->k, 1), KV_OK);
    c.p[0].i = n;
    enum kv_status st = kv_case_shapes(&c); /* the counts and validate: nothing is allocated */
    if (st == KV_OK) {
        const uint32_t local[3] = {256, 1, 1}, max[3] = {max_x, 65535, 65535};
        s->k.stages[0].launch(&c, local, max, push, groups);
    }
    kv_case_free(&c);
    return st;
}

static void test_limits(void **st)
{
    (void)st;
    struct kv_spec *s = NULL;
    assert_int_equal(kv_spec_parse("ew", TEXT, strlen(TEXT), 1, &s), KV_OK);
    uint32_t g[3], push[4];
    const uint32_t gpu = 2147483647u; /* an NVIDIA device's maxComputeWorkGroupCount.x */
    /* one group per 256 elements while that stays within 2^31 invocations */
    assert_int_equal(launch(s, 1000, gpu, g, push), KV_OK);
    assert_true(g[0] == 4 && g[1] == 1 && g[2] == 1 && push[0] == 1000);
    assert_int_equal(launch(s, 2147483648, gpu, g, push), KV_OK); /* 2^31: 2^23 groups */
    assert_true(g[0] == 1u << 23 && push[0] == 2147483648u);
    /* 2^32-1 elements: 2^24 groups would make the step 2^32; capped at 2^23 */
    assert_int_equal(launch(s, 4294967295, gpu, g, push), KV_OK);
    assert_true(g[0] == 1u << 23 && push[0] == 4294967295u);
    assert_true((uint64_t)g[0] * 256 <= 1u << 31);
    /* the device's own limit where it is lower (lavapipe's 65535) */
    assert_int_equal(launch(s, 4294967295, 65535, g, push), KV_OK);
    assert_int_equal(g[0], 65535);
    /* one element more than a 32-bit index reaches: refused, naming the tensor */
    assert_int_equal(launch(s, 4294967296, gpu, g, push), KV_EUSAGE);
    assert_non_null(strstr(kv_error_msg(), "ew: tensor x has 4294967296 elements, more than 2^32-1"));
    /* the x cap is 2^31 invocations whatever the group's size */
    assert_int_equal(kv_spec_max_x(gpu, 64), 1u << 25);
    assert_int_equal(kv_spec_max_x(gpu, 1024), 1u << 21);
    assert_int_equal(kv_spec_max_x(1000, 1024), 1000);
    kv_spec_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_limits)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
