/* Which kernels OpenBLAS, the float64 products' BLAS, chose for this CPU. */
#ifndef KV_BLAS_CORE_H
#define KV_BLAS_CORE_H

/* The kernels' name (OpenBLAS's openblas_get_corename: "SkylakeX", "Haswell",
 * ...), and where kv_blas_core_fit replaced OpenBLAS's choice, which it was:
 * "SkylakeX (in place of Prescott, OpenBLAS's choice)". */
const char *kv_blas_core(void);
/* The kernels to ask for instead of core on a CPU with AVX-512 (F, DQ, BW, VL)
 * or AVX2 and FMA, or NULL to keep core: its generic kernels (Prescott) on a
 * CPU that runs better ones. */
const char *kv_blas_core_instead(const char *core, int avx512, int avx2);
/* OpenBLAS picks its kernels by CPU model as it loads; Debian 12's 0.3.21
 * falls back to its generic ones on models its build has no kernels for
 * (Cooper Lake, as on cloud GPU hosts): dgemm 4 to 5 times slower. There,
 * unless OPENBLAS_CORETYPE is set, the process runs itself again (argv, once)
 * with OPENBLAS_CORETYPE naming kernels the CPU runs. Returns where it does
 * not (exec failed, or nothing to change). KVERIFY_TEST_BLAS_CORE stands in
 * for the chosen name (tests). */
void kv_blas_core_fit(char **argv);

#endif
