/* The shader sanitizer: a compute module instrumented at the SPIR-V level
 * (so that it works for a .spv as for GLSL, on every device), and the
 * records its run leaves in one storage buffer of its own.
 *
 *  - memcheck: every index into an array of function-local, private or
 *    workgroup memory is checked against the array's length, and every index
 *    into a storage buffer's runtime array against the logical length of the
 *    tensor bound there (the host writes it into the record buffer); a bad
 *    index is clamped to 0, so that the run itself corrupts nothing;
 *  - racecheck: a shadow word per workgroup-memory scalar remembers the
 *    invocation that last wrote it and the last reader, tagged with the
 *    barrier epoch (OpControlBarrier of workgroup execution scope); a write
 *    and another invocation's read or write of the same scalar in one epoch
 *    is a race;
 *  - initcheck: a read of a workgroup scalar no invocation has written since
 *    the workgroup started;
 *  - racecheck-global: shadow words per unit of each storage buffer the
 *    stage stores to remember the workgroup (and invocation and epoch) that
 *    last stored and last loaded it; a store where another workgroup of the
 *    dispatch stored or loaded, or a load where another stored, is a race
 *    (no order holds between the workgroups of one dispatch), and so between
 *    two invocations of a workgroup in one epoch where sanitize/global.c
 *    finds nothing else could order them.
 * Each invocation keeps its first record of each kind and a count in
 * private memory, and adds them to the buffer when it returns. */
#ifndef KV_SAN_H
#define KV_SAN_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

enum kv_san_kind { KV_SAN_MEMCHECK, KV_SAN_RACECHECK, KV_SAN_INITCHECK, KV_SAN_GLOBAL, KV_SAN_KINDS };

/* The record buffer: counts per kind, flags (KV_SAN_FLAGS), the records
 * each kind has taken (KV_SAN_SLOTS), the logical bytes of each binding's
 * tensor from word KV_SAN_LOGICAL (written by the host; a runtime array of
 * stride s holds their ceiling over s elements; at most KV_SAN_MAX_LOGICAL,
 * so that the ceiling cannot wrap: a larger tensor is checked only that
 * far), the first word of each binding's part of the racecheck-global shadow
 * from KV_SAN_GBASE (KV_SAN_GBASE_NONE: not shadowed), then KV_SAN_RECORDS
 * records of KV_SAN_REC_WORDS words and one slot that takes the records past
 * them. */
#define KV_SAN_MAX_BINDINGS 32
#define KV_SAN_MAX_LOGICAL 0xFFFF0000u
#define KV_SAN_FLAGS 4
#define KV_SAN_SLOTS 5 /* per kind: how many records it has taken (its share: KV_SAN_PER_KIND slots) */
#define KV_SAN_LOGICAL 12
#define KV_SAN_GBASE (KV_SAN_LOGICAL + KV_SAN_MAX_BINDINGS)
#define KV_SAN_GBASE_NONE 0xFFFFFFFFu
#define KV_SAN_HEADER (KV_SAN_GBASE + KV_SAN_MAX_BINDINGS)
_Static_assert(KV_SAN_KINDS <= KV_SAN_FLAGS && KV_SAN_SLOTS + KV_SAN_KINDS <= KV_SAN_LOGICAL, "the header's words");
/* A flag: a subgroup's invocations are not consecutive local invocation
 * indices on this device, which the per-subgroup epochs assume (racecheck
 * of a module with subgroup barriers is then not reported). */
#define KV_SAN_FLAG_SUBGROUPS 1u
/* A flag the host sets: the stage's racecheck-global shadow would be larger
 * than KV_SAN_GLOBAL_MAX words, so it is not made (every base is NONE). */
#define KV_SAN_FLAG_GLOBAL_OFF 2u
#define KV_SAN_GLOBAL_MAX (16u << 20)
#define KV_SAN_RECORDS 16
#define KV_SAN_PER_KIND (KV_SAN_RECORDS / KV_SAN_KINDS)
#define KV_SAN_REC_WORDS 12
#define KV_SAN_BUFFER_BYTES ((size_t)4 * (KV_SAN_HEADER + (KV_SAN_RECORDS + 1) * KV_SAN_REC_WORDS))

