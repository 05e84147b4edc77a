/* The SPIR-V reflector reads user files: it must describe the built-in
 * shaders exactly, and never crash or read out of bounds on corrupted
 * modules (run under ASan in CI). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels/kernel.h"
#include "core/rng.h"
#include "spirv/spirv.h"

static void builtins_match_their_abi(void **s)
{
    (void)s;
    for (int k = 0; kv_kernels[k]; k++)
        for (int st = 0; st < kv_kernels[k]->n_stages; st++) {
            const struct kv_stage_def *sd = &kv_kernels[k]->stages[st];
            const struct kv_spirv_blob *blobs[7] = {&sd->subgroup, &sd->fallback, &sd->subgroup8, &sd->fallback8,
                                                    &sd->aligned, &sd->el, &sd->aligned_el};
            struct kv_spirv_iface main_f;
            assert_int_equal(kv_spirv_reflect("builtin", sd->subgroup.words, sd->subgroup.bytes / 4, &main_f), KV_OK);
            assert_true(!sd->aligned_el.words || (sd->aligned.words && sd->el.words));
            for (int v = 0; v < 7; v++) {
                if (!blobs[v]->words) continue; /* no 8-bit storage (aligned, element) build */
                struct kv_spirv_iface f;
                assert_int_equal(kv_spirv_reflect("builtin", blobs[v]->words, blobs[v]->bytes / 4, &f), KV_OK);
                assert_int_equal(kv_spirv_check("builtin", &f, (uint32_t)sd->n_bindings,
                                                (1u << sd->n_bindings) - 1, sd->push_size, sd->push_doc), KV_OK);
                /* the documented push fields are the module's, type for type (int is not uint here) */
                int kinds[KV_SPIRV_MAX_PUSH];
                assert_int_equal(4 * kv_spirv_doc_kinds(sd->push_doc, kinds, KV_SPIRV_MAX_PUSH), (int)sd->push_size);
                assert_int_equal(kv_spirv_push_misfit(&f, sd->push_size, kinds, 0), -1);
                assert_int_equal(f.n_bindings, sd->n_bindings);
                assert_true(f.local[0] >= 1 && f.local[1] >= 1 && f.local[2] >= 1);
                if (v >= 4) /* launched with the subgroup build's workgroup size */
                    assert_memory_equal(f.local, main_f.local, sizeof f.local);
            }
        }
    /* rmsnorm-bwd's dw stage is 64 x 16 by design. */
    const struct kv_kernel *rms = kv_kernel_find("rmsnorm-bwd");
    struct kv_spirv_iface f;
    const struct kv_spirv_blob *dw = &rms->stages[2].fallback;
    assert_int_equal(kv_spirv_reflect("dw", dw->words, dw->bytes / 4, &f), KV_OK);
    assert_int_equal(f.local[0], 64);
    assert_int_equal(f.local[1], 16);
    assert_int_equal(f.push_size, 8);
}

/* A push block member: offset, bytes, kind; all 32-bit scalars. */
static void member(struct kv_spirv_iface *f, uint32_t off, uint32_t size, int kind)
{
    f->push[f->n_push].offset = off, f->push[f->n_push].size = size, f->push[f->n_push].bits = 32;
    f->push[f->n_push++].kind = kind;
    f->push_size = off + size > f->push_size ? off + size : f->push_size;
}

/* A shader's push block may leave out members (glslc -Os drops those it never
 * reads) but not move, widen or retype one. */
