/* examples/tci/program.h: the tenlane-tci program's parts (options, the run and its report,
 * the benchmark table). */
#ifndef TENLANE_EXAMPLES_TCI_PROGRAM_H
#define TENLANE_EXAMPLES_TCI_PROGRAM_H

#include <stdio.h>

#include "tci.h"

typedef struct tci_program {
  const tci_function *function;
  int function_given; /* --function was on the command line */
  tci_options options;
  tci_layout layout;
  int bits;    /* 0: the function's default */
  int threads; /* 0: the CPUs */
  size_t samples;
  const char *save;
  int bench;
  int repeat; /* --bench: runs per row, the median reported (1..TCI_BENCH_MAX_REPEAT) */
  int help;
} tci_program;

#define TCI_BENCH_MAX_REPEAT 99

void tci_usage(FILE *to);
/* 0, or 2 after printing the usage for a bad option. */
int tci_parse(int argc, char **argv, tci_program *p);
/* The benchmark table (bench.c); returns the exit status. */
int tci_bench(const tci_program *p);
/* A context of `threads` lanes and a session on it; 0 or 1 (message printed). */
int tci_open(int threads, tl_context **ctx, tl_session **session);
void tci_close(tl_context *ctx, tl_session *session);

#endif
