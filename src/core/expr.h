/* Arithmetic expressions over named values, for interface files (--abi):
 * numbers, names, + - * / %, parentheses, unary minus, and the functions
 * min(a, b), max(a, b), cdiv(a, b) (ceiling division), fdiv(a, b) (floor
 * division), sqrt(a) and pow(a, b). Evaluated in double precision; any value beyond 2^53 in
 * magnitude, a division or remainder by zero, or a non-finite result is an
 * error, as is an unknown name. */
#ifndef KV_EXPR_H
#define KV_EXPR_H

#include "core/status.h"

/* Look a name up: 1 and *v when known, 0 when not. */
typedef int (*kv_expr_lookup)(void *ctx, const char *name, double *v);

/* Evaluate expr; errors are KV_EDATA naming `what` (a field) and the cause. */
enum kv_status kv_expr_eval(const char *what, const char *expr, kv_expr_lookup lookup, void *ctx, double *out);

#endif
