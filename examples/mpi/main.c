/* examples/mpi/main.c: tenlane-fanout-mpi, the fan-out's patches over MPI ranks.
 *
 * Every rank: initialise MPI (FUNNELED: this thread is the only one that calls MPI), agree
 * on the options with every other rank, make its engine (rank.c) sized to the CPUs
 * sched_getaffinity gives it, run an untimed warm-up phase, then take part in the timed
 * run (dispatch.c). The root then checks every result bit for bit against a one-rank,
 * one-lane run of the same items and prints what each rank measured.
 *
 * Every decision that ends the program is agreed over all ranks first (an allreduce or a
 * broadcast), so all ranks leave with the same exit status and none is left waiting:
 * 0 ok, 1 an item failed, 2 bad options on some rank, 3 setup or MPI failure, 4 results
 * differ from the one-rank run. */
#define _GNU_SOURCE
#include <mpi.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenlane/ops.h"

#include "mpi_fanout.h"

typedef struct world_info {
  int rank, size;             /* in MPI_COMM_WORLD */
  int local_rank, local_size; /* among the ranks on this node */
  int cpus[CPU_SETSIZE];      /* what sched_getaffinity gives this rank */
  int cpu_count;
  int node_layout; /* how the node's ranks' CPU sets relate: NODE_SHARED, _DISJOINT, _MIXED */
} world_info;

enum { NODE_SHARED, NODE_DISJOINT, NODE_MIXED };

/* The same verdict on every rank: the largest status any rank has (-1 < 0 < 1 < ...). */
static int agree_max(int status) {
  int all = status;
  MPI_Allreduce(&status, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return all;
}

static int lowest_rank_with(int condition, const world_info *w) {
  int mine = condition ? w->rank : w->size, lowest = mine;
  MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return lowest;
}

/* Parse on every rank; a bad option anywhere ends all ranks with 2 (the lowest rank that
 * has one says why), --help anywhere with 0. Returns -1 to go on. */
static int agree_options(int argc, char **argv, mpi_options *opt, const world_info *w) {
  int parsed = mpi_parse_options(argc, argv, opt, 0);
  int verdict = agree_max(parsed == 2 ? 2 : parsed == 0 ? 1 : 0);
  if (verdict > 0) {
    int want = verdict == 2 ? 2 : 0;
    if (lowest_rank_with(parsed == want, w) == w->rank)
      mpi_parse_options(argc, argv, opt, 1); /* again, aloud */
    return want;
  }
  uint64_t digest = mpi_options_digest(opt), lo = digest, hi = digest;
  MPI_Allreduce(&digest, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&digest, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  if (lo != hi) {
    if (w->rank == 0)
      fprintf(stderr,
              "tenlane-fanout-mpi: the ranks were given different options (sizes, seed, "
              "batch or test hooks); give every rank the same\n");
    return 2;
  }
  return -1;
}

/* The rank's CPU set, its place on its node, and how the node's ranks' sets relate:
 * all the same (mpirun --bind-to none), pairwise disjoint (--bind-to core and friends:
 * each rank already has CPUs of its own), or anything else. */
static void learn_world(world_info *w) {
  MPI_Comm_rank(MPI_COMM_WORLD, &w->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w->size);
  cpu_set_t set;
  CPU_ZERO(&set);
  w->cpu_count = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &set)) w->cpus[w->cpu_count++] = c;
  if (w->cpu_count == 0) {
    CPU_SET(0, &set);
    w->cpus[w->cpu_count++] = 0;
  }
  enum { WORDS = sizeof(cpu_set_t) / sizeof(unsigned long) };
  unsigned long mine[WORDS], any[WORDS], every[WORDS];
  memcpy(mine, &set, sizeof mine);
  int count = w->cpu_count, total = 0;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &w->local_rank);
  MPI_Comm_size(node, &w->local_size);
  MPI_Allreduce(mine, any, WORDS, MPI_UNSIGNED_LONG, MPI_BOR, node);
  MPI_Allreduce(mine, every, WORDS, MPI_UNSIGNED_LONG, MPI_BAND, node);
  MPI_Allreduce(&count, &total, 1, MPI_INT, MPI_SUM, node);
  MPI_Comm_free(&node);
  cpu_set_t union_set;
  memcpy(&union_set, any, sizeof union_set);
  if (memcmp(any, every, sizeof any) == 0)
    w->node_layout = NODE_SHARED;
  else if (CPU_COUNT(&union_set) == total)
    w->node_layout = NODE_DISJOINT;
  else
    w->node_layout = NODE_MIXED;
}

