#include "core/parse.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum kv_status kv_parse_i64(const char *what, const char *s, int64_t min,
                            int64_t max, int64_t *out)
{
    if (s == NULL || *s == '\0')
        return kv_error(KV_EUSAGE, "%s: missing value", what);
    const char *p = s;
    while (isspace((unsigned char)*p)) p++;
    if (!isdigit((unsigned char)*p) && *p != '-' && *p != '+')
        return kv_error(KV_EUSAGE, "%s: '%s' is not an integer", what, s);
    errno = 0;
    char *end = NULL;
    long long v = strtoll(p, &end, 10);
    if (end == p)
        return kv_error(KV_EUSAGE, "%s: '%s' is not an integer", what, s);
    if (errno == ERANGE)
        return kv_error(KV_EUSAGE, "%s: '%s' is out of range", what, s);
    int shift = 0;
    if (*end == 'K' || *end == 'k') shift = 10, end++;
    else if (*end == 'M' || *end == 'm') shift = 20, end++;
    else if (*end == 'G' || *end == 'g') shift = 30, end++;
    if (*end != '\0')
        return kv_error(KV_EUSAGE, "%s: '%s' is not an integer", what, s);
    if (shift) {
        long long lim = LLONG_MAX >> shift;
        if (v > lim || v < -lim)
            return kv_error(KV_EUSAGE, "%s: '%s' is out of range", what, s);
        v *= 1LL << shift;
    }
    if (v < min || v > max)
        return kv_error(KV_EUSAGE, "%s: %lld is out of range [%" PRId64 ", %" PRId64 "]",
                        what, v, min, max);
    *out = v;
    return KV_OK;
}

enum kv_status kv_parse_f64(const char *what, const char *s, double min,
                            double max, double *out)
{
    if (s == NULL || *s == '\0')
        return kv_error(KV_EUSAGE, "%s: missing value", what);
    errno = 0;
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || *end != '\0')
        return kv_error(KV_EUSAGE, "%s: '%s' is not a number", what, s);
    if (!isfinite(v) || errno == ERANGE)
        return kv_error(KV_EUSAGE, "%s: '%s' is not a finite number in range", what, s);
    if (v < min || v > max)
        return kv_error(KV_EUSAGE, "%s: %g is out of range [%g, %g]", what, v, min, max);
    *out = v;
    return KV_OK;
}

enum kv_status kv_parse_range(const char *what, const char *s, uint64_t *lo,
                              uint64_t *hi)
{
    enum kv_status st;
    int64_t a, b;
    const char *dots = s ? strstr(s, "..") : NULL;
    if (dots == NULL) {
        st = kv_parse_i64(what, s, 0, INT64_MAX, &a);
        if (st) return st;
        *lo = *hi = (uint64_t)a;
        return KV_OK;
    }
    char first[64];
    size_t n = (size_t)(dots - s);
    if (n == 0 || n >= sizeof first)
        return kv_error(KV_EUSAGE, "%s: '%s' is not a range A..B", what, s);
    memcpy(first, s, n);
    first[n] = '\0';
    if ((st = kv_parse_i64(what, first, 0, INT64_MAX, &a))) return st;
    if ((st = kv_parse_i64(what, dots + 2, 0, INT64_MAX, &b))) return st;
    if (b < a)
        return kv_error(KV_EUSAGE, "%s: range '%s' is empty", what, s);
    *lo = (uint64_t)a;
    *hi = (uint64_t)b;
    return KV_OK;
}
