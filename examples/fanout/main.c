/* examples/fanout/main.c: tenlane-fanout, the project's main job and its benchmark.
 *
 * Runs thousands of interpolation patches (patch.h) five ways in one process, threads
 * pinned: (a) tl_map over every lane of one held session, (b) the same on a budget-1
 * context, and three OpenMP loops calling the providers directly: (c) the same algorithm
 * with allocation per item, (d) the same algorithm with per-thread workspaces, (e) the
 * usual code (the full geqp3, allocation per item). The OpenMP rows also run on one thread,
 * so that every row's own N-thread/1-thread scaling is measured in the same run ((a)'s is
 * (a)/(b)). Prints progress, a table of items per second, the speedups and scalings, the
 * heap allocations per item and the thread count during (a); checks that (a) and (b)
 * produced the same results bit for bit and that (a)'s ranks and residuals agree with the
 * reference (the full pivoted QR of (e)). The tenlane variants run first, before any
 * OpenMP region has started libgomp's threads, so the thread count seen during (a) is
 * tenlane's alone.
 *
 * Exit status: 0 success; 1 an item failed (which one and why is printed, after every
 * lane joined); 2 bad options; 3 a setup failure; 4 the (a)/(b) results differ, or (a)
 * disagrees with the reference. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fanout.h"
#include "shape.h"

#define DEFAULT_PATCHES 8000
#define DEFAULT_LENGTH 24
#define DEFAULT_PHYS 2
#define DEFAULT_BOND 32
#define DEFAULT_TOL 1e-6
#define DEFAULT_SEED 1
#define DEFAULT_ROUNDS 3

/* Every configuration, in the order they run in a round: the five rows at --threads (b at
 * one lane), then the one-thread runs of the OpenMP rows. */
enum { FAN_CONFIGS = 8 };
static const fan_config configs[FAN_CONFIGS] = {
    {"a", "(a) tenlane tl_map on every lane", "(a) tenlane, every lane", FAN_A, 0, 1,
     FAN_DIRECT_KEPT},
    {"b", "(b) tenlane on one lane (budget 1)", "(b) tenlane, one lane", FAN_B, 1, 1,
     FAN_DIRECT_KEPT},
    {"c", "(c) OpenMP same algorithm + malloc", "(c) OpenMP + malloc", FAN_C, 0, 0,
     FAN_DIRECT_MALLOC},
    {"d", "(d) OpenMP same algorithm + kept buffers", "(d) OpenMP + kept", FAN_D, 0, 0,
     FAN_DIRECT_KEPT},
    {"e", "(e) OpenMP typical: full geqp3 + malloc", "(e) OpenMP typical", FAN_E, 0, 0,
     FAN_DIRECT_TYPICAL},
    {"c1", "    (c) on one thread", "(c) OpenMP + malloc on 1 thread", FAN_C, 1, 0,
     FAN_DIRECT_MALLOC},
    {"d1", "    (d) on one thread", "(d) OpenMP + kept on 1 thread", FAN_D, 1, 0, FAN_DIRECT_KEPT},
    {"e1", "    (e) on one thread", "(e) OpenMP typical on 1 thread", FAN_E, 1, 0,
     FAN_DIRECT_TYPICAL}};

/* The configuration whose one-thread rate divides a row's rate in the scaling column. */
static int one_thread_config(int row) {
  switch (row) {
    case FAN_A:
      return 1;
    case FAN_C:
      return 5;
    case FAN_D:
      return 6;
    case FAN_E:
      return 7;
    default:
      return -1;
  }
}

#define MAX_ROUND_STATS 64

/* A configuration's measured passes, summed. */
typedef struct fan_totals {
  double seconds;
  size_t items;
  uint64_t tl_allocs, mallocs;
  int threads_seen, lanes;
  double rate_min, rate_max;        /* items/s of its slowest and fastest round */
  double round_ns[MAX_ROUND_STATS]; /* ns per item of each round (the first MAX_ROUND_STATS) */
  int round_count;
} fan_totals;

