/* The team one thread smaller while a thread of kverify's own works beside
 * it, and its size as it was afterwards: from 4 threads on, never below 3,
 * a second call changing nothing, on the calling thread alone. */
#include <omp.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/threads.h"

static void *other(void *arg)
{
    int *seen = arg;
    omp_set_num_threads(6);
    kv_threads_beside(0); /* nothing to restore on this thread */
    seen[0] = omp_get_max_threads();
    kv_threads_beside(1);
    seen[1] = omp_get_max_threads();
    kv_threads_beside(0);
    seen[2] = omp_get_max_threads();
    return NULL;
}

static void one_fewer_then_back(void **s)
{
    (void)s;
    omp_set_num_threads(8);
    kv_threads_beside(1);
    assert_int_equal(omp_get_max_threads(), 7);
    kv_threads_beside(1); /* already beside */
    assert_int_equal(omp_get_max_threads(), 7);
    int team = 0;
#pragma omp parallel
#pragma omp single
    team = omp_get_num_threads();
    assert_true(team <= 7);
    int seen[3] = {0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, other, seen), 0);
    pthread_join(th, NULL);
    assert_true(seen[0] == 6 && seen[1] == 5 && seen[2] == 6);
    assert_int_equal(omp_get_max_threads(), 7); /* the other thread's calls left this one's alone */
    kv_threads_beside(0);
    assert_int_equal(omp_get_max_threads(), 8);
    kv_threads_beside(0); /* once only */
    assert_int_equal(omp_get_max_threads(), 8);
    for (int n = 1; n <= 4; n++) { /* below 4, the team keeps its threads */
        omp_set_num_threads(n);
        kv_threads_beside(1);
        assert_int_equal(omp_get_max_threads(), n < 4 ? n : 3);
        kv_threads_beside(0);
        assert_int_equal(omp_get_max_threads(), n);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(one_fewer_then_back)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
