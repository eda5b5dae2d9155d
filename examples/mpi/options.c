/* examples/mpi/options.c: the command line of tenlane-fanout-mpi.
 *
 * Parsing makes no MPI call: every rank parses its own argv (mpirun may give ranks
 * different ones), and main then agrees on one outcome over all ranks, so a bad option on
 * any rank ends every rank with status 2 instead of leaving the others waiting. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "mpi_fanout.h"
#include "shape.h"

#define DEFAULT_PATCHES 6000
#define DEFAULT_LENGTH 24
#define DEFAULT_PHYS 2
#define DEFAULT_BOND 32
#define DEFAULT_TOL 1e-6
#define DEFAULT_SEED 1
#define DEFAULT_BATCH 16
#define DEFAULT_WARMUP 64

static void usage(FILE *to) {
  fprintf(to,
          "usage: mpirun -np R [mpirun options] tenlane-fanout-mpi [options]\n"
          "\n"
          "Runs tenlane-fanout's interpolation patches over the R ranks of an MPI job. Each\n"
          "rank is one tenlane context (one held session, one phase per batch); rank 0 hands\n"
          "batches of items to idle ranks, computes its own in between, gathers the results\n"
          "in item order and checks them bit for bit against a one-rank, one-lane run.\n"
          "\n"
          "options:\n"
          "  --patches N   patches (items)                               (default %d)\n"
          "  --length L    sites of the tensor train, >= 4               (default %d)\n"
          "  --phys D      physical dimension of each site, >= 2         (default %d)\n"
          "  --bond X      bond dimension of every patch, >= 1           (default %d)\n"
          "  --bond-range LO:HI  each patch draws its bond from LO..HI (seeded)\n"
          "  --dtype T     f64 or c128                                   (default f64)\n"
          "  --tol T       relative truncation tolerance, 0 < T < 1      (default %g)\n"
          "  --seed S      seed of the tensor train and of every patch   (default %d)\n"
          "  --lanes N     lanes of every rank's context                 (default: the CPUs\n"
          "                sched_getaffinity gives the rank)\n"
          "  --batch B     items per batch handed to a worker rank       (default %d)\n"
          "  --warmup W    items of each rank's untimed warm-up phase    (default %d)\n"
          "  --fail-item K[,K...]  make these items fail (a test hook)\n"
          "  --quiet       print only the summary and the check lines\n"
          "  --help        this text\n"
          "\n"
          "mpirun: as root add OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 to the\n"
          "environment; threaded ranks need --bind-to none; more ranks than cores need\n"
          "--oversubscribe. Exit status (the same on every rank): 0 ok, 1 an item failed\n"
          "(the lowest failing item over all ranks is printed), 2 bad options on some rank,\n"
          "3 setup or MPI failure, 4 results differ from the one-rank run. See\n"
          "docs/scale-out.md.\n",
          DEFAULT_PATCHES, DEFAULT_LENGTH, DEFAULT_PHYS, DEFAULT_BOND, DEFAULT_TOL, DEFAULT_SEED,
          DEFAULT_BATCH, DEFAULT_WARMUP);
}

static int bad(int speak, const char *what, const char *value) {
  if (speak) {
    fprintf(stderr, "tenlane-fanout-mpi: %s: '%s'\n\n", what, value ? value : "");
    usage(stderr);
  }
  return 2;
}

static int parse_fail_items(const char *text, mpi_options *opt) {
  char copy[256];
  if (!text || strlen(text) >= sizeof copy) return -1;
  strcpy(copy, text);
  opt->fail_count = 0;
  char *save = NULL;
  for (char *part = strtok_r(copy, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
    long long v = 0;
    if (opt->fail_count == MPI_MAX_FAIL_ITEMS || fan_parse_ll(part, 0, 100000000, &v)) return -1;
    opt->fail_items[opt->fail_count++] = (size_t)v;
  }
  return opt->fail_count > 0 ? 0 : -1;
}

enum {
  OPT_SEED = FAN_SHAPE_END,
  OPT_LANES,
  OPT_BATCH,
  OPT_WARMUP,
  OPT_FAIL_ITEM,
  OPT_QUIET,
  OPT_HELP
};

/* Where opt keeps the options that size the problem (shape.h). */
static fan_shape_fields shape_fields(mpi_options *opt) {
  fan_shape_fields f = {&opt->patches, &opt->length, &opt->phys, &opt->bond_lo,
                        &opt->bond_hi, &opt->dtype,  &opt->tol};
  return f;
}

