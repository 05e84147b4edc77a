/* The monotonic clock every timing in kverify reads. */
#include "core/clock.h"

#include <time.h>

double kv_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
