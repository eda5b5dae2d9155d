/* examples/fanout/main.c: tenlane-fanout, the project's main job and its benchmark.
 *
 * Runs thousands of interpolation patches (patch.c) four ways in one process, threads
 * pinned: (a) tl_map over every lane of one held session, (b) the same on a budget-1
 * context, (c) an OpenMP loop with allocation per item, (d) an OpenMP loop with per-thread
 * workspaces. Prints progress, a table of items per second, the speedups, the heap
 * allocations per item and the thread count during (a), and checks that (a) and (b)
 * produced the same results bit for bit. The tenlane variants run first, before any
 * OpenMP region has started libgomp's threads, so the thread count seen during (a) is
 * tenlane's alone.
 *
 * Exit status: 0 success; 1 an item failed (which one and why is printed, after every
 * lane joined); 2 bad options; 3 a setup failure; 4 the (a)/(b) results differ. */
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

#define DEFAULT_PATCHES 6000
#define DEFAULT_LENGTH 24
#define DEFAULT_PHYS 2
#define DEFAULT_BOND 32
#define DEFAULT_TOL 1e-6
#define DEFAULT_SEED 1
#define DEFAULT_ROUNDS 3

static const char *const variant_labels[FAN_VARIANTS] = {
    "(a) tenlane tl_map on every lane", "(b) tenlane on one lane (budget 1)",
    "(c) OpenMP for with malloc per item", "(d) OpenMP for with per-thread workspaces"};
static const char *const variant_keys[FAN_VARIANTS] = {"a", "b", "c", "d"};
static const char *const variant_short[FAN_VARIANTS] = {
    "(a) tenlane, every lane", "(b) tenlane, one lane", "(c) OpenMP, malloc", "(d) OpenMP, kept"};
static const fan_runner *const runners[FAN_VARIANTS] = {&fan_tenlane_runner, &fan_tenlane_runner,
                                                        &fan_openmp_runner, &fan_openmp_runner};

#define MAX_ROUND_STATS 64

/* A variant's measured passes, summed. */
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
          "The same patches run four ways, in interleaved rounds, threads pinned:\n"
          "(a) tenlane tl_map on every lane, (b) tenlane on one lane, (c) an OpenMP loop with\n"
          "malloc per item, (d) an OpenMP loop with per-thread workspaces; then a table.\n"
          "\n"
          "options:\n"
          "  --patches N   patches (items) per variant                  (default %d)\n"
          "  --length L    sites of the tensor train, >= 4              (default %d)\n"
          "  --phys D      physical dimension of each site, >= 2        (default %d)\n"
          "  --bond X      bond dimension of the tensor train, >= 1     (default %d)\n"
          "  --tol T       relative truncation tolerance, 0 < T < 1     (default %g)\n"
          "  --threads N   lanes of (a) and OpenMP threads of (c), (d)  (default %d: the CPUs\n"
          "                this process may use; more than that oversubscribes them)\n"
          "  --seed S      seed of the tensor train and of every patch  (default %d)\n"
          "  --csv FILE    write one CSV row per variant to FILE (header included)\n"
          "  --quiet       no progress output (the table is still printed)\n"
          "  --help        this text\n"
          "\n"
          "exit status: 0 ok, 1 an item failed, 2 bad options, 3 setup failure,\n"
          "4 results of (a) and (b) differ. See docs/fanout.md for how to read the table.\n",
          DEFAULT_PATCHES, DEFAULT_LENGTH, DEFAULT_PHYS, DEFAULT_BOND, DEFAULT_TOL, cpus,
          DEFAULT_SEED);
}

static int bad_option(const char *what, const char *value, int cpus) {
  fprintf(stderr, "tenlane-fanout: %s: '%s'\n\n", what, value ? value : "");
  usage(stderr, cpus);
  return 2;
}

