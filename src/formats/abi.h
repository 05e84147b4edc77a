/* Interface files (--abi STAGE=FILE.json): how a foreign compute shader's
 * bindings, push constants, specialization constants, defines and launch
 * map onto a kernel stage, so that it is verified unchanged (man kverify,
 * "VERIFY YOUR OWN SHADER AS IT IS"):
 *   {"bindings": [{"binding": 0, "product": ["dy", "w"]}, {"binding": 1, "tensor": "x"},
 *                 {"binding": 2, "tensor": "dx"}],
 *    "push": [{"name": "KX", "type": "uint", "value": "dim"}, {"name": "param1", "type": "float", "value": "eps"}],
 *    "specialization": [{"id": 0, "type": "uint", "value": "256"}],
 *    "defines": {"A_TYPE": "float"}, "include": ["include"],
 *    "dispatch": ["min(rows, 512)", "cdiv(rows, 512)", "1"],
 *    "constants": {"w": 1}, "writes": ["dx"]}
 * Values are expressions over the kernel's parameters (core/expr.h). */
#ifndef KV_ABI_H
#define KV_ABI_H

#include "kernels/kernel.h"

#define KV_ABI_MAX 32

enum kv_abi_type { KV_ABI_UINT, KV_ABI_INT, KV_ABI_FLOAT };

struct kv_abi_binding {
    uint32_t binding;
    int tensor;        /* the kernel tensor bound, or -1 for a product */
    int a, b;          /* a product's operands (tensor indices): a * b, b broadcast over a */
};

struct kv_abi_value {
    char name[64];     /* a push field's name; "" for specialization constants */
    uint32_t id;       /* a specialization constant's SpecId */
    enum kv_abi_type type;
    char expr[256];
};

struct kv_abi {
    char path[1024];
    int stage;
    int n_bindings;
    struct kv_abi_binding b[KV_ABI_MAX];
    int n_push;
    struct kv_abi_value push[KV_ABI_MAX];
    int n_spec;
    struct kv_abi_value spec[KV_ABI_MAX];
    char dispatch[3][256];
    int n_defines;
    char define[KV_ABI_MAX][2][256];   /* name, value */
    int n_include;
    char include[8][1024];             /* folders, resolved against the file's */
    int n_constants;
    int const_tensor[8];
    double const_value[8];
    unsigned writes;                   /* a bit per kernel tensor: the outputs the shader writes */
};

/* Read FILE for stage s of kernel k. Errors are KV_EDATA naming the file and field. */
enum kv_status kv_abi_load(const struct kv_kernel *k, int s, const char *path, struct kv_abi *out);
/* The same from size bytes of JSON in memory (path names it in errors). */
enum kv_status kv_abi_parse(const struct kv_kernel *k, int s, const char *path, const char *buf, size_t size,
                            struct kv_abi *out);
/* Whether the shader writes output t (by name: variants share names). */
int kv_abi_writes(const struct kv_abi *a, const struct kv_kernel *k, int t);
/* The push block's bytes (std430 scalars, 4 bytes each, in order). */
static inline uint32_t kv_abi_push_size(const struct kv_abi *a) { return 4u * (uint32_t)a->n_push; }
/* Evaluate an expression for case c: the value, checked against the type;
 * KV_EDATA naming the field. */
enum kv_status kv_abi_value(const struct kv_case *c, const char *field, const char *expr, enum kv_abi_type type,
                            double *out);

#endif