/* Which CPUs the rank's lanes are pinned to, or NULL for none. Ranks that share one CPU set
 * each take a slice of it by node-local rank, when all fit side by side; ranks with sets of
 * their own use theirs, when the lanes fit; otherwise nothing is pinned and the kernel
 * shares the CPUs (oversubscribed, or sets that overlap in part). */
static const int *rank_cpus(const world_info *w, int lanes) {
  if (w->node_layout == NODE_SHARED && (long long)lanes * w->local_size <= w->cpu_count)
    return w->cpus + (size_t)lanes * (size_t)w->local_rank;
  if (w->node_layout == NODE_DISJOINT && lanes <= w->cpu_count) return w->cpus;
  return NULL;
}

/* FNV-1a over every item's result, in item order: equal runs print equal digests. */
static uint64_t results_digest(const fan_result *r, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++) {
    uint64_t words[5] = {(uint64_t)(uint32_t)r[i].rank, (uint64_t)(uint32_t)r[i].site,
                         (uint64_t)(uint32_t)r[i].bond, 0, r[i].digest};
    memcpy(&words[3], &r[i].residual, sizeof(double));
    const unsigned char *p = (const unsigned char *)words;
    for (size_t b = 0; b < sizeof words; b++) h = (h ^ p[b]) * 0x100000001b3ULL;
  }
  return h;
}

/* The one-rank, one-lane run on the root: a budget-1 context, one phase over every item.
 * Returns 0 with ref filled and *rate its items/s, or 3. */
static int reference_run(const fan_problem *pb, const mpi_options *opt, fan_result *ref,
                         double *rate) {
  mpi_rank one;
  char why[300] = "";
  size_t failed_item = 0;
  int rc = mpi_rank_open(&one, pb, opt, 1, NULL, 0, why, sizeof why);
  if (rc == 0) rc = mpi_rank_batch(&one, 0, opt->warmup, ref, 0, &failed_item, why, sizeof why);
  if (rc == 0) rc = mpi_rank_batch(&one, 0, opt->patches, ref, 1, &failed_item, why, sizeof why);
  *rate = one.busy_s > 0 ? (double)one.items / one.busy_s : 0.0;
  mpi_rank_close(&one);
  if (rc) fprintf(stderr, "tenlane-fanout-mpi: the one-rank reference run failed: %s\n", why);
  return rc ? 3 : 0;
}

static void print_ranks(const mpi_rank_stats *all, int world, int quiet) {
  if (quiet) return;
  printf("\n%4s %5s %6s %8s %7s %8s %9s %7s %11s %11s\n", "rank", "lanes", "cpu", "batches",
         "items", "busy s", "disp. ms", "idle", "mallocs", "tl allocs");
  printf("%4s %5s %6s %8s %7s %8s %9s %7s %11s %11s\n", "", "", "", "", "", "", "", "", "per item",
         "per item");
  for (int r = 0; r < world; r++) {
    const mpi_rank_stats *s = &all[r];
    char cpu[16] = "none";
    if (s->first_cpu >= 0) snprintf(cpu, sizeof cpu, "%d+", (int)s->first_cpu);
    double idle = s->wall_s > 0 ? 1.0 - (s->busy_s + s->dispatch_s) / s->wall_s : 0.0;
    double items = s->items > 0 ? s->items : 1.0;
    printf("%4d %5.0f %6s %8.0f %7.0f %8.3f %9.3f %6.1f%% %11.4f %11.4f\n", r, s->lanes, cpu,
           s->batches, s->items, s->busy_s, 1e3 * s->dispatch_s, 100.0 * idle, s->mallocs / items,
           s->tl_allocs / items);
  }
}