static void usage(FILE *to, int cpus) {
  fprintf(to,
          "usage: tenlane-fanout [options]\n"
          "\n"
          "Runs a tensor-cross-interpolation fan-out: each patch samples a random tensor train\n"
          "on a (bond*phys) x (phys*bond) grid, picks its pivots by QR with column pivoting\n"
          "(truncated at --tol) and LU, and gets its two new cores from two triangular solves.\n"
          "The same patches run five ways, in interleaved rounds, threads pinned:\n"
          "(a) tenlane tl_map on every lane, (b) tenlane on one lane, and OpenMP loops calling\n"
          "the providers directly: (c) the same algorithm with malloc per item, (d) the same\n"
          "algorithm with per-thread workspaces, (e) the usual code (full geqp3, malloc per\n"
          "item); (c)-(e) also run on one thread for their scaling. Then a table.\n"
          "\n"
          "options:\n"
          "  --patches N        patches (items) per variant             (default %d)\n"
          "  --length L         sites of the tensor train, >= 4         (default %d)\n"
          "  --phys D           physical dimension of each site, >= 2   (default %d)\n"
          "  --bond X           bond dimension of every patch, >= 1     (default %d)\n"
          "  --bond-range LO:HI each patch draws its bond from LO..HI (seeded; the tensor\n"
          "                     train has bond HI)\n"
          "  --bond-order O     random (default) or sorted: the same spread of bonds, the\n"
          "                     items in increasing bond (runs of one shape)\n"
          "  --dtype T          f64 or c128                             (default f64)\n"
          "  --tol T            relative truncation tolerance, 0 < T < 1 (default %g)\n"
          "  --threads N        lanes of (a), OpenMP threads of (c)-(e) (default %d: the CPUs\n"
          "                     this process may use; more than that oversubscribes them)\n"
          "  --seed S           seed of the tensor train and of every patch (default %d)\n"
          "  --csv FILE         write one CSV row per run to FILE (header included)\n"
          "  --quiet            no progress output (the table is still printed)\n"
          "  --help             this text\n"
          "\n"
          "exit status: 0 ok, 1 an item failed, 2 bad options, 3 setup failure,\n"
          "4 results of (a) and (b) differ or disagree with the reference.\n"
          "See docs/fanout.md for how to read the table.\n",
          DEFAULT_PATCHES, DEFAULT_LENGTH, DEFAULT_PHYS, DEFAULT_BOND, DEFAULT_TOL, cpus,
          DEFAULT_SEED);
}

static int bad_option(const char *what, const char *value, int cpus) {
  fprintf(stderr, "tenlane-fanout: %s: '%s'\n\n", what, value ? value : "");
  usage(stderr, cpus);
  return 2;
}

static int parse_u64(const char *text, uint64_t *out) {
  if (!text || !*text || *text == '-') return -1;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 0);
  if (errno || *end != '\0') return -1;
  *out = (uint64_t)v;
  return 0;
}

static int process_cpus(int **out) {
  cpu_set_t set;
  CPU_ZERO(&set);
  int count = 0;
  int *list = NULL;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    list = malloc(sizeof(int) * CPU_SETSIZE);
    if (list)
      for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) list[count++] = c;
  }
  if (count == 0) {
    free(list);
    list = malloc(sizeof(int));
    if (!list) return 0;
    list[0] = 0;
    count = 1;
  }
  *out = list;
  return count;
}

enum {
  OPT_BOND_ORDER = FAN_SHAPE_END,
  OPT_THREADS,
  OPT_SEED,
  OPT_CSV,
  OPT_QUIET,
  OPT_HELP,
  OPT_FAIL_ITEM,
  OPT_VARIANTS,
  OPT_WARMUP,
  OPT_ROUNDS,
  OPT_NO_SCALING,
  OPT_ROWS,
  OPT_QUICK
};

static int option_failed(int *status, int code) {
  *status = code;
  return -1;
}

/* Where opt keeps the options that size the problem (shape.h). */
static fan_shape_fields shape_fields(fan_options *opt) {
  fan_shape_fields f = {&opt->patches, &opt->length, &opt->phys, &opt->bond_lo,
                        &opt->bond_hi, &opt->dtype,  &opt->tol};
  return f;
}

/* The options that shape the problem; 1 when c was one of them, -1 to stop (*status). */
static int parse_problem_option(int c, fan_options *opt, int cpus, int *status) {
  if (c >= FAN_SHAPE_PATCHES && c < FAN_SHAPE_END) {
    const fan_shape_fields fields = shape_fields(opt);
    const char *complaint = fan_shape_parse(c, optarg, &fields);
    return complaint ? option_failed(status, bad_option(complaint, optarg, cpus)) : 1;
  }
  switch (c) {
    case OPT_BOND_ORDER:
      if (strcmp(optarg, "random") == 0)
        opt->bond_sorted = 0;
      else if (strcmp(optarg, "sorted") == 0)
        opt->bond_sorted = 1;
      else
        return option_failed(status,
                             bad_option("--bond-order needs random or sorted", optarg, cpus));
      return 1;
    case OPT_SEED:
      if (parse_u64(optarg, &opt->seed))
        return option_failed(status, bad_option("--seed needs an unsigned integer", optarg, cpus));
      return 1;
    default:
      return 0;
  }
}

