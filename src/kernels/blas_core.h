/* Which kernels OpenBLAS, the float64 products' BLAS, chose for this CPU. */
#ifndef KV_BLAS_CORE_H
#define KV_BLAS_CORE_H

#include "core/status.h"

/* The kernels' name (OpenBLAS's openblas_get_corename: "SkylakeX", "Haswell",
 * ...), and where kv_blas_core_fit replaced OpenBLAS's choice, which it was:
 * "SkylakeX (in place of Prescott, OpenBLAS's choice)"; where it asked for
 * one thread a call, the threads it replaced: "Haswell, one thread a call (in
 * place of its own 16)". */
const char *kv_blas_core(void);
/* The kernels to ask for instead of core on a CPU with AVX-512 (F, DQ, BW, VL)
 * or AVX2 and FMA, or NULL to keep core: its generic kernels (Prescott) on a
 * CPU that runs better ones. */
const char *kv_blas_core_instead(const char *core, int avx512, int avx2);
/* Whether to ask OpenBLAS for one thread a call: its pthreads build
 * (openblas_get_parallel() == 1) where the user named no thread count (user:
 * OPENBLAS_NUM_THREADS or GOTO_NUM_THREADS). kverify calls dgemm from each
 * thread of its own OpenMP team (row blocks); that build's own pool would
 * run each call on all cores again, its idle threads spinning beside
 * kverify's (gemm-bwd on a 16-core H200 host, 4096^3: 1.7-2.3 s, 1.0-1.4 s
 * with one thread a call; 1024^3: 0.54-0.68 s, 0.24-0.25 s; the other
 * production cases 5-15% faster). The OpenMP build runs calls inside a
 * parallel region on one thread already. */
int kv_blas_threads_instead(int parallel, const char *user);
/* OpenBLAS picks its kernels by CPU model and starts its threads as it
 * loads; Debian 12's 0.3.21 falls back to its generic kernels on models its
 * build has no kernels for (Cooper Lake, as on cloud GPU hosts): dgemm 4 to 5
 * times slower. There, unless OPENBLAS_CORETYPE is set, and where
 * kv_blas_threads_instead says so, the process runs itself again (argv,
 * once) with OPENBLAS_CORETYPE naming kernels the CPU runs and
 * OPENBLAS_NUM_THREADS=1. Returns where it does not (exec failed, or nothing
 * to change). KVERIFY_TEST_BLAS_CORE and KVERIFY_TEST_BLAS_PARALLEL stand in
 * for the chosen name and openblas_get_parallel() (tests). */
void kv_blas_core_fit(char **argv);

/* C[rows, cols] = op(X) op(Y), row-major (op: transposed where trans*), as
 * blocks of 96 rows handed out to the OpenMP team, one dgemm call a block:
 * the float64 products' one way to BLAS. The blocks do not depend on the
 * number of threads, and so neither do the values (blocks cut where the
 * threads split the rows moved elements between OpenBLAS's kernel tiles,
 * and their last bits with them). OpenBLAS's OpenMP build runs each call
 * single-threaded inside the parallel region; its pthreads build is asked
 * for one thread a call (kv_blas_core_fit). Its own threading measured
 * slower on 2 cores; on a 16-core H200 host gemm-bwd 4096^3 takes the same
 * time in blocks of 96 as in one block a thread. */
void kv_dgemm_rows(int transx, int transy, int rows, int cols, int red, const double *x, int ldx, const double *y,
                   int ldy, double *c, int ldc);

/* Two products with X transposed, c1 = X^T y1 and c2 = |X|^T y2 (rows x cols,
 * X red x rows), in kv_dgemm_rows's blocks and calls (so the same bits),
 * without X held whole in float64: widen(ctx, r0, r1, v, a) writes X's
 * columns [r0, r1) and their magnitudes, red x (r1 - r0) each at row
 * stride r1 - r0, on the block's thread (red x 96 x 16 bytes a thread).
 * KV_EDEVICE where that scratch cannot be had. */
enum kv_status kv_dgemm_rows_t2(int rows, int cols, int red, void (*widen)(const void *ctx, int r0, int r1, double *v,
                                                                           double *a),
                                const void *ctx, const double *y1, const double *y2, int ldy, double *c1,
                                double *c2, int ldc);
/* The bytes kv_dgemm_rows_t2's blocks hold at once, at least: a block on each
 * thread that takes one (core/threads.h, kv_threads_least). */
unsigned long long kv_dgemm_rows_t2_host(int rows, int red);

#endif