/* The root's summary of a successful run: rates, overheads, allocations, the check. */
static int report(const mpi_options *opt, const mpi_rank_stats *all, int world,
                  const fan_result *results, const fan_result *ref, double ref_rate,
                  double one_way_us) {
  const mpi_rank_stats *root = &all[0];
  double items = 0, mallocs = 0, tl_allocs = 0, worker_batches = 0, busy_lane_s = 0, idle_max = 0;
  double batches = 0, cost_sum = 0, cost_sq = 0;
  for (int r = 0; r < world; r++) {
    batches += all[r].batches;
    cost_sum += all[r].batch_cost_sum;
    cost_sq += all[r].batch_cost_sq;
    items += all[r].items;
    mallocs += all[r].mallocs;
    tl_allocs += all[r].tl_allocs;
    busy_lane_s += all[r].busy_s * all[r].lanes;
    if (r > 0) worker_batches += all[r].batches;
    double idle =
        all[r].wall_s > 0 ? 1.0 - (all[r].busy_s + all[r].dispatch_s) / all[r].wall_s : 0.0;
    if (idle > idle_max) idle_max = idle;
  }
  double rate = root->wall_s > 0 ? (double)opt->patches / root->wall_s : 0.0;
  double cost_mean = batches > 0 ? cost_sum / batches : 0.0;
  double cost_var = batches > 0 ? cost_sq / batches - cost_mean * cost_mean : 0.0;
  double cost_cv = cost_mean > 0 && cost_var > 0 ? sqrt(cost_var) / cost_mean : 0.0;
  double per_batch_us = worker_batches > 0 ? 1e6 * root->dispatch_s / worker_batches : 0.0;
  print_ranks(all, world, opt->quiet);
  printf(
      "\nrun: %zu items in %.3f s on %d rank%s: %.1f items/s (one rank, one lane, same "
      "process: %.1f items/s)\n",
      opt->patches, root->wall_s, world, world > 1 ? "s" : "", rate, ref_rate);
  printf(
      "root dispatch overhead: %.3f ms in all, %.1f us per batch handed out (%.0f batches "
      "of %zu, root chunk %.0f), %.2f%% of the run\n",
      1e3 * root->dispatch_s, per_batch_us, worker_batches, opt->batch, root->root_chunk,
      root->wall_s > 0 ? 100.0 * root->dispatch_s / root->wall_s : 0.0);
  printf(
      "heap allocations per item inside the ranks' phases: %.4f malloc-family calls, %.4f "
      "through tenlane's hooks\n",
      fan_malloc_counted() ? mallocs / items : -1.0, tl_allocs / items);
  size_t first = 0, bad = fan_results_mismatches(results, ref, opt->patches, &first);
  uint64_t digest = results_digest(results, opt->patches);
  if (bad == 0)
    printf(
        "check: all %zu items equal bit for bit to the one-rank, one-lane run (rank, pivots, "
        "both cores, residual)\n",
        opt->patches);
  else
    printf(
        "check: %zu of %zu items differ from the one-rank, one-lane run, the first is item "
        "%zu\n",
        bad, opt->patches, first);
  printf(
      "mpi-check equal=%d items=%zu mismatches=%zu ranks=%d lanes=%.0f dtype=%s "
      "digest=%016" PRIx64 "\n",
      bad == 0, opt->patches, bad, world, root->lanes, fan_dtype_name(opt->dtype), digest);
  printf(
      "mpi-figures ranks=%d lanes=%.0f batch=%zu items_per_s=%.1f item_lane_us=%.2f "
      "batch_cost_cv=%.4f dispatch_us_per_batch=%.2f one_way_us=%.2f idle_max=%.4f "
      "reference_items_per_s=%.1f\n",
      world, root->lanes, opt->batch, rate, items > 0 ? 1e6 * busy_lane_s / items : 0.0, cost_cv,
      per_batch_us, one_way_us, idle_max, ref_rate);
  return bad ? 4 : 0;
}

/* Everything after the options: engine, warm-up, timed run, check. Returns the exit
 * status, the same on every rank. */