/* Returns -1 to go on, else the exit status. */
static int parse_options(int argc, char **argv, fan_options *opt, int cpus) {
  static const struct option long_options[] = {
      FAN_SHAPE_LONG_OPTIONS,
      {"bond-order", required_argument, NULL, OPT_BOND_ORDER},
      {"threads", required_argument, NULL, OPT_THREADS},
      {"seed", required_argument, NULL, OPT_SEED},
      {"csv", required_argument, NULL, OPT_CSV},
      {"quiet", no_argument, NULL, OPT_QUIET},
      {"help", no_argument, NULL, OPT_HELP},
      /* Test hooks, not in --help: make one item fail, run a subset of the variants,
       * size the untimed warm-up pass, set the number of interleaved rounds, skip the
       * one-thread runs of the OpenMP rows. */
      {"fail-item", required_argument, NULL, OPT_FAIL_ITEM},
      {"variants", required_argument, NULL, OPT_VARIANTS},
      {"warmup", required_argument, NULL, OPT_WARMUP},
      {"rounds", required_argument, NULL, OPT_ROUNDS},
      {"no-scaling", no_argument, NULL, OPT_NO_SCALING},
      /* For scripts/run-benches (make bench): its row format, and a shorter run. */
      {"rows", no_argument, NULL, OPT_ROWS},
      {"quick", no_argument, NULL, OPT_QUICK},
      {NULL, 0, NULL, 0}};
  opterr = 0;
  int warmup_set = 0;
  for (;;) {
    int index = 0;
    int c = getopt_long(argc, argv, "", long_options, &index);
    if (c == -1) break;
    int status = 0;
    int taken = parse_problem_option(c, opt, cpus, &status);
    if (taken < 0) return status;
    if (taken) continue;
    long long v = 0;
    switch (c) {
      case OPT_THREADS:
        if (fan_parse_ll(optarg, 1, 256, &v))
          return bad_option("--threads needs 1..256", optarg, cpus);
        opt->threads = (int)v;
        break;
      case OPT_CSV:
        if (!*optarg) return bad_option("--csv needs a file name", optarg, cpus);
        opt->csv = optarg;
        break;
      case OPT_QUIET:
        opt->quiet = 1;
        break;
      case OPT_HELP:
        usage(stdout, cpus);
        return 0;
      case OPT_FAIL_ITEM:
        if (fan_parse_ll(optarg, 0, 100000000, &v))
          return bad_option("--fail-item needs an item index", optarg, cpus);
        opt->fail_item = v;
        break;
      case OPT_VARIANTS:
        if (!*optarg || strspn(optarg, "abcde") != strlen(optarg))
          return bad_option("--variants needs letters from 'abcde'", optarg, cpus);
        opt->variants = optarg;
        break;
      case OPT_WARMUP:
        if (fan_parse_ll(optarg, 0, 100000000, &v))
          return bad_option("--warmup needs a count", optarg, cpus);
        opt->warmup = (size_t)v;
        warmup_set = 1;
        break;
      case OPT_ROUNDS:
        if (fan_parse_ll(optarg, 1, 1000, &v))
          return bad_option("--rounds needs 1..1000", optarg, cpus);
        opt->rounds = (int)v;
        break;
      case OPT_NO_SCALING:
        opt->scaling = 0;
        break;
      case OPT_ROWS:
        opt->rows = 1;
        opt->quiet = 1;
        break;
      case OPT_QUICK:
        opt->patches = DEFAULT_PATCHES / 4;
        break;
      default: {
        const char *arg = argv[optind - 1];
        return bad_option(optopt ? "option needs a value" : "unknown option", arg, cpus);
      }
    }
  }
  if (optind < argc) return bad_option("unexpected argument", argv[optind], cpus);
  const fan_shape_fields fields = shape_fields(opt);
  const char *complaint = fan_shape_check(&fields);
  if (complaint) return bad_option(complaint, "", cpus);
  if (!warmup_set) {
    size_t w = opt->patches / 20;
    opt->warmup = w < 64 ? 64 : w;
  }
  if (opt->warmup > opt->patches) opt->warmup = opt->patches;
  return -1;
}

/* Whether configuration k runs: its row was asked for, and a one-thread run only when it
 * differs from the row's own (more than one thread) and scaling is on. */
static int wants(const fan_options *opt, int k) {
  const fan_config *cf = &configs[k];
  if (!strchr(opt->variants, "abcde"[cf->row])) return 0;
  if (cf->one_thread && !cf->tenlane) return opt->scaling && opt->threads > 1;
  return 1;
}

typedef struct result_stats {
  int rank_lo, rank_hi, bond_lo, bond_hi;
  double rank_mean, bond_mean, bond_cube_mean, residual_max;
} result_stats;