static void push_members_fit_by_offset(void **s)
{
    (void)s;
    int kinds[8];
    assert_int_equal(kv_spirv_doc_kinds("uint rows; uint dim; float eps;", kinds, 8), 3);
    assert_int_equal(kinds[2], KV_SCALAR_FLOAT);
    assert_int_equal(kv_spirv_doc_kinds("uint rows; vec2 x;", kinds, 8), -1);
    assert_int_equal(kv_spirv_doc_kinds("uint rows", kinds, 8), -1);
    assert_int_equal(kv_spirv_doc_kinds(NULL, kinds, 8), -1);
    assert_int_equal(kv_spirv_doc_kinds("uint a; uint b;", kinds, 1), -1);
    const int k[3] = {KV_SCALAR_UINT, KV_SCALAR_UINT, KV_SCALAR_FLOAT};
    struct kv_spirv_iface f;
    memset(&f, 0, sizeof f);
    assert_int_equal(kv_spirv_push_misfit(&f, 12, k, 0), -1); /* no push constants */
    member(&f, 0, 4, KV_SCALAR_UINT), member(&f, 4, 4, KV_SCALAR_UINT);
    assert_int_equal(kv_spirv_push_misfit(&f, 12, k, 0), -1); /* eps left out */
    member(&f, 8, 4, KV_SCALAR_FLOAT);
    assert_int_equal(kv_spirv_push_misfit(&f, 12, k, 0), -1); /* all three */
    member(&f, 12, 4, KV_SCALAR_FLOAT);
    assert_int_equal(kv_spirv_push_misfit(&f, 12, k, 0), 3); /* one past the stage's */
    memset(&f, 0, sizeof f);
    member(&f, 0, 4, KV_SCALAR_UINT), member(&f, 8, 4, KV_SCALAR_FLOAT);
    assert_int_equal(kv_spirv_push_misfit(&f, 12, k, 0), -1); /* dim left out between */
    memset(&f, 0, sizeof f);
    member(&f, 0, 4, KV_SCALAR_UINT), member(&f, 4, 4, KV_SCALAR_FLOAT);
    assert_int_equal(kv_spirv_push_misfit(&f, 12, k, 1), 1); /* a float where dim is */
    memset(&f, 0, sizeof f);
    member(&f, 0, 4, KV_SCALAR_INT);
    assert_int_equal(kv_spirv_push_misfit(&f, 12, k, 0), 0); /* int for uint: strict */
    assert_int_equal(kv_spirv_push_misfit(&f, 12, k, 1), -1); /* and sign-free */
    memset(&f, 0, sizeof f);
    member(&f, 0, 8, KV_SCALAR_UINT);
    assert_int_equal(kv_spirv_push_misfit(&f, 12, k, 0), -1); /* a uvec2 over rows, dim */
    memset(&f, 0, sizeof f);
    member(&f, 4, 8, KV_SCALAR_UINT);
    assert_int_equal(kv_spirv_push_misfit(&f, 12, k, 1), 0); /* a uvec2 over dim, eps */
    assert_int_equal(kv_spirv_push_misfit(&f, 12, NULL, 1), -1); /* range only */
    f.push[0].bits = 16;
    assert_int_equal(kv_spirv_push_misfit(&f, 12, k, 1), 0); /* 16-bit scalars */
    memset(&f, 0, sizeof f);
    member(&f, 2, 4, KV_SCALAR_UINT);
    assert_int_equal(kv_spirv_push_misfit(&f, 12, k, 1), 0); /* between fields */
    memset(&f, 0, sizeof f);
    member(&f, 4, 16, KV_SCALAR_OTHER);
    assert_int_equal(kv_spirv_push_misfit(&f, 12, k, 1), 0); /* a struct past the end */
    f.push[0].size = 8;
    assert_int_equal(kv_spirv_push_misfit(&f, 12, k, 1), -1); /* a struct inside: its range */
}

static void rejects_garbage(void **s)
{
    (void)s;
    struct kv_spirv_iface f;
    uint32_t zeros[8] = {0};
    assert_int_equal(kv_spirv_reflect("z", zeros, 8, &f), KV_EDATA);
    uint32_t tiny[2] = {0x07230203u, 0};
    assert_int_equal(kv_spirv_reflect("t", tiny, 2, &f), KV_EDATA);
    uint32_t zero_wc[6] = {0x07230203u, 0x10000, 0, 100, 0, 0};
    assert_int_equal(kv_spirv_reflect("w", zero_wc, 6, &f), KV_EDATA);
    uint32_t huge_bound[5] = {0x07230203u, 0x10000, 0, 0xffffffffu, 0};
    assert_int_equal(kv_spirv_reflect("b", huge_bound, 5, &f), KV_EDATA);
}

/* Flip, overwrite and truncate words of a real module many times; every
 * outcome must be a clean KV_OK or KV_EDATA. */
static void fuzz_mutations(void **s)
{
    (void)s;
    const struct kv_spirv_blob *b = &kv_kernel_find("rmsnorm-bwd")->stages[1].subgroup;
    size_t n = b->bytes / 4;
    uint32_t *w = malloc(b->bytes);
    for (uint64_t iter = 0; iter < 20000; iter++) {
        memcpy(w, b->words, b->bytes);
        int edits = 1 + (int)(kv_rng_uniform(11, 0, iter) * 4);
        for (int e = 0; e < edits; e++) {
            size_t at = 5 + (size_t)(kv_rng_uniform(11, 1 + (uint32_t)e, iter) * (double)(n - 5));
            uint32_t bits = (uint32_t)(kv_rng_uniform(11, 10 + (uint32_t)e, iter) * 4294967296.0);
            switch (iter % 3) {
            case 0: w[at] ^= 1u << (bits % 32); break;
            case 1: w[at] = bits; break;
            default: w[at] = (w[at] & 0xffffu) | (bits & 0xffff0000u); break; /* word count */
            }
        }
        size_t len = iter % 7 == 0 ? 5 + (size_t)(kv_rng_uniform(11, 30, iter) * (double)(n - 5)) : n;
        struct kv_spirv_iface f;
        enum kv_status st = kv_spirv_reflect("fuzz", w, len, &f);
        assert_true(st == KV_OK || st == KV_EDATA);
    }
    free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(builtins_match_their_abi),
        cmocka_unit_test(push_members_fit_by_offset),
        cmocka_unit_test(rejects_garbage),
        cmocka_unit_test(fuzz_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
