/* exp and log for the evaluator's loops: libm's own functions, the same
 * values bit for bit, called where glibc allows without its errno wrapper
 * (which costs about as much as the function on an x86-64 core). */
#ifndef KV_CORE_MATHFN_H
#define KV_CORE_MATHFN_H

/* libm's exp and log, or glibc's __exp_finite and __log_finite: the same
 * functions that exp and log call, picked at load time where libm has them
 * and they agree with exp and log on kv_mathfn_probe's values. */
extern double (*kv_exp)(double);
extern double (*kv_log)(double);

/* Whether f and lib agree bit for bit on a fixed set of arguments (zeros,
 * infinities, NaN, the ends of the ranges, values between): the check that
 * picks kv_exp and kv_log. */
int kv_mathfn_probe(double (*f)(double), double (*lib)(double));

#endif
