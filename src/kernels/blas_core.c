#include "kernels/blas_core.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

/* Set for the second start: the kernels OpenBLAS chose at the first. */
#define REPLACED "KVERIFY_BLAS_REPLACED"

const char *kv_blas_core(void)
{
    static char name[96];
    const char *c = openblas_get_corename(), *was = getenv(REPLACED);
    if (!name[0])
        snprintf(name, sizeof name, "%s%s%s%s", c ? c : "unknown", was ? " (in place of " : "", was ? was : "",
                 was ? ", OpenBLAS's choice)" : "");
    return name;
}

const char *kv_blas_core_instead(const char *core, int avx512, int avx2)
{
    if (!core || strcasecmp(core, "Prescott") != 0) return NULL;
    return avx512 ? "SkylakeX" : avx2 ? "Haswell" : NULL;
}

void kv_blas_core_fit(char **argv)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (getenv("OPENBLAS_CORETYPE")) return; /* the user's choice, or this process's second start */
    const char *core = getenv("KVERIFY_TEST_BLAS_CORE");
    __builtin_cpu_init();
    const int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                       __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    const int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (!core || !*core) core = openblas_get_corename();
    const char *want = kv_blas_core_instead(core, avx512, avx2);
    if (!want || setenv("OPENBLAS_CORETYPE", want, 1) || setenv(REPLACED, core, 1)) return;
    execv("/proc/self/exe", argv);
    unsetenv("OPENBLAS_CORETYPE"), unsetenv(REPLACED); /* not run again: the generic kernels, as before */
#else
    (void)argv;
#endif
}
