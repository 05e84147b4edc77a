/* Command-line helpers: overflow-checked number parsing and option tables. */
#ifndef KV_CLI_H
#define KV_CLI_H

#include <stdint.h>

#include "core/status.h"

/* Parse a decimal integer with an optional K/M/G suffix (powers of 1024) into
 * [min, max]. Rejects empty strings, trailing junk, overflow. `what` names the
 * flag in the error message. */
enum kv_status kv_parse_i64(const char *what, const char *s, int64_t min,
                            int64_t max, int64_t *out);
/* Parse a finite floating-point number in [min, max]. */
enum kv_status kv_parse_f64(const char *what, const char *s, double min,
                            double max, double *out);
/* Parse "A..B" or "N" into an inclusive range of seeds. */
enum kv_status kv_parse_range(const char *what, const char *s, uint64_t *lo,
                              uint64_t *hi);

#endif