static void stats_of(const fan_result *r, size_t n, result_stats *s) {
  memset(s, 0, sizeof *s);
  s->rank_lo = s->bond_lo = 1 << 30;
  for (size_t i = 0; i < n; i++) {
    if (r[i].rank < s->rank_lo) s->rank_lo = r[i].rank;
    if (r[i].rank > s->rank_hi) s->rank_hi = r[i].rank;
    if (r[i].bond < s->bond_lo) s->bond_lo = r[i].bond;
    if (r[i].bond > s->bond_hi) s->bond_hi = r[i].bond;
    s->rank_mean += r[i].rank;
    s->bond_mean += r[i].bond;
    s->bond_cube_mean += (double)r[i].bond * r[i].bond * r[i].bond;
    if (r[i].residual > s->residual_max) s->residual_max = r[i].residual;
  }
  if (n) {
    s->rank_mean /= (double)n;
    s->bond_mean /= (double)n;
    s->bond_cube_mean /= (double)n;
  }
}

/* The rank/residual criteria against a reference computed another way: the same site and
 * bond, ranks within one of each other (the cut may fall between two nearly equal diagonal
 * entries, which rounding orders either way), and a residual at most 10 max(tol, the
 * reference's). Returns the items that fail; *rank_off counts ranks that differ. */
static size_t count_disagreements(const fan_result *x, const fan_result *ref, size_t n, double tol,
                                  size_t *rank_off, size_t *first) {
  size_t bad = 0;
  *rank_off = 0;
  for (size_t i = 0; i < n; i++) {
    double bound = 10.0 * (ref[i].residual > tol ? ref[i].residual : tol);
    int drank = x[i].rank - ref[i].rank;
    if (drank) (*rank_off)++;
    int ok = x[i].computed && ref[i].computed && x[i].site == ref[i].site &&
             x[i].bond == ref[i].bond && drank >= -1 && drank <= 1 && x[i].residual <= bound;
    if (!ok && bad++ == 0) *first = i;
  }
  return bad;
}

static void format_cpus(const int *cpus, int count, char *out, size_t size) {
  size_t used = 0;
  out[0] = '\0';
  for (int i = 0; i < count && used + 12 < size; i++) {
    int run_end = i;
    while (run_end + 1 < count && cpus[run_end + 1] == cpus[run_end] + 1) run_end++;
    int n = run_end > i
                ? snprintf(out + used, size - used, "%s%d-%d", i ? "," : "", cpus[i], cpus[run_end])
                : snprintf(out + used, size - used, "%s%d", i ? "," : "", cpus[i]);
    if (n < 0) break;
    used += (size_t)n;
    i = run_end;
  }
}

static int compare_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* Median and largest of a variant's per-round ns per item. */
static void round_stats(const fan_totals *t, double *median, double *worst) {
  double sorted[MAX_ROUND_STATS];
  int n = t->round_count;
  memcpy(sorted, t->round_ns, sizeof(double) * (size_t)n);
  qsort(sorted, (size_t)n, sizeof(double), compare_double);
  *median = n == 0 ? NAN : (n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]));
  *worst = n == 0 ? NAN : sorted[n - 1];
}

/* scripts/run-benches rows: row, section, benchmark, median ns, p99 ns, anchor, anchor
 * median ns, round trip ns (tab-separated). Here the figures are ns per item over the
 * rounds (median, and the slowest round in the p99 column); (a) is anchored on each of
 * the other variants, so the table's ratio column is the inverse of the speedup. */
static void print_rows(const fan_totals *runs, const int *ran, const fan_options *opt) {
  double median[FAN_CONFIGS], worst[FAN_CONFIGS];
  for (int k = 0; k < FAN_CONFIGS; k++)
    if (ran[k]) round_stats(&runs[k], &median[k], &worst[k]);
  for (int k = 0; k < FAN_CONFIGS; k++) {
    if (!ran[k]) continue;
    if (k == FAN_A) {
      for (int anchor = FAN_B; anchor < FAN_CONFIGS; anchor++)
        if (ran[anchor] && !(configs[anchor].one_thread && anchor != FAN_B))
          printf("row\tfanout\t%s, %d lanes, %s: time per patch\t%.1f\t%.1f\t%s\t%.1f\tnan\n",
                 configs[k].brief, opt->threads, fan_dtype_name(opt->dtype), median[k], worst[k],
                 configs[anchor].brief, median[anchor]);
    } else {
      printf("row\tfanout\t%s, %s: time per patch\t%.1f\t%.1f\t-\tnan\tnan\n", configs[k].brief,
             fan_dtype_name(opt->dtype), median[k], worst[k]);
    }
  }
}

/* Everything one run of the program keeps. */
typedef struct fan_run {
  const fan_options *opt;
  fan_env env;
  fan_result *results[FAN_CONFIGS]; /* published */
  fan_result *priv[FAN_CONFIGS];    /* being computed */
  fan_totals runs[FAN_CONFIGS];
  void *states[FAN_CONFIGS];
  int ran[FAN_CONFIGS];
} fan_run;

