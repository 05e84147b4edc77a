/* Runs a fuzz target over every file of the corpus folders given on the
 * command line, without libFuzzer, so ctest replays the corpus (and every
 * crash ever found, kept there) on each build. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/files.h"
#include "formats/npy.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static int run_file(const char *path)
{
    char *buf;
    size_t size;
    if (kv_read_file(path, (size_t)1 << 30, &buf, &size) != KV_OK) {
        fprintf(stderr, "replay: %s\n", kv_error_msg());
        return 1;
    }
    LLVMFuzzerTestOneInput((const unsigned char *)buf, size);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int files = 0, errors = 0;
    for (int a = 1; a < argc; a++) {
        struct stat sb;
        if (stat(argv[a], &sb) != 0) {
            fprintf(stderr, "replay: %s: no such file or directory\n", argv[a]);
            return 1;
        }
        if (!S_ISDIR(sb.st_mode)) {
            errors += run_file(argv[a]);
            files++;
            continue;
        }
        DIR *d = opendir(argv[a]);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[a], e->d_name);
            errors += run_file(path);
            files++;
        }
        if (d) closedir(d);
    }
    printf("replayed %d files\n", files);
    return errors || files == 0;
}
