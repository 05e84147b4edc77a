#include "core/expr.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct parser {
    const char *what, *expr, *p;
    kv_expr_lookup lookup;
    void *ctx;
    enum kv_status st;
    int depth;
};

static const double LIMIT = 9007199254740992.0; /* 2^53 */

static double fail(struct parser *x, const char *fmt, const char *arg)
{
    if (!x->st) x->st = kv_error(KV_EDATA, fmt, x->what, x->expr, arg);
    return 0;
}

static double checked(struct parser *x, double v)
{
    if (!isfinite(v) || fabs(v) > LIMIT) return fail(x, "%s: '%s' overflows%s (beyond 2^53)", "");
    return v;
}

static void skip(struct parser *x)
{
    while (isspace((unsigned char)*x->p)) x->p++;
}

static int eat(struct parser *x, char c)
{
    skip(x);
    if (*x->p != c) return 0;
    x->p++;
    return 1;
}

static double sum(struct parser *x);

static double call(struct parser *x, const char *name)
{
    double a = sum(x);
    if (!strcmp(name, "sqrt")) {
        if (!eat(x, ')')) return fail(x, "%s: '%s': ')' expected after the argument of %s", name);
        if (a < 0) return fail(x, "%s: '%s': the square root of a negative number%s", "");
        return checked(x, sqrt(a));
    }
    if (!eat(x, ',')) return fail(x, "%s: '%s': %s takes two arguments", name);
    double b = sum(x);
    if (!eat(x, ')')) return fail(x, "%s: '%s': ')' expected after the arguments of %s", name);
    if (!strcmp(name, "pow")) return checked(x, pow(a, b));
    if (!strcmp(name, "min")) return fmin(a, b);
    if (!strcmp(name, "max")) return fmax(a, b);
    if (b == 0) return fail(x, "%s: '%s' divides by zero (in %s)", name);
    return checked(x, !strcmp(name, "cdiv") ? ceil(a / b) : floor(a / b));
}

static double atom(struct parser *x)
{
    skip(x);
    if (++x->depth > 64) return fail(x, "%s: '%s' nests too deep%s", "");
    double v = 0;
    if (eat(x, '(')) {
        v = sum(x);
        if (!eat(x, ')')) v = fail(x, "%s: '%s': ')' expected%s", "");
    } else if (eat(x, '-')) {
        v = -atom(x);
    } else if (isdigit((unsigned char)*x->p) || *x->p == '.') {
        char *end;
        v = strtod(x->p, &end);
        x->p = end;
        v = checked(x, v);
    } else if (isalpha((unsigned char)*x->p) || *x->p == '_') {
        char name[64];
        size_t n = 0;
        while ((isalnum((unsigned char)*x->p) || *x->p == '_') && n + 1 < sizeof name) name[n++] = *x->p++;
        name[n] = '\0';
        if (eat(x, '(')) {
            if (strcmp(name, "min") && strcmp(name, "max") && strcmp(name, "cdiv") && strcmp(name, "fdiv") &&
                strcmp(name, "sqrt") && strcmp(name, "pow"))
                v = fail(x, "%s: '%s': unknown function '%s' (min, max, cdiv, fdiv, sqrt, pow)", name);
            else v = call(x, name);
        } else if (!x->lookup(x->ctx, name, &v)) {
            v = fail(x, "%s: '%s': unknown name '%s' (the kernel's parameters; see kverify list)", name);
        }
    } else {
        v = fail(x, "%s: '%s': a number, a name or '(' expected%s", "");
    }
    x->depth--;
    return v;
}

static double product(struct parser *x)
{
    double v = atom(x);
    for (;;) {
        skip(x);
        char op = *x->p;
        if (op != '*' && op != '/' && op != '%') return v;
        x->p++;
        double b = atom(x);
        if (op != '*' && b == 0) return fail(x, "%s: '%s' divides by zero%s", "");
        v = checked(x, op == '*' ? v * b : op == '/' ? v / b : fmod(v, b));
    }
}

static double sum(struct parser *x)
{
    double v = product(x);
    for (;;) {
        skip(x);
        char op = *x->p;
        if (op != '+' && op != '-') return v;
        x->p++;
        double b = product(x);
        v = checked(x, op == '+' ? v + b : v - b);
    }
}

enum kv_status kv_expr_eval(const char *what, const char *expr, kv_expr_lookup lookup, void *ctx, double *out)
{
    struct parser x = {what, expr, expr, lookup, ctx, KV_OK, 0};
    double v = sum(&x);
    skip(&x);
    if (!x.st && *x.p) fail(&x, "%s: '%s': unexpected '%s'", x.p);
    if (!x.st && !*expr) fail(&x, "%s: '%s': empty expression%s", "");
    if (x.st) return x.st;
    *out = v;
    return KV_OK;
}
