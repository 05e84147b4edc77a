#include "spirv/shader.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spirv-tools/libspirv.h>

static char *slurp(const char *path, size_t *size, enum kv_status *st)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    *size = 0;
    if (!f) {
        *st = kv_error(KV_EDATA, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    buf = malloc(cap + 1);
    while (buf) {
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (n < cap) break;
        if (cap > (64u << 20)) {
            free(buf);
            buf = NULL;
            *st = kv_error(KV_EDATA, "%s: larger than 64 MiB, not a shader", path);
            break;
        }
        char *nb = realloc(buf, 2 * cap + 1);
        if (!nb) free(buf);
        buf = nb;
        cap *= 2;
    }
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
        *st = kv_error(KV_EDATA, "%s: read error", path);
    } else if (!buf && *st == KV_OK) {
        *st = kv_error(KV_EDATA, "%s: out of memory", path);
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *size = n;
    }
    return buf;
}

/* The extensions whose instructions and capabilities the validator linked
 * here (SPIRV-Tools 2023.1, Debian 12's) knows: those of the compute shaders
 * kverify is given. A module that declares another one (newer: KHR
 * cooperative matrices, bfloat16) may use what it cannot read, and would be
 * rejected for it: that module goes to the driver unchecked. */
static const char *const known_ext[] = {
    "SPV_KHR_storage_buffer_storage_class", "SPV_KHR_16bit_storage", "SPV_KHR_8bit_storage",
    "SPV_KHR_variable_pointers", "SPV_KHR_vulkan_memory_model", "SPV_KHR_physical_storage_buffer",
    "SPV_EXT_physical_storage_buffer", "SPV_KHR_non_semantic_info", "SPV_NV_cooperative_matrix",
    "SPV_KHR_shader_ballot", "SPV_KHR_subgroup_vote", "SPV_KHR_float_controls", "SPV_KHR_no_integer_wrap_decoration",
    "SPV_EXT_shader_atomic_float_add", "SPV_EXT_shader_atomic_float_min_max", "SPV_EXT_descriptor_indexing",
    "SPV_KHR_expect_assume", "SPV_KHR_integer_dot_product", "SPV_KHR_workgroup_memory_explicit_layout",
    "SPV_KHR_terminate_invocation", "SPV_KHR_subgroup_uniform_control_flow", "SPV_KHR_shader_clock",
    "SPV_KHR_bit_instructions", "SPV_KHR_uniform_group_instructions", "SPV_GOOGLE_user_type",
    "SPV_GOOGLE_hlsl_functionality1", "SPV_GOOGLE_decorate_string", "SPV_KHR_linkonce_odr", NULL};

/* Whether the validator can read the module: SPIR-V 1.6 at most, and no
 * extension it does not know (an instruction stream it cannot walk is
 * invalid anyway: it says so). */
static int validator_reads(const uint32_t *w, size_t n)
{
    if (w[1] > 0x00010600u) return 0;
    for (size_t i = 5, wc; i < n; i += wc) {
        wc = w[i] >> 16;
        if (wc == 0 || wc > n - i) return 1;
        if ((w[i] & 0xffff) != 10 /* OpExtension */) continue;
        const char *name = (const char *)(w + i + 1);
        if (!memchr(name, 0, 4 * (wc - 1))) return 1;
        int known = 0;
        for (int k = 0; known_ext[k] && !known; k++) known = !strcmp(name, known_ext[k]);
        if (!known) return 0;
    }
    return 1;
}

/* A user's module checked before a driver sees it: the Vulkan API leaves an
 * invalid module's pipeline undefined (lavapipe crashes on some). The
 * structure is checked (ids, types, instructions, the control flow), and
 * SPIR-V's and Vulkan's rules as far as they hold on every device; block
 * layouts and the like, which depend on the device's features, are left to
 * it. A module the validator cannot read (validator_reads) passes. The
 * first error's text goes into msg. */
static int spirv_valid(const uint32_t *words, size_t n, char *msg, size_t size)
{
    if (!validator_reads(words, n)) return 1;
    spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_3);
    spv_validator_options opt = spvValidatorOptionsCreate();
    spv_diagnostic diag = NULL;
    int ok = 0;
    if (ctx && opt) {
        spvValidatorOptionsSetSkipBlockLayout(opt, 1);
        spvValidatorOptionsSetRelaxLogicalPointer(opt, 1);
        spvValidatorOptionsSetAllowLocalSizeId(opt, 1);
        spv_const_binary_t bin = {words, n};
        ok = spvValidateWithOptions(ctx, opt, &bin, &diag) == SPV_SUCCESS;
    }
    snprintf(msg, size, "%s", ok ? "" : diag && diag->error ? diag->error : "out of memory validating it");
    char *o = msg; /* one line: runs of white space as one space, none at the end */
    for (const char *c = msg; *c; c++)
        if (!isspace((unsigned char)*c)) *o++ = *c;
        else if (o > msg && o[-1] != ' ' && c[1] && !isspace((unsigned char)c[1])) *o++ = ' ';
    *o = '\0';
    spvDiagnosticDestroy(diag);
    spvValidatorOptionsDestroy(opt);
    spvContextDestroy(ctx);
    return ok;
}

enum kv_status kv_shader_load(const char *path, unsigned defines, const struct kv_glsl_extra *extra, uint32_t **words,
                              size_t *bytes)
{
    enum kv_status st = KV_OK;
    size_t size = 0;
    *words = NULL;
    *bytes = 0;
    char *buf = slurp(path, &size, &st);
    if (!buf) return st;
    size_t plen = strlen(path);
    if (plen > 4 && strcmp(path + plen - 4, ".spv") == 0) {
        uint32_t magic = 0;
        if (size >= 4) memcpy(&magic, buf, 4);
        KV_CHECK(size >= 20 && size % 4 == 0 && magic == 0x07230203u, KV_EDATA,
                 "%s: not a SPIR-V module (%s)", path,
                 size % 4 ? "size is not a multiple of 4" : "bad magic number");
        char why[512];
        KV_CHECK(spirv_valid((const uint32_t *)buf, size / 4, why, sizeof why), KV_EDATA,
                 "%s: not a valid SPIR-V module: %s", path, why);
        *words = (uint32_t *)buf;
        *bytes = size;
        buf = NULL;
    } else {
        struct kv_glsl_env env = {.defines = defines, .extra = extra};
        KV_TRY(kv_glsl_compile(&env, path, words, bytes));
    }
cleanup:
    free(buf);
    return st;
}