static const fan_runner *runner_of(int k) {
  return configs[k].tenlane ? &fan_tenlane_runner : &fan_openmp_runner;
}

/* Open every configuration asked for; the exit status (0 to go on). */
static int open_all(fan_run *run, int *active) {
  *active = 0;
  for (int k = 0; k < FAN_CONFIGS; k++) {
    if (!wants(run->opt, k)) continue;
    if (!configs[k].tenlane && !fan_openmp_available()) {
      if (!configs[k].one_thread) printf("%s: skipped (built without OpenMP)\n", configs[k].label);
      continue;
    }
    char why[400];
    run->priv[k] = calloc(run->opt->patches, sizeof(fan_result));
    if (!run->priv[k]) {
      fprintf(stderr, "tenlane-fanout: out of memory for results\n");
      return 3;
    }
    if (runner_of(k)->open(&run->env, &configs[k], &run->states[k], why, sizeof why) != 0) {
      fprintf(stderr, "tenlane-fanout: %s could not start: %s\n", configs[k].label, why);
      run->states[k] = NULL;
      return 3;
    }
    run->ran[k] = 1;
    run->runs[k].lanes = runner_of(k)->lanes(run->states[k]);
    run->runs[k].rate_min = 1e300;
    (*active)++;
  }
  return 0;
}

static void add_pass(fan_totals *t, const fan_pass *pass) {
  t->seconds += pass->seconds;
  t->items += pass->count;
  t->tl_allocs += pass->tl_allocs;
  t->mallocs += pass->mallocs;
  double rate = pass->seconds > 0 ? (double)pass->count / pass->seconds : 0.0;
  if (rate < t->rate_min) t->rate_min = rate;
  if (rate > t->rate_max) t->rate_max = rate;
  if (t->round_count < MAX_ROUND_STATS && pass->count > 0)
    t->round_ns[t->round_count++] = 1e9 * pass->seconds / (double)pass->count;
}

static void report_failure(int k, int rc, const fan_pass *pass) {
  if (rc == 1) {
    fprintf(stderr, "tenlane-fanout: item %zu failed in %s: %s\n", pass->failed_item,
            configs[k].label, pass->why);
    fprintf(stderr,
            "tenlane-fanout: every %s joined before this report; no result of this run was "
            "published\n",
            configs[k].tenlane ? "lane" : "OpenMP thread");
  } else {
    fprintf(stderr, "tenlane-fanout: %s failed: %s\n", configs[k].label, pass->why);
  }
}

/* The measured items run in rounds; in each round every configuration runs its slice of
 * the items in turn, so a change in the machine's load hits every one alike. A
 * configuration's warm-up pass (untimed) runs right before its first slice. Threads are
 * counted only until the first OpenMP region, whose threads outlive it. */
static int run_rounds(fan_run *run, fan_progress *progress) {
  const fan_options *opt = run->opt;
  int omp_started = 0, warmed[FAN_CONFIGS] = {0};
  static char labels[2][FAN_CONFIGS][96];
  for (int round = 0; round < opt->rounds; round++) {
    size_t first = opt->patches * (size_t)round / (size_t)opt->rounds;
    size_t end = opt->patches * (size_t)(round + 1) / (size_t)opt->rounds;
    for (int k = 0; k < FAN_CONFIGS; k++) {
      if (!run->ran[k] || end == first) continue;
      for (int warm = warmed[k] ? 1 : 0; warm < 2; warm++) {
        fan_progress quiet;
        fan_progress_begin(&quiet, opt->warmup, 0);
        fan_pass pass;
        memset(&pass, 0, sizeof pass);
        pass.first = warm ? first : 0;
        pass.count = warm ? end - first : opt->warmup;
        pass.priv = run->priv[k];
        pass.progress = warm ? progress : &quiet;
        pass.sample_threads = k == FAN_A && !omp_started;
        if (warm) {
          char *label = labels[round % 2][k];
          snprintf(label, sizeof labels[0][0], "round %d/%d %s", round + 1, opt->rounds,
                   configs[k].brief);
          fan_progress_label(progress, label);
        }
        int rc = pass.count ? runner_of(k)->pass(run->states[k], &pass) : 0;
        if (!configs[k].tenlane) omp_started = 1;
        if (rc != 0) {
          fan_progress_end(progress, 0);
          fflush(stdout);
          report_failure(k, rc, &pass);
          return rc == 1 ? 1 : 3;
        }
        fan_totals *t = &run->runs[k];
        if (pass.threads_seen > t->threads_seen) t->threads_seen = pass.threads_seen;
        if (!warm)
          warmed[k] = 1;
        else
          add_pass(t, &pass);
      }
    }
  }
  return 0;
}