/* One option with its value; returns -1 to go on, else the status. */
static int take(int c, const char *arg, mpi_options *opt, int speak) {
  if (c >= FAN_SHAPE_PATCHES && c < FAN_SHAPE_END) {
    const fan_shape_fields fields = shape_fields(opt);
    const char *complaint = fan_shape_parse(c, arg, &fields);
    return complaint ? bad(speak, complaint, arg) : -1;
  }
  long long v = 0;
  switch (c) {
    case OPT_SEED:
      if (fan_parse_ll(arg, 0, (long long)(~0ULL >> 1), &v))
        return bad(speak, "--seed needs an integer >= 0", arg);
      opt->seed = (uint64_t)v;
      return -1;
    case OPT_LANES:
      if (fan_parse_ll(arg, 1, 256, &v)) return bad(speak, "--lanes needs 1..256", arg);
      opt->lanes = (int)v;
      return -1;
    case OPT_BATCH:
      if (fan_parse_ll(arg, 1, 65536, &v)) return bad(speak, "--batch needs 1..65536", arg);
      opt->batch = (size_t)v;
      return -1;
    case OPT_WARMUP:
      if (fan_parse_ll(arg, 0, 100000000, &v)) return bad(speak, "--warmup needs a count", arg);
      opt->warmup = (size_t)v;
      return -1;
    case OPT_FAIL_ITEM:
      if (parse_fail_items(arg, opt))
        return bad(speak, "--fail-item needs up to 8 item numbers, comma-separated", arg);
      return -1;
    case OPT_QUIET:
      opt->quiet = 1;
      return -1;
    default:
      return 2;
  }
}

int mpi_parse_options(int argc, char **argv, mpi_options *opt, int speak) {
  static const struct option long_options[] = {
      FAN_SHAPE_LONG_OPTIONS,
      {"seed", required_argument, NULL, OPT_SEED},
      {"lanes", required_argument, NULL, OPT_LANES},
      {"batch", required_argument, NULL, OPT_BATCH},
      {"warmup", required_argument, NULL, OPT_WARMUP},
      {"fail-item", required_argument, NULL, OPT_FAIL_ITEM},
      {"quiet", no_argument, NULL, OPT_QUIET},
      {"help", no_argument, NULL, OPT_HELP},
      {NULL, 0, NULL, 0}};
  memset(opt, 0, sizeof *opt);
  opt->patches = DEFAULT_PATCHES;
  opt->length = DEFAULT_LENGTH;
  opt->phys = DEFAULT_PHYS;
  opt->bond_lo = opt->bond_hi = DEFAULT_BOND;
  opt->dtype = FAN_F64;
  opt->tol = DEFAULT_TOL;
  opt->seed = DEFAULT_SEED;
  opt->batch = DEFAULT_BATCH;
  opt->warmup = DEFAULT_WARMUP;
  opterr = 0;
  optind = 1; /* parsing may run twice (silently, then to report) */
  for (;;) {
    int c = getopt_long(argc, argv, "", long_options, NULL);
    if (c == -1) break;
    if (c == OPT_HELP) {
      if (speak) usage(stdout);
      return 0;
    }
    if (c == '?' || c == ':')
      return bad(speak, optopt ? "option needs a value" : "unknown option", argv[optind - 1]);
    int status = take(c, optarg, opt, speak);
    if (status >= 0) return status;
  }
  if (optind < argc) return bad(speak, "unexpected argument", argv[optind]);
  const fan_shape_fields fields = shape_fields(opt);
  const char *complaint = fan_shape_check(&fields);
  if (complaint) return bad(speak, complaint, "");
  if (opt->warmup > opt->patches) opt->warmup = opt->patches;
  return -1;
}

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0x100000001b3ULL;
}

uint64_t mpi_options_digest(const mpi_options *opt) {
  uint64_t tol_bits;
  memcpy(&tol_bits, &opt->tol, sizeof tol_bits);
  uint64_t h = 0xcbf29ce484222325ULL;
  h = mix(h, opt->patches);
  h = mix(h, (uint64_t)opt->length);
  h = mix(h, (uint64_t)opt->phys);
  h = mix(h, (uint64_t)opt->bond_lo);
  h = mix(h, (uint64_t)opt->bond_hi);
  h = mix(h, (uint64_t)opt->dtype);
  h = mix(h, tol_bits);
  h = mix(h, opt->seed);
  h = mix(h, opt->batch);
  h = mix(h, (uint64_t)opt->fail_count);
  for (int i = 0; i < opt->fail_count; i++) h = mix(h, opt->fail_items[i]);
  return h;
}
