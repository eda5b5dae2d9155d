/* examples/tci/options.c: the program's command line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program.h"

void tci_usage(FILE *to) {
  fprintf(to,
          "usage: tenlane-tci [options]\n"
          "  --function NAME   a built-in function (default sharp2d):");
  for (size_t i = 0; i < tci_builtin_count(); i++) fprintf(to, " %s", tci_builtin_at(i)->name);
  fprintf(to,
          "\n"
          "  --bits R          2^R points per variable, 1..40 (default: the function's)\n"
          "  --layout L        interleaved (default) or fused quantics sites\n"
          "  --tol T           tolerance relative to max |f| (default 1e-8)\n"
          "  --max-bond X      maximum bond dimension per patch (default 32)\n"
          "  --max-sweeps N    full sweeps per patch at most (default 20)\n"
          "  --no-patching     one tensor train, no splitting\n"
          "  --cache C         on, off or auto (default: on unless f is a cheap built-in)\n"
          "  --threads N       lanes of the all-lanes run (default: the CPUs)\n"
          "  --samples N       random points for the error (default 10000)\n"
          "  --seed S          seed of the pivot candidates and the sample points (default 1)\n"
          "  --save FILE       save the patched tensor train (format: docs/tci.md)\n"
          "  --cancel-after N  cancel the run after N patches (to show cancellation)\n"
          "  --bench           print the benchmark table (docs/tci.md) and exit\n"
          "  --repeat N        --bench: runs per row, the median printed (default 5)\n"
          "  --help            this text\n");
}

static int bad(const char *option, const char *value, const char *need) {
  fprintf(stderr, "tenlane-tci: %s needs %s: '%s'\n", option, need, value ? value : "");
  tci_usage(stderr);
  return 2;
}

static int int_in(const char *s, long lo, long hi, long *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

int tci_parse(int argc, char **argv, tci_program *p) {
  memset(p, 0, sizeof *p);
  tci_options_init(&p->options);
  p->function = tci_builtin("sharp2d");
  p->layout = TCI_INTERLEAVED;
  p->samples = 10000;
  p->repeat = 5;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    long n;
    if (strcmp(o, "--help") == 0) {
      p->help = 1;
    } else if (strcmp(o, "--no-patching") == 0) {
      p->options.patching = 0;
    } else if (strcmp(o, "--bench") == 0) {
      p->bench = 1;
    } else if (!v) {
      return bad(o, v, "a value (or is unknown)");
    } else if (strcmp(o, "--function") == 0) {
      p->function = tci_builtin(v);
      if (!p->function) return bad(o, v, "a built-in function name");
      p->function_given = 1;
      i++;
    } else if (strcmp(o, "--bits") == 0) {
      if (!int_in(v, 1, TCI_MAX_BITS, &n)) return bad(o, v, "1..40");
      p->bits = (int)n;
      i++;
    } else if (strcmp(o, "--layout") == 0) {
      if (strcmp(v, "interleaved") && strcmp(v, "fused")) return bad(o, v, "interleaved|fused");
      p->layout = strcmp(v, "fused") == 0 ? TCI_FUSED : TCI_INTERLEAVED;
      i++;
    } else if (strcmp(o, "--tol") == 0) {
      char *end;
      p->options.tol = strtod(v, &end);
      if (!*v || *end || !(p->options.tol > 0.0) || p->options.tol >= 1.0)
        return bad(o, v, "a number in (0, 1)");
      i++;
    } else if (strcmp(o, "--max-bond") == 0) {
      if (!int_in(v, 1, 512, &n)) return bad(o, v, "1..512");
      p->options.max_bond = (int)n;
      i++;
    } else if (strcmp(o, "--max-sweeps") == 0) {
      if (!int_in(v, 1, 1000, &n)) return bad(o, v, "1..1000");
      p->options.max_sweeps = (int)n;
      i++;
    } else if (strcmp(o, "--threads") == 0) {
      if (!int_in(v, 1, 1024, &n)) return bad(o, v, "1..1024");
      p->threads = (int)n;
      i++;
    } else if (strcmp(o, "--samples") == 0) {
      if (!int_in(v, 1, 10000000, &n)) return bad(o, v, "1..10000000");
      p->samples = (size_t)n;
      i++;
    } else if (strcmp(o, "--seed") == 0) {
      if (!int_in(v, 0, 2147483647L, &n)) return bad(o, v, "0..2147483647");
      p->options.seed = (uint64_t)n;
      i++;
    } else if (strcmp(o, "--cancel-after") == 0) {
      if (!int_in(v, 1, 1000000, &n)) return bad(o, v, "1..1000000");
      p->options.cancel_after = (int)n;
      i++;
    } else if (strcmp(o, "--repeat") == 0) {
      if (!int_in(v, 1, TCI_BENCH_MAX_REPEAT, &n)) return bad(o, v, "1..99");
      p->repeat = (int)n;
      i++;
    } else if (strcmp(o, "--cache") == 0) {
      if (strcmp(v, "on") && strcmp(v, "off") && strcmp(v, "auto")) return bad(o, v, "on|off|auto");
      p->options.value_cache = strcmp(v, "on") == 0    ? TCI_CACHE_ON
                               : strcmp(v, "off") == 0 ? TCI_CACHE_OFF
                                                       : TCI_CACHE_AUTO;
      i++;
    } else if (strcmp(o, "--save") == 0) {
      p->save = v;
      i++;
    } else {
      return bad(o, v, "to be a known option");
    }
  }
  return 0;
}
