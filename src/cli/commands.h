/* Every command is int cmd_x(int argc, char **argv), returning the exit code. */
#ifndef KV_COMMANDS_H
#define KV_COMMANDS_H

#include <stdio.h>

#include "kernels/kernel.h"

/* The option getopt_long (":..." short options) just refused with ':' (no
 * value) or '?' (unknown): the word it stopped at, argv[optind - 1] (GNU
 * getopt moves the operands before it, such as a suite file, only later, so
 * the word where the call began may be one of those), or, for an unknown
 * letter, "-" and the letter (a group such as -vx stays on its word). */
static inline const char *kv_bad_option(int c, int optopt_, int optind_, char **argv, char *buf, size_t size)
{
    if (c == '?' && optopt_ > 0 && optopt_ < 128) {
        snprintf(buf, size, "-%c", optopt_);
        return buf;
    }
    return argv[optind_ - 1];
}

int cmd_kernel(const struct kv_kernel *k, int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_mutate(int argc, char **argv);
int cmd_report(int argc, char **argv);
void kv_usage(FILE *f);

#endif