static double rate_of(const fan_run *run, int k) {
  if (k < 0 || !run->ran[k] || run->runs[k].seconds <= 0) return 0.0;
  return (double)run->runs[k].items / run->runs[k].seconds;
}

/* A row's N-thread / 1-thread rate, or 0 when either did not run. */
static double scaling_of(const fan_run *run, int row) {
  double one = rate_of(run, one_thread_config(row));
  return one > 0 ? rate_of(run, row) / one : 0.0;
}

static void print_table(const fan_run *run) {
  const fan_options *opt = run->opt;
  printf("\n%-42s %5s %8s %9s %7s %7s %10s %9s\n", "variant", "lanes", "seconds", "items/s",
         "scaling", "spread", "tl allocs", "mallocs");
  printf("%-42s %5s %8s %9s %7s %7s %10s %9s\n", "", "", "", "", "N/1", "", "per item", "per item");
  for (int k = 0; k < FAN_CONFIGS; k++) {
    if (!run->ran[k]) continue;
    const fan_totals *r = &run->runs[k];
    double rate = rate_of(run, k);
    double scaling = configs[k].one_thread || opt->threads < 2 ? 0.0 : scaling_of(run, k);
    char tl_allocs[32] = "-", mallocs[32] = "n/a", spread[32] = "-", scale[32] = "-";
    if (configs[k].tenlane)
      snprintf(tl_allocs, sizeof tl_allocs, "%.4f", (double)r->tl_allocs / (double)r->items);
    if (fan_malloc_counted())
      snprintf(mallocs, sizeof mallocs, "%.4f", (double)r->mallocs / (double)r->items);
    if (opt->rounds > 1 && rate > 0)
      snprintf(spread, sizeof spread, "%.0f%%", 100.0 * (r->rate_max - r->rate_min) / rate);
    if (scaling > 0) snprintf(scale, sizeof scale, "%.2f", scaling);
    printf("%-42s %5d %8.3f %9.1f %7s %7s %10s %9s\n", configs[k].label, r->lanes, r->seconds, rate,
           scale, spread, tl_allocs, mallocs);
  }
}

static const char *verdict(int met) { return met ? "met" : "NOT met"; }

static void print_speedups(const fan_run *run) {
  const fan_options *opt = run->opt;
  if (!run->ran[FAN_A]) return;
  double a = rate_of(run, FAN_A);
  printf("\nspeedups of (a):");
  static const char *const notes[FAN_ROWS] = {"", "", "aim >= 1.05", "aim >= 1.0",
                                              "the usual code"};
  for (int v = FAN_C; v <= FAN_E; v++)
    if (run->ran[v] && rate_of(run, v) > 0)
      printf("  (a)/(%s) %.2fx (%s)", configs[v].key, a / rate_of(run, v), notes[v]);
  printf("\n");
  double sa = scaling_of(run, FAN_A), sd = scaling_of(run, FAN_D);
  if (sa > 0 && opt->threads > 1) {
    printf("scaling %d/1: (a) %.2f", opt->threads, sa);
    for (int v = FAN_C; v <= FAN_E; v++)
      if (scaling_of(run, v) > 0) printf("  (%s) %.2f", configs[v].key, scaling_of(run, v));
    if (sd > 0) printf("  aim (a) >= (d) - 0.03: %s", verdict(sa >= sd - 0.03));
    printf("\n");
  }
  printf(
      "threads during (a): %d seen in /proc/self/task from inside items "
      "(budget %d + the calling thread = %d)\n",
      run->runs[FAN_A].threads_seen, opt->threads, opt->threads + 1);
  printf("heap allocations per item in (a), steady state: %.4f through tenlane's hooks",
         (double)run->runs[FAN_A].tl_allocs / (double)run->runs[FAN_A].items);
  if (fan_malloc_counted())
    printf(", %.4f malloc-family calls in the whole process\n",
           (double)run->runs[FAN_A].mallocs / (double)run->runs[FAN_A].items);
  else
    printf("; malloc-family calls not counted (sanitizer build)\n");
}

