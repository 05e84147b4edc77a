/* The spec parser's parts (load.c: the file, its header, parameters and
 * tensors; dist.c: input distributions; math.c: statements and their order;
 * stages.c: stages and the sweep) and the field helpers they share (field.c). */
#ifndef KV_SPEC_LOAD_H
#define KV_SPEC_LOAD_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "specs/spec.h"

/* KV_EDATA "<file>: <field>: <cause>". */
enum kv_status kv_spec_field_error(const struct kv_spec *s, const char *field, const char *cause);
/* The string (or number, as text) o[key] into out; missing: an error when
 * required, else out untouched. field names o in messages. */
enum kv_status kv_spec_text(const struct kv_spec *s, const cJSON *o, const char *key, const char *field, int required,
                            char *out, size_t size);

/* expr (core/expr.h) over case c's parameters; what names it in errors. */
enum kv_status kv_spec_param_expr(const struct kv_case *c, const char *what, const char *expr, double *out);
/* A group count: expr over the parameters and local_x, local_y, local_z. */
enum kv_status kv_spec_groups(const struct kv_case *c, const char *what, const char *expr, const uint32_t local[3],
                              double *out);
/* The input preparation statements of case c (oracle.c). */
enum kv_status kv_spec_prepare(struct kv_case *c);

enum kv_status kv_spec_parse_dist(struct kv_spec *s, const cJSON *o, const char *field, int t);
enum kv_status kv_spec_parse_math(struct kv_spec *s, const cJSON *root);
enum kv_status kv_spec_parse_stages(struct kv_spec *s, const cJSON *root);
enum kv_status kv_spec_parse_sweep(struct kv_spec *s, const cJSON *root);
/* The whole spec at its defaults and at each sweep shape: shapes, index
 * ranges and the interface agree (a case's first oracle would say the same,
 * later). */
enum kv_status kv_spec_check(struct kv_spec *s);

#define KV_SPEC_BAD(s, field, ...)                                                                          \
    do {                                                                                                    \
        char cause_[1400];                                                                                   \
        snprintf(cause_, sizeof cause_, __VA_ARGS__);                                                       \
        return kv_spec_field_error(s, field, cause_);                                                       \
    } while (0)

#endif
