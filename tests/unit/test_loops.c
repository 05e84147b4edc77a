/* The loop-cut build (sanitize/loops.h): every embedded compute shader,
 * under each set of defines it builds with, and its sanitized build
 * (sanitize/san.h), rewrites into a module SPIRV-Tools' validator accepts
 * wherever it accepts the original, with a loop counted for each structured
 * loop it has; a module without loops is left alone; a module it cannot read
 * is refused in one line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <spirv-tools/libspirv.h>

#include "kv_spv_valid.h"

#include "core/status.h"
#include "sanitize/loops.h"
#include "sanitize/san.h"
#include "spirv/glsl.h"

/* The structured loops of a module (its OpLoopMerge instructions). */
static int loop_merges(const uint32_t *w, size_t n)
{
    int k = 0;
    for (size_t i = 5; i < n && (w[i] >> 16); i += w[i] >> 16) k += (w[i] & 0xffffu) == 246; /* OpLoopMerge */
    return k;
}

static void all_builtins_validate(void **state)
{
    (void)state;
    static const unsigned defs[] = {0, KV_SHADER_SUBGROUP, KV_SHADER_SUBGROUP | KV_SHADER_INT8,
                                    KV_SHADER_SUBGROUP | KV_SHADER_CMEL, KV_SHADER_ABF16, KV_SHADER_SUBGROUP | KV_SHADER_BF16CM};
    spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_2);
    int modules = 0, counted = 0, loops = 0;
    for (size_t i = 0; kv_glsl_builtin_at(i); i++) {
        const char *name = kv_glsl_builtin_at(i)->name;
        size_t len = strlen(name);
        if (len < 5 || strcmp(name + len - 5, ".comp")) continue;
        for (size_t d = 0; d < sizeof defs / sizeof *defs; d++) {
            struct kv_glsl_env env = {.builtin = 1, .defines = defs[d]};
            uint32_t *w = NULL, *out = NULL;
            size_t bytes = 0, out_bytes = 0;
            if (kv_glsl_compile(&env, name, &w, &bytes) != KV_OK) continue; /* a build it does not have */
            int orig_ok = kv_spv_valid(ctx, w, bytes / 4, NULL, 0), n = -1;
            assert_int_equal(kv_loops_instrument(name, w, bytes, 8, &out, &out_bytes, &n), KV_OK);
            assert_int_equal(n, loop_merges(w, bytes / 4)); /* glslang's loops have no OpSwitch back edge */
            if (!n) assert_null(out);
            char why[1024];
            if (n && orig_ok && !kv_spv_valid(ctx, out, out_bytes / 4, why, sizeof why))
                fail_msg("%s (defines %u): the loop-cut build is invalid: %s", name, defs[d], why);
            modules++, counted += n > 0, loops += n;
            free(out);
            free(w);
        }
    }
    spvContextDestroy(ctx);
    print_message("%d modules, %d with loops counted, %d loops\n", modules, counted, loops);
    assert_true(modules >= 40);
    assert_true(counted >= modules / 2);
}

/* The sanitized builds, whose loop-cut builds check the sanitized run: their
 * bindings past the record buffer (and the shadow of shared memory). */
static void sanitized_builds_validate(void **state)
{
    (void)state;
    static const unsigned defs[] = {0, KV_SHADER_SUBGROUP, KV_SHADER_ABF16};
    spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_2);
    int modules = 0, counted = 0;
    for (size_t i = 0; kv_glsl_builtin_at(i); i++) {
        const char *name = kv_glsl_builtin_at(i)->name;
        size_t len = strlen(name);
        if (len < 5 || strcmp(name + len - 5, ".comp")) continue;
        for (size_t d = 0; d < sizeof defs / sizeof *defs; d++) {
            struct kv_glsl_env env = {.builtin = 1, .defines = defs[d], .debug = 1};
            uint32_t *w = NULL, *out = NULL;
            size_t bytes = 0, out_bytes = 0;
            if (kv_glsl_compile(&env, name, &w, &bytes) != KV_OK) continue;
            struct kv_san_module m;
            memset(&m, 0, sizeof m);
            /* 1 KiB of shared memory every other time: the shadow in a buffer of its own */
            assert_int_equal(kv_san_instrument(name, w, bytes, 8, (i + d) % 2 ? 1024 : 1u << 16, &m), KV_OK);
            const uint32_t at = m.binding + 1 + (m.shadow_binding ? 1 : 0);
            int san_ok = kv_spv_valid(ctx, m.words, m.bytes / 4, NULL, 0), n = -1;
            assert_int_equal(kv_loops_instrument(name, m.words, m.bytes, at, &out, &out_bytes, &n), KV_OK);
            assert_int_equal(n, loop_merges(m.words, m.bytes / 4));
            char why[1024];
            if (n && san_ok && !kv_spv_valid(ctx, out, out_bytes / 4, why, sizeof why))
                fail_msg("%s (defines %u): the sanitized build's loop-cut build is invalid: %s", name, defs[d], why);
            modules++, counted += n > 0 && san_ok;
            free(out);
            kv_san_module_free(&m);
            free(w);
        }
    }
    spvContextDestroy(ctx);
    print_message("%d sanitized modules, %d with loops counted and validated\n", modules, counted);
    assert_true(modules >= 30);
    assert_true(counted >= modules / 2);
}

static void refuses_garbage(void **state)
{
    (void)state;
    uint32_t junk[8] = {0x07230203, 0x00010300, 0, 100, 0, 0xdeadbeef, 1, 2};
    uint32_t *out = NULL;
    size_t out_bytes = 0;
    int n = -1;
    assert_int_equal(kv_loops_instrument("junk.spv", junk, sizeof junk, 4, &out, &out_bytes, &n), KV_EDATA);
    assert_null(out);
    assert_non_null(strstr(kv_error_msg(), "junk.spv"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(all_builtins_validate),
        cmocka_unit_test(sanitized_builds_validate),
        cmocka_unit_test(refuses_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