/* The checks; returns 4 when (a) and (b) differ or (a) disagrees with the reference. */
static int print_checks(const fan_run *run) {
  const fan_options *opt = run->opt;
  int status = 0;
  for (int k = 0; k < FAN_CONFIGS; k++) {
    if (!run->ran[k]) continue;
    result_stats s;
    stats_of(run->results[k], opt->patches, &s);
    printf(
        "results %s: rank min %d mean %.2f max %d; bond min %d mean %.2f max %d (cube-root "
        "mean of bond^3 %.2f); largest residual %.3g\n",
        configs[k].key, s.rank_lo, s.rank_mean, s.rank_hi, s.bond_lo, s.bond_mean, s.bond_hi,
        cbrt(s.bond_cube_mean), s.residual_max);
    break; /* printed once: the sizes are the same for every variant */
  }
  int mine = run->ran[FAN_A] ? FAN_A : (run->ran[FAN_B] ? FAN_B : -1);
  if (run->ran[FAN_A] && run->ran[FAN_B]) {
    size_t first = 0;
    size_t bad =
        fan_results_mismatches(run->results[FAN_A], run->results[FAN_B], opt->patches, &first);
    if (bad == 0)
      printf(
          "check (a) == (b): all %zu items equal bit for bit (rank, pivots, both cores, "
          "residual)\n",
          opt->patches);
    else
      printf("check (a) == (b): %zu of %zu items differ, the first is item %zu\n", bad,
             opt->patches, first);
    printf("fanout-check equal=%d items=%zu mismatches=%zu mode=bitwise dtype=%s\n", bad == 0,
           opt->patches, bad, fan_dtype_name(opt->dtype));
    if (bad) status = 4;
  }
  int ref = run->ran[FAN_E] ? FAN_E : (run->ran[FAN_D] ? FAN_D : (run->ran[FAN_C] ? FAN_C : -1));
  if (mine >= 0 && ref >= 0) {
    size_t first = 0, rank_off = 0;
    size_t bad = count_disagreements(run->results[mine], run->results[ref], opt->patches, opt->tol,
                                     &rank_off, &first);
    printf(
        "check (%s) against the reference (%s): %zu of %zu items outside the criteria, %zu "
        "ranks differ by one\n",
        configs[mine].key, configs[ref].key, bad, opt->patches, rank_off);
    printf("fanout-reference ok=%d items=%zu outside=%zu rank_off=%zu reference=%s\n", bad == 0,
           opt->patches, bad, rank_off, configs[ref].key);
    if (bad) {
      printf("  the first is item %zu: rank %d residual %.3g against rank %d residual %.3g\n",
             first, run->results[mine][first].rank, run->results[mine][first].residual,
             run->results[ref][first].rank, run->results[ref][first].residual);
      status = 4;
    }
  }
  for (int v = FAN_C; v <= FAN_E && mine >= 0; v++) {
    if (!run->ran[v]) continue;
    size_t first = 0, same_pivots = 0;
    size_t bad = fan_results_mismatches(run->results[mine], run->results[v], opt->patches, &first);
    for (size_t i = 0; i < opt->patches; i++)
      same_pivots += run->results[mine][i].pivots == run->results[v][i].pivots;
    printf(
        "compare (%s) with (%s): all bits equal in %zu of %zu items; rank and pivots equal in "
        "%zu\n",
        configs[v].key, configs[mine].key, opt->patches - bad, opt->patches, same_pivots);
  }
  return status;
}

static int write_csv(const fan_run *run, int cpu_count) {
  const fan_options *opt = run->opt;
  FILE *csv = fopen(opt->csv, "w");
  if (!csv) {
    fprintf(stderr, "tenlane-fanout: cannot write %s: %s\n", opt->csv, strerror(errno));
    return 3;
  }
  fprintf(csv,
          "variant,label,threads,lanes,cpus,patches,length,phys,bond,tol,seed,seconds,"
          "items_per_s,tl_allocs_per_item,mallocs_per_item,threads_seen,dtype,bond_lo,bond_hi,"
          "scaling\n");
  for (int k = 0; k < FAN_CONFIGS; k++) {
    if (!run->ran[k]) continue;
    const fan_totals *r = &run->runs[k];
    fprintf(csv, "%s,%s,%d,%d,%d,%zu,%d,%d,%d,%g,%" PRIu64 ",%.6f,%.3f,", configs[k].key,
            configs[k].label + (configs[k].one_thread && !configs[k].tenlane ? 4 : 0), opt->threads,
            r->lanes, cpu_count, opt->patches, opt->length, opt->phys, opt->bond_hi, opt->tol,
            opt->seed, r->seconds, rate_of(run, k));
    if (configs[k].tenlane)
      fprintf(csv, "%.6f,", (double)r->tl_allocs / (double)r->items);
    else
      fprintf(csv, ",");
    if (fan_malloc_counted())
      fprintf(csv, "%.6f,", (double)r->mallocs / (double)r->items);
    else
      fprintf(csv, ",");
    double scaling = configs[k].one_thread || opt->threads < 2 ? 0.0 : scaling_of(run, k);
    fprintf(csv, "%d,%s,%d,%d,", r->threads_seen, fan_dtype_name(opt->dtype), opt->bond_lo,
            opt->bond_hi);
    if (scaling > 0)
      fprintf(csv, "%.4f\n", scaling);
    else
      fprintf(csv, "\n");
  }
  return fclose(csv) == 0 ? 0 : 3;
}

