#include "core/threads.h"

#include <omp.h>

static _Thread_local int saved; /* this thread's team size before beside(1); 0: none */

void kv_threads_beside(int beside)
{
    if (beside && !saved) {
        saved = omp_get_max_threads();
        if (saved >= 4) omp_set_num_threads(saved - 1);
    } else if (!beside && saved) {
        omp_set_num_threads(saved);
        saved = 0;
    }
}

int kv_threads_least(void)
{
    const int n = saved ? saved : omp_get_max_threads();
    return n >= 4 ? n - 1 : n;
}
