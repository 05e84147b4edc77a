#include "kernels/blas_core.h"

#include <cblas.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#include "core/threads.h"

/* Set for the second start: the kernels OpenBLAS chose at the first, and
 * the threads its pthreads build would have run each call on. */
#define REPLACED "KVERIFY_BLAS_REPLACED"
#define THREADS "KVERIFY_BLAS_THREADS"

const char *kv_blas_core(void)
{
    static char name[192]; /* the longest: a core name, another, and a thread count */
    const char *c = openblas_get_corename(), *was = getenv(REPLACED), *th = getenv(THREADS);
    if (!name[0])
        snprintf(name, sizeof name, "%s%s%s%s%s%s%s", c ? c : "unknown", was ? " (in place of " : "", was ? was : "",
                 was ? ", OpenBLAS's choice)" : "", th ? ", one thread a call (in place of its own " : "",
                 th ? th : "", th ? ")" : "");
    return name;
}

const char *kv_blas_core_instead(const char *core, int avx512, int avx2)
{
    if (!core || strcasecmp(core, "Prescott") != 0) return NULL;
    return avx512 ? "SkylakeX" : avx2 ? "Haswell" : NULL;
}

int kv_blas_threads_instead(int parallel, const char *user)
{
    return parallel == 1 && !(user && *user);
}

/* The kernels to ask for instead of OpenBLAS's choice, or NULL: none where
 * OPENBLAS_CORETYPE is set (the user's choice, or this process's second
 * start). */
static const char *core_instead(const char **core)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (getenv("OPENBLAS_CORETYPE")) return NULL;
    *core = getenv("KVERIFY_TEST_BLAS_CORE");
    __builtin_cpu_init();
    const int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                       __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    const int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (!*core || !**core) *core = openblas_get_corename();
    return kv_blas_core_instead(*core, avx512, avx2);
#else
    (void)core;
    return NULL;
#endif
}

void kv_blas_core_fit(char **argv)
{
    const char *core = NULL, *want = core_instead(&core), *par = getenv("KVERIFY_TEST_BLAS_PARALLEL");
    const char *user = getenv("OPENBLAS_NUM_THREADS");
    if (!user || !*user) user = getenv("GOTO_NUM_THREADS");
    const int threads = kv_blas_threads_instead(par && *par ? atoi(par) : openblas_get_parallel(), user);
    if (!want && !threads) return;
    char own[16];
    snprintf(own, sizeof own, "%d", openblas_get_num_threads());
    if ((!want || (!setenv("OPENBLAS_CORETYPE", want, 1) && !setenv(REPLACED, core, 1))) &&
        (!threads || (!setenv("OPENBLAS_NUM_THREADS", "1", 1) && !setenv(THREADS, own, 1))))
        execv("/proc/self/exe", argv);
    /* not run again: OpenBLAS as it loaded, as before */
    if (want) unsetenv("OPENBLAS_CORETYPE"), unsetenv(REPLACED);
    if (threads) unsetenv("OPENBLAS_NUM_THREADS"), unsetenv(THREADS);
}

/* Rows a call: a multiple of the row tiles of OpenBLAS's x86-64 dgemm
 * kernels (4 to 48), so that each element's sum is made by the same kernel
 * tile in the same order whatever the number of threads (checked with the
 * SkylakeX, Cooperlake and Haswell kernels: the same reports on 1 to 16
 * threads; cut where the threads split the rows, they differed). */
#define ROWS_A_CALL 96

void kv_dgemm_rows(int transx, int transy, int rows, int cols, int red, const double *x, int ldx, const double *y,
                   int ldy, double *c, int ldc)
{
    const int blocks = (int)(((int64_t)rows + ROWS_A_CALL - 1) / ROWS_A_CALL);
#pragma omp parallel for schedule(dynamic, 1)
    for (int b = 0; b < blocks; b++) {
        const int r0 = b * ROWS_A_CALL, r1 = rows - r0 < ROWS_A_CALL ? rows : r0 + ROWS_A_CALL;
        /* Row r of op(X) starts at x + r*ldx (no transpose) or x + r (transposed). */
        const double *xb = transx ? x + r0 : x + (size_t)r0 * ldx;
        cblas_dgemm(CblasRowMajor, transx ? CblasTrans : CblasNoTrans, transy ? CblasTrans : CblasNoTrans, r1 - r0,
                    cols, red, 1.0, xb, ldx, y, ldy, 0.0, c + (size_t)r0 * ldc, ldc);
    }
}

unsigned long long kv_dgemm_rows_t2_host(int rows, int red)
{
    /* a thread's arrays are written only where it takes a block: at most one
     * thread a block, and at least the smallest team's threads where there
     * are more blocks (the team is one smaller beside the device's opening) */
    const unsigned long long width = rows < ROWS_A_CALL ? (unsigned long long)rows : ROWS_A_CALL;
    const unsigned long long blocks = ((unsigned long long)rows + ROWS_A_CALL - 1) / ROWS_A_CALL;
    const unsigned long long team = (unsigned long long)kv_threads_least();
    return (blocks < team ? blocks : team) * 2 * sizeof(double) * (unsigned long long)red * width;
}

enum kv_status kv_dgemm_rows_t2(int rows, int cols, int red, void (*widen)(const void *ctx, int r0, int r1, double *v,
                                                                           double *a),
                                const void *ctx, const double *y1, const double *y2, int ldy, double *c1,
                                double *c2, int ldc)
{
    const int blocks = (int)(((int64_t)rows + ROWS_A_CALL - 1) / ROWS_A_CALL);
    int oom = 0;
#pragma omp parallel
    {
        const size_t width = rows < ROWS_A_CALL ? (size_t)rows : ROWS_A_CALL;
        double *v = malloc((size_t)red * width * sizeof *v), *a = malloc((size_t)red * width * sizeof *a);
        if (!v || !a) {
#pragma omp atomic write
            oom = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (int b = 0; b < blocks; b++) {
            if (!v || !a) continue;
            const int r0 = b * ROWS_A_CALL, r1 = rows - r0 < ROWS_A_CALL ? rows : r0 + ROWS_A_CALL, w = r1 - r0;
            widen(ctx, r0, r1, v, a);
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, w, cols, red, 1.0, v, w, y1, ldy, 0.0,
                        c1 + (size_t)r0 * ldc, ldc);
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, w, cols, red, 1.0, a, w, y2, ldy, 0.0,
                        c2 + (size_t)r0 * ldc, ldc);
        }
        free(v);
        free(a);
    }
    return oom ? kv_error(KV_EDEVICE, "out of host memory for a product's blocks (%d x %d doubles a thread)", red,
                          rows < ROWS_A_CALL ? rows : ROWS_A_CALL)
               : KV_OK;
}