static int make_problem(const fan_options *opt, fan_problem *pb) {
  memset(pb, 0, sizeof *pb);
  pb->dtype = opt->dtype;
  pb->length = opt->length;
  pb->phys = opt->phys;
  pb->bond_lo = opt->bond_lo;
  pb->bond_hi = opt->bond_hi;
  pb->bond_sorted = opt->bond_sorted;
  pb->patches = opt->patches;
  pb->tol = opt->tol;
  pb->seed = opt->seed;
  pb->fail_item = opt->fail_item;
  return fan_problem_make(pb);
}

static void print_header(const fan_options *opt, const int *cpus, int cpu_count) {
  char cpu_text[128], bond_text[64];
  format_cpus(cpus, cpu_count, cpu_text, sizeof cpu_text);
  if (opt->bond_lo == opt->bond_hi)
    snprintf(bond_text, sizeof bond_text, "chi=%d, grid %dx%d", opt->bond_hi,
             opt->bond_hi * opt->phys, opt->bond_hi * opt->phys);
  else
    snprintf(bond_text, sizeof bond_text, "chi %s from %d..%d per patch",
             opt->bond_sorted ? "in sorted order" : "drawn", opt->bond_lo, opt->bond_hi);
  printf("tenlane-fanout: %zu patches, %s, tensor train L=%d d=%d %s, tol %g, seed %" PRIu64 "\n",
         opt->patches, fan_dtype_name(opt->dtype), opt->length, opt->phys, bond_text, opt->tol,
         opt->seed);
  printf("threads: %d on CPUs %s (pinned%s); warm-up pass of %zu items per run, untimed\n",
         opt->threads, cpu_text, opt->threads > cpu_count ? ", oversubscribed" : "", opt->warmup);
  printf(
      "kernels: tenlane %s; (c)-(e) the same providers called directly (libxsmm, BLIS with "
      "tenlane's context, LAPACK)\n",
      fan_tenlane_kernels());
  fflush(stdout);
}

int main(int argc, char **argv) {
  int *cpus = NULL;
  int cpu_count = process_cpus(&cpus);
  if (cpu_count <= 0) {
    fprintf(stderr, "tenlane-fanout: cannot read the process's CPU set\n");
    return 3;
  }
  fan_options opt;
  memset(&opt, 0, sizeof opt);
  opt.patches = DEFAULT_PATCHES;
  opt.length = DEFAULT_LENGTH;
  opt.phys = DEFAULT_PHYS;
  opt.bond_lo = opt.bond_hi = DEFAULT_BOND;
  opt.dtype = FAN_F64;
  opt.tol = DEFAULT_TOL;
  opt.threads = cpu_count;
  opt.seed = DEFAULT_SEED;
  opt.fail_item = -1;
  opt.variants = "abcde";
  opt.rounds = DEFAULT_ROUNDS;
  opt.scaling = 1;
  int parsed = parse_options(argc, argv, &opt, cpu_count);
  if (parsed >= 0) {
    free(cpus);
    return parsed;
  }
  fan_problem pb;
  if (make_problem(&opt, &pb) != 0) {
    fprintf(stderr, "tenlane-fanout: out of memory for the tensor train\n");
    free(cpus);
    return 3;
  }
  fan_direct_init();
  fan_run run;
  memset(&run, 0, sizeof run);
  run.opt = &opt;
  run.env.opt = &opt;
  run.env.pb = &pb;
  run.env.cpus = cpus;
  run.env.cpu_count = cpu_count;
  print_header(&opt, cpus, cpu_count);

  int active = 0;
  int exit_status = open_all(&run, &active);
  fan_progress progress;
  fan_progress_begin(&progress, (size_t)active * opt.patches,
                     opt.quiet ? 0 : (isatty(STDERR_FILENO) ? 1 : 2));
  if (exit_status == 0) exit_status = run_rounds(&run, &progress);
  if (exit_status == 0) {
    fan_progress_label(&progress, "all variants, all rounds");
    fan_progress_end(&progress, 1);
  }
  for (int k = 0; k < FAN_CONFIGS; k++) {
    if (run.states[k]) runner_of(k)->close(run.states[k]);
    /* Publish: only a run in which every pass succeeded hands out its results. */
    if (exit_status == 0 && run.ran[k]) {
      run.results[k] = run.priv[k];
      run.priv[k] = NULL;
    }
    free(run.priv[k]);
  }
  if (exit_status == 0) {
    print_table(&run);
    print_speedups(&run);
    exit_status = print_checks(&run);
    if (opt.csv) {
      int csv_status = write_csv(&run, cpu_count);
      if (exit_status == 0) exit_status = csv_status;
    }
  }
  if (exit_status == 0 && opt.rows) print_rows(run.runs, run.ran, &opt);
  for (int k = 0; k < FAN_CONFIGS; k++) free(run.results[k]);
  fan_problem_free(&pb);
  free(cpus);
  return exit_status;
}