static int parse_ll(const char *text, long long lo, long long hi, long long *out) {
  if (!text || !*text) return -1;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || *end != '\0' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
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
  OPT_PATCHES = 256,
  OPT_LENGTH,
  OPT_PHYS,
  OPT_BOND,
  OPT_TOL,
  OPT_THREADS,
  OPT_SEED,
  OPT_CSV,
  OPT_QUIET,
  OPT_HELP,
  OPT_FAIL_ITEM,
  OPT_VARIANTS,
  OPT_WARMUP,
  OPT_ROUNDS,
  OPT_ROWS,
  OPT_QUICK
};

/* Returns -1 to go on, else the exit status. */
static int parse_options(int argc, char **argv, fan_options *opt, int cpus) {
  static const struct option long_options[] = {
      {"patches", required_argument, NULL, OPT_PATCHES},
      {"length", required_argument, NULL, OPT_LENGTH},
      {"phys", required_argument, NULL, OPT_PHYS},
      {"bond", required_argument, NULL, OPT_BOND},
      {"tol", required_argument, NULL, OPT_TOL},
      {"threads", required_argument, NULL, OPT_THREADS},
      {"seed", required_argument, NULL, OPT_SEED},
      {"csv", required_argument, NULL, OPT_CSV},
      {"quiet", no_argument, NULL, OPT_QUIET},
      {"help", no_argument, NULL, OPT_HELP},
      /* Test hooks, not in --help: make one item fail, run a subset of the variants,
       * size the untimed warm-up pass, set the number of interleaved rounds. */
      {"fail-item", required_argument, NULL, OPT_FAIL_ITEM},
      {"variants", required_argument, NULL, OPT_VARIANTS},
      {"warmup", required_argument, NULL, OPT_WARMUP},
      {"rounds", required_argument, NULL, OPT_ROUNDS},
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
    long long v = 0;
    switch (c) {
      case OPT_PATCHES:
        if (parse_ll(optarg, 1, 100000000, &v))
          return bad_option("--patches needs 1..1e8", optarg, cpus);
        opt->patches = (size_t)v;
        break;
      case OPT_LENGTH:
        if (parse_ll(optarg, 4, 4096, &v))
          return bad_option("--length needs 4..4096", optarg, cpus);
        opt->length = (int)v;
        break;
      case OPT_PHYS:
        if (parse_ll(optarg, 2, 64, &v)) return bad_option("--phys needs 2..64", optarg, cpus);
        opt->phys = (int)v;
        break;
      case OPT_BOND:
        if (parse_ll(optarg, 1, 1024, &v)) return bad_option("--bond needs 1..1024", optarg, cpus);
        opt->bond = (int)v;
        break;
      case OPT_TOL: {
        char *end = NULL;
        errno = 0;
        double t = strtod(optarg, &end);
        if (errno || *end != '\0' || !(t > 0.0 && t < 1.0))
          return bad_option("--tol needs a number in (0, 1)", optarg, cpus);
        opt->tol = t;
        break;
      }
      case OPT_THREADS:
        if (parse_ll(optarg, 1, 256, &v)) return bad_option("--threads needs 1..256", optarg, cpus);
        opt->threads = (int)v;
        break;
      case OPT_SEED:
        if (parse_u64(optarg, &opt->seed))
          return bad_option("--seed needs an unsigned integer", optarg, cpus);
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
        if (parse_ll(optarg, 0, 100000000, &v))
          return bad_option("--fail-item needs an item index", optarg, cpus);
        opt->fail_item = v;
        break;
      case OPT_VARIANTS:
        if (!*optarg || strspn(optarg, "abcd") != strlen(optarg))
          return bad_option("--variants needs letters from 'abcd'", optarg, cpus);
        opt->variants = optarg;
        break;
      case OPT_WARMUP:
        if (parse_ll(optarg, 0, 100000000, &v))
          return bad_option("--warmup needs a count", optarg, cpus);
        opt->warmup = (size_t)v;
        warmup_set = 1;
        break;
      case OPT_ROUNDS:
        if (parse_ll(optarg, 1, 1000, &v))
          return bad_option("--rounds needs 1..1000", optarg, cpus);
        opt->rounds = (int)v;
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
  if ((long long)opt->bond * opt->phys > 4096)
    return bad_option("--bond times --phys must stay <= 4096", "", cpus);
  if (!warmup_set) {
    size_t w = opt->patches / 20;
    opt->warmup = w < 64 ? 64 : w;
  }
  if (opt->warmup > opt->patches) opt->warmup = opt->patches;
  return -1;
}

static int wants(const fan_options *opt, int variant) {
  return strchr(opt->variants, variant_keys[variant][0]) != NULL;
}

static void rank_stats(const fan_result *r, size_t n, int *lo, int *hi, double *mean,
                       double *res_max) {
  *lo = 1 << 30;
  *hi = 0;
  *mean = 0.0;
  *res_max = 0.0;
  for (size_t i = 0; i < n; i++) {
    if (r[i].rank < *lo) *lo = r[i].rank;
    if (r[i].rank > *hi) *hi = r[i].rank;
    *mean += r[i].rank;
    if (r[i].residual > *res_max) *res_max = r[i].residual;
  }
  if (n) *mean /= (double)n;
}

/* Items whose results differ in any bit; *first gets the lowest such item. */
static size_t count_mismatches(const fan_result *x, const fan_result *y, size_t n, size_t *first) {
  size_t count = 0;
  for (size_t i = 0; i < n; i++) {
    int same = x[i].rank == y[i].rank && x[i].site == y[i].site && x[i].digest == y[i].digest &&
               memcmp(&x[i].residual, &y[i].residual, sizeof(double)) == 0 && x[i].computed &&
               y[i].computed;
    if (!same && count++ == 0) *first = i;
  }
  return count;
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
  double median[FAN_VARIANTS], worst[FAN_VARIANTS];
  for (int v = 0; v < FAN_VARIANTS; v++)
    if (ran[v]) round_stats(&runs[v], &median[v], &worst[v]);
  for (int v = 0; v < FAN_VARIANTS; v++) {
    if (!ran[v]) continue;
    if (v == FAN_A) {
      for (int anchor = FAN_B; anchor <= FAN_D; anchor++)
        if (ran[anchor])
          printf("row\tfanout\t%s, %d lanes: time per patch\t%.1f\t%.1f\t%s\t%.1f\tnan\n",
                 variant_short[v], opt->threads, median[v], worst[v], variant_short[anchor],
                 median[anchor]);
    } else {
      printf("row\tfanout\t%s: time per patch\t%.1f\t%.1f\t-\tnan\tnan\n", variant_short[v],
             median[v], worst[v]);
    }
  }
}

int main(int argc, char **argv) {
  int *cpus = NULL;
  int cpu_count = process_cpus(&cpus);
  if (cpu_count <= 0) {
    fprintf(stderr, "tenlane-fanout: cannot read the process's CPU set\n");
    return 3;
  }
  fan_options opt = {DEFAULT_PATCHES,
                     DEFAULT_LENGTH,
                     DEFAULT_PHYS,
                     DEFAULT_BOND,
                     DEFAULT_TOL,
                     cpu_count,
                     DEFAULT_SEED,
                     NULL,
                     0,
                     -1,
                     "abcd",
                     0,
                     DEFAULT_ROUNDS,
                     0};
  int parsed = parse_options(argc, argv, &opt, cpu_count);
  if (parsed >= 0) {
    free(cpus);
    return parsed;
  }

  fan_problem pb;
  memset(&pb, 0, sizeof pb);
  pb.length = opt.length;
  pb.phys = opt.phys;
  pb.bond = opt.bond;
  pb.tol = opt.tol;
  pb.seed = opt.seed;
  pb.patches = opt.patches;
  pb.fail_item = opt.fail_item;
  if (fan_problem_make(&pb) != 0) {
    fprintf(stderr, "tenlane-fanout: out of memory for the tensor train\n");
    free(cpus);
    return 3;
  }
  fan_direct_init();

  fan_env env;
  env.opt = &opt;
  env.pb = &pb;
  env.cpus = cpus;
  env.cpu_count = cpu_count;
  int progress_mode = opt.quiet ? 0 : (isatty(STDERR_FILENO) ? 1 : 2);

  char cpu_text[128];
  format_cpus(cpus, cpu_count, cpu_text, sizeof cpu_text);
  int side = fan_grid_side(&pb);
  printf(
      "tenlane-fanout: %zu patches, tensor train L=%d d=%d chi=%d, grid %dx%d, tol %g, "
      "seed %" PRIu64 "\n",
      opt.patches, opt.length, opt.phys, opt.bond, side, side, opt.tol, opt.seed);
  printf("threads: %d on CPUs %s (pinned%s); warm-up pass of %zu items per variant, untimed\n",
         opt.threads, cpu_text, opt.threads > cpu_count ? ", oversubscribed" : "", opt.warmup);
  printf(
      "kernels: tenlane %s; (c)/(d) libxsmm + BLIS serial (cblas) + LAPACKE (dgeqp3, dorgqr, "
      "dgetrf)\n",
      fan_tenlane_kernels());
  fflush(stdout);

  fan_result *results[FAN_VARIANTS] = {NULL, NULL, NULL, NULL}; /* published */
  fan_result *priv[FAN_VARIANTS] = {NULL, NULL, NULL, NULL};    /* being computed */
  fan_totals runs[FAN_VARIANTS];
  void *states[FAN_VARIANTS] = {NULL, NULL, NULL, NULL};
  int ran[FAN_VARIANTS] = {0, 0, 0, 0};
  memset(runs, 0, sizeof runs);
  int exit_status = 0;
  int active = 0;
  for (int v = 0; v < FAN_VARIANTS && exit_status == 0; v++) {
    if (!wants(&opt, v)) continue;
    if ((v == FAN_C || v == FAN_D) && !fan_openmp_available()) {
      printf("%s: skipped (built without OpenMP)\n", variant_labels[v]);
      continue;
    }
    char why[400];
    priv[v] = calloc(opt.patches, sizeof(fan_result));
    if (!priv[v]) {
      fprintf(stderr, "tenlane-fanout: out of memory for results\n");
      exit_status = 3;
    } else if (runners[v]->open(&env, v, &states[v], why, sizeof why) != 0) {
      fprintf(stderr, "tenlane-fanout: %s could not start: %s\n", variant_labels[v], why);
      states[v] = NULL;
      exit_status = 3;
    } else {
      ran[v] = 1;
      runs[v].lanes = runners[v]->lanes(states[v]);
      runs[v].rate_min = 1e300;
      active++;
    }
  }

  /* The measured items run in rounds; in each round every variant runs its slice of the
   * items in turn, so a change in the machine's load hits every variant alike. A
   * variant's warm-up pass (untimed) runs right before its first slice. Threads are
   * counted only until the first OpenMP region, whose threads outlive it. */
  fan_progress progress;
  fan_progress_begin(&progress, (size_t)active * opt.patches, progress_mode);
  int omp_started = 0, warmed[FAN_VARIANTS] = {0, 0, 0, 0};
  static char labels[2][FAN_VARIANTS][80];
  for (int round = 0; round < opt.rounds && exit_status == 0; round++) {
    size_t first = opt.patches * (size_t)round / (size_t)opt.rounds;
    size_t end = opt.patches * (size_t)(round + 1) / (size_t)opt.rounds;
    for (int v = 0; v < FAN_VARIANTS && exit_status == 0; v++) {
      if (!ran[v] || end == first) continue;
      for (int warm = warmed[v] ? 1 : 0; warm < 2 && exit_status == 0; warm++) {
        fan_progress quiet;
        fan_progress_begin(&quiet, opt.warmup, 0);
        fan_pass pass;
        memset(&pass, 0, sizeof pass);
        pass.first = warm ? first : 0;
        pass.count = warm ? end - first : opt.warmup;
        pass.priv = priv[v];
        pass.progress = warm ? &progress : &quiet;
        pass.sample_threads = v == FAN_A && !omp_started;
        if (warm) {
          char *label = labels[round % 2][v];
          snprintf(label, sizeof labels[0][0], "round %d/%d %s", round + 1, opt.rounds,
                   variant_short[v]);
          fan_progress_label(&progress, label);
        }
        int rc = pass.count ? runners[v]->pass(states[v], &pass) : 0;
        if (v >= FAN_C) omp_started = 1;
        if (rc != 0) {
          fan_progress_end(&progress, 0);
          fflush(stdout);
          if (rc == 1) {
            fprintf(stderr, "tenlane-fanout: item %zu failed in %s: %s\n", pass.failed_item,
                    variant_labels[v], pass.why);
            fprintf(stderr,
                    "tenlane-fanout: every %s joined before this report; no result of this run "
                    "was published\n",
                    v <= FAN_B ? "lane" : "OpenMP thread");
          } else {
            fprintf(stderr, "tenlane-fanout: %s failed: %s\n", variant_labels[v], pass.why);
          }
          exit_status = rc == 1 ? 1 : 3;
          break;
        }
        if (pass.threads_seen > runs[v].threads_seen) runs[v].threads_seen = pass.threads_seen;
        if (!warm) {
          warmed[v] = 1;
          continue;
        }
        runs[v].seconds += pass.seconds;
        runs[v].items += pass.count;
        runs[v].tl_allocs += pass.tl_allocs;
        runs[v].mallocs += pass.mallocs;
        double rate = pass.seconds > 0 ? (double)pass.count / pass.seconds : 0.0;
        if (rate < runs[v].rate_min) runs[v].rate_min = rate;
        if (rate > runs[v].rate_max) runs[v].rate_max = rate;
        if (runs[v].round_count < MAX_ROUND_STATS && pass.count > 0)
          runs[v].round_ns[runs[v].round_count++] = 1e9 * pass.seconds / (double)pass.count;
      }
    }
  }
  if (exit_status == 0) {
    fan_progress_label(&progress, "all variants, all rounds");
    fan_progress_end(&progress, 1);
  }
  for (int v = 0; v < FAN_VARIANTS; v++) {
    if (states[v]) runners[v]->close(states[v]);
    /* Publish: only a run in which every pass succeeded hands out its results. */
    if (exit_status == 0 && ran[v]) {
      results[v] = priv[v];
      priv[v] = NULL;
    }
    free(priv[v]);
  }

  if (exit_status == 0) {
    printf("\n%-42s %5s %8s %9s %7s %10s %9s\n", "variant", "lanes", "seconds", "items/s", "spread",
           "tl allocs", "mallocs");
    printf("%-42s %5s %8s %9s %7s %10s %9s\n", "", "", "", "", "", "per item", "per item");
    for (int v = 0; v < FAN_VARIANTS; v++) {
      if (!ran[v]) continue;
      const fan_totals *r = &runs[v];
      double rate = r->seconds > 0 ? (double)r->items / r->seconds : 0.0;
      char tl_allocs[32] = "-", mallocs[32] = "n/a", spread[32] = "-";
      if (v <= FAN_B)
        snprintf(tl_allocs, sizeof tl_allocs, "%.4f", (double)r->tl_allocs / (double)r->items);
      if (fan_malloc_counted())
        snprintf(mallocs, sizeof mallocs, "%.4f", (double)r->mallocs / (double)r->items);
      if (opt.rounds > 1 && rate > 0)
        snprintf(spread, sizeof spread, "%.0f%%", 100.0 * (r->rate_max - r->rate_min) / rate);
      printf("%-42s %5d %8.3f %9.1f %7s %10s %9s\n", variant_labels[v], r->lanes, r->seconds, rate,
             spread, tl_allocs, mallocs);
    }
    double rate[FAN_VARIANTS];
    for (int v = 0; v < FAN_VARIANTS; v++)
      rate[v] = ran[v] && runs[v].seconds > 0 ? (double)runs[v].items / runs[v].seconds : 0.0;
    if (ran[FAN_A]) {
      printf("\nspeedups of (a):");
      static const char *const aims[FAN_VARIANTS] = {"", ">= 1.9 on 2 cores", ">= 1.2", ">= 1.0"};
      for (int v = FAN_B; v <= FAN_D; v++)
        if (ran[v] && rate[v] > 0)
          printf("  (a)/(%s) %.2fx (aim %s)", variant_keys[v], rate[FAN_A] / rate[v], aims[v]);
      printf("\n");
      printf(
          "threads during (a): %d seen in /proc/self/task from inside items "
          "(budget %d + the calling thread = %d)\n",
          runs[FAN_A].threads_seen, opt.threads, opt.threads + 1);
      printf("heap allocations per item in (a), steady state: %.4f through tenlane's hooks",
             (double)runs[FAN_A].tl_allocs / (double)runs[FAN_A].items);
      if (fan_malloc_counted())
        printf(", %.4f malloc-family calls in the whole process\n",
               (double)runs[FAN_A].mallocs / (double)runs[FAN_A].items);
      else
        printf("; malloc-family calls not counted (sanitizer build)\n");
    }
    for (int v = 0; v < FAN_VARIANTS; v++) {
      if (!ran[v]) continue;
      int lo, hi;
      double mean, res_max;
      rank_stats(results[v], opt.patches, &lo, &hi, &mean, &res_max);
      printf("results %s: rank min %d mean %.2f max %d of %d; largest residual %.3g\n",
             variant_keys[v], lo, mean, hi, side, res_max);
      break; /* the same for every variant that agrees; printed once */
    }
    if (ran[FAN_A] && ran[FAN_B]) {
      size_t first = 0;
      size_t bad = count_mismatches(results[FAN_A], results[FAN_B], opt.patches, &first);
      if (bad == 0)
        printf(
            "check (a) == (b): all %zu items equal bit for bit (rank, pivots, both cores, "
            "residual)\n",
            opt.patches);
      else
        printf("check (a) == (b): %zu of %zu items differ, the first is item %zu\n", bad,
               opt.patches, first);
      printf("fanout-check equal=%d items=%zu mismatches=%zu mode=bitwise\n", bad == 0, opt.patches,
             bad);
      if (bad) exit_status = 4;
    }
    for (int v = FAN_C; v <= FAN_D; v++) {
      int ref = ran[FAN_A] ? FAN_A : (ran[FAN_B] ? FAN_B : -1);
      if (!ran[v] || ref < 0) continue;
      size_t first = 0;
      size_t bad = count_mismatches(results[ref], results[v], opt.patches, &first);
      printf("compare (%s) with (%s): %zu of %zu items differ in some bit%s\n", variant_keys[v],
             variant_keys[ref], bad, opt.patches,
             bad ? " (other GEMM/QR code paths round differently; ranks and residuals are "
                   "checked, not compared)"
                 : "");
    }
    if (opt.csv) {
      FILE *csv = fopen(opt.csv, "w");
      if (!csv) {
        fprintf(stderr, "tenlane-fanout: cannot write %s: %s\n", opt.csv, strerror(errno));
        if (exit_status == 0) exit_status = 3;
      } else {
        fprintf(csv,
                "variant,label,threads,lanes,cpus,patches,length,phys,bond,tol,seed,seconds,"
                "items_per_s,tl_allocs_per_item,mallocs_per_item,threads_seen\n");
        for (int v = 0; v < FAN_VARIANTS; v++) {
          if (!ran[v]) continue;
          const fan_totals *r = &runs[v];
          fprintf(csv, "%s,%s,%d,%d,%d,%zu,%d,%d,%d,%g,%" PRIu64 ",%.6f,%.3f,", variant_keys[v],
                  variant_labels[v], opt.threads, r->lanes, cpu_count, opt.patches, opt.length,
                  opt.phys, opt.bond, opt.tol, opt.seed, r->seconds, rate[v]);
          if (v <= FAN_B)
            fprintf(csv, "%.6f,", (double)r->tl_allocs / (double)r->items);
          else
            fprintf(csv, ",");
          if (fan_malloc_counted())
            fprintf(csv, "%.6f,", (double)r->mallocs / (double)r->items);
          else
            fprintf(csv, ",");
          fprintf(csv, "%d\n", r->threads_seen);
        }
        if (fclose(csv) != 0 && exit_status == 0) exit_status = 3;
      }
    }
  }

  if (exit_status == 0 && opt.rows) print_rows(runs, ran, &opt);
  for (int v = 0; v < FAN_VARIANTS; v++) free(results[v]);
  fan_problem_free(&pb);
  free(cpus);
  return exit_status;
}
