#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dlvsym */
#endif
#include "core/mathfn.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__GLIBC__)
#include <dlfcn.h>
#endif

double (*kv_exp)(double) = exp;
double (*kv_log)(double) = log;

int kv_mathfn_probe(double (*f)(double), double (*lib)(double))
{
    static const double fixed[] = {0.0,    -0.0,   1.0,    -1.0,     0.5,     2.0,      INFINITY, -INFINITY, NAN,
                                   709.78, 709.79, -708.4, -745.13,  -745.14, 1e-300,   4.9e-324, 1e308,     0.6931,
                                   1e-17,  -1e-17, 88.72,  -103.97, 3.0e-8,  0.999999, 1.000001};
    int agree = 1;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        const double a = f(fixed[i]), b = lib(fixed[i]);
        agree &= memcmp(&a, &b, sizeof a) == 0;
    }
    /* a sweep over both functions' ranges, 2^-8 apart near 0 and wider out */
    for (double x = -750; x <= 750; x += x > -8 && x < 8 ? 0x1p-8 : 0.37) {
        const double a = f(x), b = lib(x);
        agree &= memcmp(&a, &b, sizeof a) == 0;
    }
    return agree;
}

#if defined(__GLIBC__) && defined(__GNUC__)
/* glibc's libm exports __exp_finite and __log_finite (GLIBC_2.15, kept for
 * binaries built with -ffinite-math-only) as the functions its exp and log
 * call before they set errno: the same results, without the wrapper's call
 * and test. Picked only where found and agreeing with exp and log; else
 * exp and log themselves. */
static double (*finite_of(void *libm, const char *name, double (*lib)(double)))(double)
{
    double (*f)(double) = NULL;
    void *p = libm ? dlvsym(libm, name, "GLIBC_2.15") : NULL;
    memcpy(&f, &p, sizeof f);
    return f && kv_mathfn_probe(f, lib) ? f : lib;
}

__attribute__((constructor)) static void pick(void)
{
    void *libm = dlopen("libm.so.6", RTLD_NOW | RTLD_NOLOAD); /* loaded: kverify calls exp */
    kv_exp = finite_of(libm, "__exp_finite", exp);
    kv_log = finite_of(libm, "__log_finite", log);
    if (libm) dlclose(libm);
}
#endif