/* What a check site is: its kind, where it is in the source, the array. */
struct kv_san_site {
    uint8_t kind;          /* KV_SAN_MEMCHECK for bounds, KV_SAN_RACECHECK for a shadowed access */
    int32_t binding;       /* a storage buffer's binding, or -1 */
    uint32_t var;          /* the workgroup variable of a shadowed access (index into kv_san_module.wg), or UINT32_MAX */
    char where[200];       /* "file:line:column", or "SPIR-V word N (OpAccessChain %id)" */
    char array[64];        /* the array's name ("acc", "part", "buffer 2") */
};

/* A workgroup variable shadowed for racecheck and initcheck. */
struct kv_san_wg {
    char name[64];
    uint32_t first, units;          /* its scalars in the shadow */
    int n_dims;                     /* its array levels, outermost first (at most 4) */
    uint32_t dim[4], stride[4];     /* each level's length and scalars per element */
};

struct kv_san_module {
    uint32_t *words; /* the instrumented module (malloc'd) */
    size_t bytes;
    uint32_t binding;       /* the record buffer's binding at set 0 */
    int n_sites;
    struct kv_san_site *site; /* site i + 1 (0 means none) */
    int n_wg;
    struct kv_san_wg *wg;
    uint32_t shadow_units;  /* shared scalars shadowed (8 bytes each) */
    uint32_t shadow_binding; /* where the shadow does not fit shared memory: its storage buffer's binding
                                (8 * shadow_units bytes per workgroup), else 0 */
    int shared_checks;      /* racecheck and initcheck made */
    int racecheck;          /* races checked (0 where subgroup barriers cannot be followed) */
    /* racecheck-global: the shadow's binding (0: not made), the bytes a
     * unit stands for (the smallest scalar a shadowed access reads or
     * writes), and the bindings (bit b) whose accesses are shadowed */
    uint32_t global_binding, global_unit, global_mask;
    int subgroup_epochs;    /* the epochs also step at subgroup barriers, per subgroup */
    int coopmat;            /* cooperative matrices' loads and stores of shared memory shadowed */
    char note[240];         /* why shared checks are off (one line), or "" */
};

/* Instrument a compute module for a record buffer at binding `binding`;
 * shared_limit: the device's workgroup memory, beyond which the shadow is
 * left out (note says so); room: the bindings the stage may have, beyond
 * which racecheck-global is left out (note says so). KV_EDATA naming `what`
 * for a module it cannot read. */
enum kv_status kv_san_instrument(const char *what, const uint32_t *words, size_t bytes, uint32_t binding,
                                 uint32_t shared_limit, uint32_t room, struct kv_san_module *out);
void kv_san_module_free(struct kv_san_module *m);

/* The record buffer's first contents: zero counts, the logical bytes of
 * each binding's tensor (bytes[b], n of them), and each shadowed binding's
 * part of the racecheck-global shadow. Returns the shadow's words (0: none
 * made, and KV_SAN_FLAG_GLOBAL_OFF set where it would pass KV_SAN_GLOBAL_MAX). */
uint32_t kv_san_buffer_init(const struct kv_san_module *m, uint32_t *buf, const uint64_t *bytes, int n);

/* One record read back. */
struct kv_san_record {
    int kind;
    const struct kv_san_site *site;
    uint32_t index, bound, other, invocation, group[3], count;
};
struct kv_san_result {
    uint64_t count[KV_SAN_KINDS]; /* occurrences */
    uint32_t flags;               /* KV_SAN_FLAG_* */
    int n;
    struct kv_san_record rec[KV_SAN_RECORDS];
};
/* Read the buffer after the run. */
void kv_san_read(const struct kv_san_module *m, const uint32_t *buf, struct kv_san_result *out);
/* A kind's name ("memcheck") and a one-line reason for its first record. */
const char *kv_san_kind_name(int kind);
void kv_san_reason(const struct kv_san_module *m, const struct kv_san_result *r, int kind, const char *stage,
                   const char *(*binding_name)(const void *ctx, int binding), const void *ctx, char *out, size_t size);

#endif
