/* JSON fixtures:
 *   {"kernel": "rmsnorm-bwd", "params": {"rows": 4, "eps": 1e-6, "dist": "normal"},
 *    "seed": 1,
 *    "inputs":   {"x": {"dtype": "f32", "shape": [4, 33], "data": [0.5, ...]}, ...},
 *    "expected": {"dx": {"dtype": "f32", "shape": [4, 33], "data": [...]}}}
 * "kernel" and "inputs" are required, the rest optional. data is the flat
 * row-major list of values; non-finite values are the strings "NaN",
 * "Infinity", "-Infinity"; values are rounded to the dtype (RNE). */
#ifndef KV_IO_JSON_H
#define KV_IO_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernel.h"

struct kv_fixture {
    char kernel[64];
    int n_params;
    char pname[KV_MAX_PARAMS][32];
    char pval[KV_MAX_PARAMS][64];
    int has_seed;
    uint64_t seed;
    int n_tensors;                       /* inputs then expected */
    int n_inputs;
    char tname[KV_MAX_TENSORS][32];
    struct kv_tensor t[KV_MAX_TENSORS];
};

/* Parse a fixture; errors are KV_EDATA naming `what` and the field. */
enum kv_status kv_fixture_parse(const char *what, const char *text, size_t len, struct kv_fixture *fx);
enum kv_status kv_fixture_read(const char *path, struct kv_fixture *fx);
void kv_fixture_free(struct kv_fixture *fx);

#endif