static int run(const mpi_options *opt, const world_info *w, int provided) {
  fan_problem pb;
  memset(&pb, 0, sizeof pb);
  pb.length = opt->length;
  pb.phys = opt->phys;
  pb.dtype = opt->dtype;
  pb.bond_lo = opt->bond_lo;
  pb.bond_hi = opt->bond_hi;
  pb.tol = opt->tol;
  pb.seed = opt->seed;
  pb.fail_item = -1; /* failures come from --fail-item, checked in item.c */
  int lanes = opt->lanes > 0 ? opt->lanes : w->cpu_count;
  const int *cpus = rank_cpus(w, lanes);
  mpi_rank engine;
  memset(&engine, 0, sizeof engine);
  char why[300] = "";
  int setup = fan_problem_make(&pb) == 0 ? 0 : 3;
  if (setup) snprintf(why, sizeof why, "out of memory for the tensor train");
  if (!setup && mpi_rank_open(&engine, &pb, opt, lanes, cpus, lanes, why, sizeof why)) setup = 3;
  fan_result *scratch = setup ? NULL : calloc(opt->warmup + 1, sizeof *scratch);
  if (!setup && !scratch) setup = 3;
  if (!setup && mpi_rank_warm_up(&engine, scratch, why, sizeof why)) setup = 3;
  if (setup) fprintf(stderr, "tenlane-fanout-mpi: rank %d: setup failed: %s\n", w->rank, why);
  if (agree_max(setup) != 0) {
    free(scratch);
    mpi_rank_close(&engine);
    fan_problem_free(&pb);
    return 3;
  }
  if (w->rank == 0 && !opt->quiet) {
    char bond[48];
    if (opt->bond_lo == opt->bond_hi)
      snprintf(bond, sizeof bond, "chi=%d", opt->bond_hi);
    else
      snprintf(bond, sizeof bond, "chi from %d..%d", opt->bond_lo, opt->bond_hi);
    printf(
        "tenlane-fanout-mpi: %d rank%s x %d lane%s (%s), %zu patches (%s L=%d d=%d %s "
        "tol=%g seed=%" PRIu64 "), batch %zu, MPI thread level %s, kernels %s\n",
        w->size, w->size > 1 ? "s" : "", engine.lanes, engine.lanes > 1 ? "s" : "",
        cpus ? "pinned, each rank on CPUs of its own" : "not pinned: the ranks share the CPUs",
        opt->patches, fan_dtype_name(opt->dtype), opt->length, opt->phys, bond, opt->tol, opt->seed,
        opt->batch, provided == MPI_THREAD_FUNNELED ? "FUNNELED" : "above FUNNELED (FUNNELED used)",
        tl_kernels_provider());
  }

  double one_way_us = mpi_one_way_us();
  mpi_rank_stats stats;
  memset(&stats, 0, sizeof stats);
  mpi_failure failure;
  memset(&failure, 0, sizeof failure);
  fan_result *results = w->rank == 0 ? calloc(opt->patches, sizeof *results) : NULL;
  int rc = 0;
  if (w->rank == 0 && !results) {
    fprintf(stderr, "tenlane-fanout-mpi: out of memory for %zu results\n", opt->patches);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  if (w->rank == 0)
    rc = mpi_dispatch_root(&engine, w->size, results, &stats, &failure, why, sizeof why);
  else
    rc = mpi_dispatch_worker(&engine, &stats, why, sizeof why);
  if (rc) fprintf(stderr, "tenlane-fanout-mpi: rank %d: %s\n", w->rank, why);
  stats.lanes = engine.lanes;
  stats.busy_s = engine.busy_s;
  stats.items = (double)engine.items;
  stats.batches = (double)engine.batches;
  stats.mallocs = (double)engine.mallocs;
  stats.tl_allocs = (double)engine.tl_allocs;
  stats.batch_cost_sum = engine.batch_cost_sum;
  stats.batch_cost_sq = engine.batch_cost_sq;
  stats.first_cpu = cpus ? cpus[0] : -1;
  mpi_rank_close(&engine);
  mpi_rank_stats *all = w->rank == 0 ? calloc((size_t)w->size, sizeof *all) : NULL;
  MPI_Gather(&stats, MPI_STATS_FIELDS, MPI_DOUBLE, all, MPI_STATS_FIELDS, MPI_DOUBLE, 0,
             MPI_COMM_WORLD);
  int status = agree_max(rc);
  if (w->rank == 0 && status == 0 && failure.failed) {
    fprintf(stderr,
            "tenlane-fanout-mpi: item %zu failed on rank %d: %s\n"
            "  (the lowest failing item over all ranks, reported after every rank drained its "
            "batches; no result of this run was published)\n",
            failure.item, failure.rank, failure.why);
    status = 1;
  } else if (w->rank == 0 && status == 0) {
    fan_result *ref = calloc(opt->patches, sizeof *ref);
    double ref_rate = 0.0;
    status = ref && all ? reference_run(&pb, opt, ref, &ref_rate) : 3;
    if (status == 0) status = report(opt, all, w->size, results, ref, ref_rate, one_way_us);
    free(ref);
  }
  mpi_quiet_bcast(&status); /* the workers sleep while the root checks */
  free(all);
  free(results);
  free(scratch);
  fan_problem_free(&pb);
  return status;
}

int main(int argc, char **argv) {
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "tenlane-fanout-mpi: MPI_Init_thread failed\n");
    return 3;
  }
  static world_info w;
  learn_world(&w);
  mpi_options opt;
  int status = agree_options(argc, argv, &opt, &w);
  if (status < 0 && agree_max(provided < MPI_THREAD_FUNNELED ? 3 : 0) != 0) {
    if (w.rank == 0)
      fprintf(stderr, "tenlane-fanout-mpi: this MPI gives thread level %d, below FUNNELED\n",
              provided);
    status = 3;
  }
  if (status < 0) status = run(&opt, &w, provided);
  MPI_Finalize();
  return status;
}
