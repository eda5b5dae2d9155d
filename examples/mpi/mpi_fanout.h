/* examples/mpi/mpi_fanout.h: what the parts of tenlane-fanout-mpi share.
 *
 * The program runs the fan-out's patches (examples/fanout/patch.h) over the ranks of an
 * MPI job. Each rank is one tenlane engine: a context sized to the CPUs it may use, one
 * held session for the whole run, and one phase (a tl_map) per batch of items. The root
 * (rank 0) hands out batches of consecutive items to whichever rank is free and computes
 * batches of its own in between; results come back to the root and are kept in item order.
 *
 * The invariant the whole program keeps: only the thread that initialised MPI calls MPI,
 * and it never does so from inside a phase (it is parked there: the lanes run the items).
 * So every MPI call sits between two phases; the queue of three batches on every worker
 * rank is what keeps a worker busy while the root is inside one of its own phases. */
#ifndef MPI_FANOUT_H
#define MPI_FANOUT_H

#include <stddef.h>
#include <stdint.h>

#include "fanout.h"
#include "tenlane/context.h"
#include "tenlane/session.h"

/* ---- Options (options.c) ------------------------------------------------------------- */

enum { MPI_MAX_FAIL_ITEMS = 8 };

typedef struct mpi_options {
  size_t patches;
  int length, phys;
  int bond_lo, bond_hi; /* each patch draws its bond from bond_lo..bond_hi */
  fan_dtype dtype;
  double tol;
  uint64_t seed;
  int lanes;     /* lanes of every rank's context; 0 = the CPUs of sched_getaffinity */
  size_t batch;  /* items per batch a worker rank gets */
  size_t warmup; /* items of each rank's untimed warm-up phase */
  int fail_count;
  size_t fail_items[MPI_MAX_FAIL_ITEMS]; /* test hook: these items fail on purpose */
  int quiet;
} mpi_options;

/* Parse argv into *opt (defaults first). Returns -1 to go on, 0 after --help (printed
 * only when `speak`), 2 on a bad option (reported only when `speak`). No MPI call. */
int mpi_parse_options(int argc, char **argv, mpi_options *opt, int speak);
/* A 64-bit digest of every option that decides the results or the schedule; the ranks
 * compare theirs before any work starts. */
uint64_t mpi_options_digest(const mpi_options *opt);

/* ---- One rank's engine (rank.c) ------------------------------------------------------ */

typedef struct mpi_lane_slot mpi_lane_slot;

typedef struct mpi_rank {
  const fan_problem *pb;
  const mpi_options *opt;
  tl_context *ctx;
  tl_session *session; /* held from mpi_rank_open to mpi_rank_close */
  int lanes;
  mpi_lane_slot *slots; /* one per lane: the patch buffers and the lane's lowest failure */
  /* Totals over the measured batches (mpi_rank_batch with measure = 1). */
  double busy_s;         /* seconds inside phases */
  size_t items, batches; /* items and phases run */
  double batch_cost_sum; /* per batch: microseconds per item per lane (x = phase time * lanes /
                            items); the sum of x and of x squared, for the model's inputs */
  double batch_cost_sq;
  uint64_t mallocs;   /* malloc-family calls of the process while a phase ran */
  uint64_t tl_allocs; /* tenlane's own heap allocations while a phase ran */
} mpi_rank;

/* Make the rank's context (budget `lanes`, pinned to `cpus` when cpus is not NULL) and open
 * its held session on the calling thread. Returns 0, or -1 with why set. */
int mpi_rank_open(mpi_rank *rank, const fan_problem *pb, const mpi_options *opt, int lanes,
                  const int *cpus, int cpu_count, char *why, size_t why_size);
/* One batch: items first .. first + count - 1 in one phase (tl_map) on the held session;
 * out[i] gets item first + i. Returns 0; 1 when an item failed (*failed_item = the lowest
 * item that failed by itself, why set; every lane joined, every item below it ran); 3 on
 * a failure of the engine itself (why set). With measure set, the phase counts in the
 * totals above. Session's thread only. */
int mpi_rank_batch(mpi_rank *rank, size_t first, size_t count, fan_result *out, int measure,
                   size_t *failed_item, char *why, size_t why_size);
/* The untimed warm-up: items 0 .. opt->warmup - 1, again (up to 8 times) until every lane
 * has run an item, so that every lane's buffers, arena and kernels are made before the
 * timed run. out holds opt->warmup results. An item that fails here is left for the timed
 * run to report. Returns 0, or -1 on an engine failure (why set). */
int mpi_rank_warm_up(mpi_rank *rank, fan_result *out, char *why, size_t why_size);
/* Close the session and destroy the context (also after a failed open). */
void mpi_rank_close(mpi_rank *rank);

/* ---- The items through tenlane's routes (item.c) ------------------------------------- */

/* The lane's per-item work: buffers made on its first item and kept, and the lowest item
 * it saw fail by itself. Written only by the lane that owns it. */
struct mpi_lane_slot {
  void *block;
  fan_work work;
  int failed;
  size_t failed_item;
  char why[300];
  char pad[64]; /* lanes write their own slots at once: keep them off each other's lines */
};

typedef struct mpi_item_arg {
  const fan_problem *pb;
  const mpi_options *opt;
  mpi_lane_slot *slots;
  int slot_count;
  size_t first;    /* item number of the map's index 0 */
  fan_result *out; /* out[index] */
} mpi_item_arg;

/* A tl_map callback: runs patch first + index on the lane's surface. */
int mpi_item(tl_exec *exec, size_t index, int lane_index, void *arg);

/* ---- The dispatch over ranks (dispatch.c) -------------------------------------------- */

/* What one rank measured over the timed run; gathered on the root as doubles. */
typedef struct mpi_rank_stats {
  double lanes, wall_s, busy_s, dispatch_s, items, batches, mallocs, tl_allocs;
  double batch_cost_sum, batch_cost_sq; /* see mpi_rank */
  double first_cpu;  /* the first CPU the rank's context is pinned to, -1 when not pinned */
  double root_chunk; /* the root's own chunk (root only) */
} mpi_rank_stats;
enum { MPI_STATS_FIELDS = sizeof(mpi_rank_stats) / sizeof(double) };

/* The timed run's failure, if any: the lowest failing item over every rank. */
typedef struct mpi_failure {
  int failed;
  size_t item;
  int rank;
  char why[300];
} mpi_failure;

/* Root side: hand batches of opt->batch items to the worker ranks, compute on `rank` in
 * between, gather results[item] for every item. Returns 0 when every batch was answered
 * (look at *failure), 3 on an engine or MPI failure (why set). */
int mpi_dispatch_root(mpi_rank *rank, int world, fan_result *results, mpi_rank_stats *stats,
                      mpi_failure *failure, char *why, size_t why_size);
/* Worker side: run the batches the root sends until it says stop. Returns 0 or 3. */
int mpi_dispatch_worker(mpi_rank *rank, mpi_rank_stats *stats, char *why, size_t why_size);

/* Half the mean round trip of a small message between rank 0 and rank 1, in microseconds,
 * on rank 0 (0 elsewhere, and with one rank). Every rank calls it. */
double mpi_one_way_us(void);

/* A barrier that sleeps while it waits, so a waiting rank leaves its CPU to the others. */
void mpi_quiet_barrier(void);
/* Broadcast *value from the root, sleeping while it waits. */
void mpi_quiet_bcast(int *value);

#endif
