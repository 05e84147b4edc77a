/* Every command is int cmd_x(int argc, char **argv), returning the exit code. */
#ifndef KV_COMMANDS_H
#define KV_COMMANDS_H

#include "kernels/kernel.h"

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
