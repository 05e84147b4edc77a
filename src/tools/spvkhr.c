/* Build-time tool: kv-spvkhr [--bf16] IN.spv OUT.h
 * Rewrites a module's NV cooperative matrices as KHR ones (spirv_khr.h), with
 * --bf16 every 16-bit float as bfloat16, and writes it as a C initialiser
 * list (the form glslc -mfmt=c writes), or as a binary module where OUT ends
 * in .spv (for kverify --shader). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spirv/spirv_khr.h"

int main(int argc, char **argv)
{
    int bf16 = argc == 4 && strcmp(argv[1], "--bf16") == 0;
    if (argc != 3 + bf16) {
        fprintf(stderr, "usage: kv-spvkhr [--bf16] IN.spv OUT.h\n");
        return 2;
    }
    const char *in_path = argv[1 + bf16], *out_path = argv[2 + bf16];
    FILE *f = fopen(in_path, "rb");
    if (!f) {
        fprintf(stderr, "kv-spvkhr: %s: cannot open\n", in_path);
        return 1;
    }
    size_t cap = 1 << 16, n = 0;
    uint32_t *words = malloc(cap * 4);
    for (size_t got; words && (got = fread(words + n, 4, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            uint32_t *p = realloc(words, (cap *= 2) * 4);
            if (!p) free(words);
            words = p;
        }
    }
    fclose(f);
    uint32_t *out = NULL;
    size_t n_out = 0;
    char err[256];
    if (!words || kv_spirv_nv_to_khr(words, n, bf16, &out, &n_out, err, sizeof err)) {
        fprintf(stderr, "kv-spvkhr: %s: %s\n", in_path, words ? err : "out of memory");
        free(words);
        return 1;
    }
    free(words);
    FILE *o = fopen(out_path, "w");
    if (!o) {
        fprintf(stderr, "kv-spvkhr: %s: cannot write\n", out_path);
        free(out);
        return 1;
    }
    size_t plen = strlen(out_path);
    if (plen > 4 && strcmp(out_path + plen - 4, ".spv") == 0) {
        fwrite(out, 4, n_out, o);
    } else {
        fputc('{', o);
        for (size_t i = 0; i < n_out; i++) fprintf(o, "%s0x%08x%s", i % 8 ? " " : "\n", out[i], i + 1 < n_out ? "," : "");
        fputs("}\n", o);
    }
    free(out);
    if (fclose(o)) {
        fprintf(stderr, "kv-spvkhr: %s: cannot write\n", out_path);
        remove(out_path);
        return 1;
    }
    return 0;
}
