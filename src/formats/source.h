/* Tensors given by files: --inputs (a directory of NAME.npy, an .npz, or a
 * JSON fixture) and --candidate OUTPUT=FILE.npy. Generic over the registry:
 * names, dtypes and shapes come from the kernel's tensor table, and lone
 * parameters in a tensor's dims are inferred from the file's shape. */
#ifndef KV_SOURCE_H
#define KV_SOURCE_H

#include "kernels/kernel.h"

enum kv_given_kind { KV_GIVEN_INPUT, KV_GIVEN_CANDIDATE, KV_GIVEN_EXPECTED };

struct kv_given {
    const char *inputs;     /* the --inputs path, or NULL */
    const char *inputs_kind; /* "file", "member" or "input inputs.", for messages */
    char label[96];         /* its base name, for case names */
    int n_params;
    char pname[KV_MAX_PARAMS][32];
    char pval[KV_MAX_PARAMS][64];
    int has_seed;
    uint64_t seed;
    int n;
    struct {
        int tensor;         /* index in the kernel's tensor table */
        enum kv_given_kind kind;
        char from[1024];    /* file (and member) it came from */
        struct kv_tensor t;
    } e[2 * KV_MAX_TENSORS];
};

/* Load --inputs PATH for kernel k. Errors: KV_EDATA naming the file. */
enum kv_status kv_given_inputs(const struct kv_kernel *k, const char *path, struct kv_given *g);
/* Add --candidate OUTPUT=FILE. Unknown output: KV_EUSAGE; bad file: KV_EDATA. */
enum kv_status kv_given_candidate(const struct kv_kernel *k, const char *spec, struct kv_given *g);
/* Whether output tensor t has a --candidate (which replaces the device;
 * a fixture's expected outputs are judged in addition). */
int kv_given_has(const struct kv_given *g, int t);
/* Apply to a case made from defaults: file parameters (unless `explicit`
 * marks them as set on the command line), inferred dims, the shapes and the
 * kernel's validation, then every given tensor's dtype and shape are checked
 * (KV_EDATA, naming the file, the tensor, what was expected and found). */
enum kv_status kv_given_apply(const struct kv_given *g, struct kv_case *c, const int *explicit_param,
                              int explicit_seed);
void kv_given_free(struct kv_given *g);

#endif
