/* examples/tci/tci_internal.h: what the library's files share and users do not see. */
#ifndef TENLANE_EXAMPLES_TCI_INTERNAL_H
#define TENLANE_EXAMPLES_TCI_INTERNAL_H

#include "tci.h"

#define TCI_BATCH 256
#define TCI_PROBES 1024      /* random points per global pivot search */
#define TCI_GLOBAL_ROUNDS 16 /* global searches per patch at most */
#define TCI_SPLIT_FACTOR 4.0 /* a patch still this far above the tolerance splits */
#define TCI_GLOBAL_PIVOTS 4  /* the worst points added per round */

/* A point's grid indices, unused ones 0. */
typedef uint64_t tci_key[TCI_MAX_DIMS];

/* One entry of the value cache (cache.c): a point's grid indices (unused ones 0) and f there. */
typedef struct tci_cache_slot {
  uint64_t key[TCI_MAX_DIMS];
  double value;
  uint32_t generation; /* the table's generation that wrote it; 0: never written */
  int32_t pending;     /* -1: value holds f; else the miss number of the batch computing it */
} tci_cache_slot;

/* One patch's working memory, laid out once per lane (or per task) in caller memory and
 * reused for every patch: nothing here is allocated per patch. */
struct tci_workspace {
  int sites;                     /* the grid's sites: the most free sites a patch can have */
  int chi;                       /* max_bond */
  int dim;                       /* local dimension */
  uint8_t *left;                 /* left pivots: bond b, pivot k at left[(b * chi + k) * sites] */
  uint8_t *right;                /* right pivots (the suffix from site b), same layout */
  int *rank;                     /* sites + 1 entries */
  uint8_t *new_left, *new_right; /* chi * sites each: an update's new pivots */
  double *pi;                    /* the two-site matrix, (chi dim)^2 */
  double *t;                     /* a core's values, chi * dim * chi */
  double *p;                     /* a pivot matrix, chi * chi */
  int *rows, *cols;              /* chi * dim each */
  double *x;                     /* TCI_BATCH points of up to 3 coordinates */
  uint64_t *xi;         /* TCI_BATCH points of up to 3 grid indices (for an index function) */
  double *y;            /* TCI_BATCH values */
  tci_key *keys;        /* TCI_BATCH points' grid indices */
  size_t *home;         /* TCI_BATCH: their cache slots' home */
  tci_key *part;        /* 2 chi + dim^2: partial indices of a cross's pieces */
  uint8_t *probe;       /* TCI_PROBES local site vectors: the global pivot search's points */
  double *probe_y;      /* their values */
  unsigned char *draft; /* the piece being built, malloc'd per lane, grown geometrically */
  size_t draft_cap;
  tci_cache_slot *cache; /* cache_slots entries (a power of 2), or none */
  size_t cache_slots, cache_used;
  uint32_t cache_generation;
  double *miss_y; /* TCI_BATCH values: f at the points of a batch the cache did not hold */
  int *miss_at;   /* TCI_BATCH: where in the batch each of them goes */
  tci_cache_slot **miss_slot; /* TCI_BATCH: the slot each claimed (NULL: none) */
  int *dup_at, *dup_of;       /* TCI_BATCH: entries that repeat a miss of the same batch */
  /* per patch */
  uint64_t evaluations; /* calls of f, point by point (cache hits are not counted) */
  uint64_t lookups;     /* values asked for, hits and misses */
  double max_abs;       /* max |f| over every value this patch computed */
};

/* The value cache (cache.c). Slots for these options (0 when options->value_cache is 0). */
size_t tci_cache_slots(const tci_grid *grid, const tci_options *options);
/* Empty the table (O(1)): at the start of every patch. */
void tci_cache_clear(tci_workspace *ws);
/* The slot of the point with grid indices key[TCI_MAX_DIMS]: *found = 1 when it was held
 * (its value, or the miss that is computing it), else a freshly claimed slot for the caller
 * to fill (the table is emptied first when it is half full). NULL without a table. */
tci_cache_slot *tci_cache_claim(tci_workspace *ws, const uint64_t *key, size_t home, int *found);
/* Where the search for key starts (tci_cache_claim's `home`), and a hint to load that slot
 * ahead of the claim: a batch hashes every point first, then claims. */
size_t tci_cache_home(const tci_workspace *ws, const uint64_t *key);
void tci_cache_prefetch(const tci_workspace *ws, size_t home);

/* Evaluate f on the cross (left pivot a) x (mid sites) x (right pivot b) of a patch: left
 * holds nl pivots of llen sites at stride `sites`, right nr pivots of rlen sites; nmid is 0,
 * 1 or 2 sites of the local dimension. Values go to out in row-major (a, mid..., b) order. */
int tci_eval_cross(tci_workspace *ws, const tci_problem *problem, const tci_patch *patch,
                   const uint8_t *left, int nl, int llen, int nmid, const uint8_t *right, int nr,
                   int rlen, double *out, char *why);

/* Evaluate f at `count` local site vectors (stride ws->sites), values to out. */
int tci_eval_points(tci_workspace *ws, const tci_problem *problem, const tci_patch *patch,
                    const uint8_t *local, int count, double *out, char *why);

/* Build a patch's piece from its pivots into the workspace's draft (cores.c): valid until
 * the next build; tci_piece_keep copies it into one malloc block the caller owns. */
tci_piece *tci_piece_keep(const tci_piece *draft, int dim);
int tci_build_piece(tl_exec *exec, tci_workspace *ws, const tci_problem *problem,
                    const tci_patch *patch, tci_piece **out, char *why);

/* The TCI2 sweeps of one patch (sweep.c): on return the workspace holds the pivots. */
typedef struct tci_sweep_result {
  int converged;
  int saturated; /* the rank reached max_bond with the error above the tolerance */
  int sweeps;
  double error;
  int max_rank;
} tci_sweep_result;

/* fresh: start from the first pivot; otherwise continue from the pivots in ws. */
int tci_sweeps(tci_workspace *ws, const tci_problem *problem, const tci_patch *patch, int fresh,
               int (*stop)(void *), void *stop_arg, tci_sweep_result *out, char *why);
/* Add a local site vector to the pivots of every bond that has room (sweep.c). */
void tci_add_global_pivot(tci_workspace *ws, int n, const uint8_t *point);
/* The tolerance in absolute terms for this patch now. */
double tci_tolerance(const tci_workspace *ws, const tci_problem *problem);
/* One piece at the free sites `local` (train.c). */
double tci_piece_eval(const tci_piece *piece, int dim, const uint8_t *local);

/* ---- The shared patch queue (queue.c) ------------------------------------------------------ */
#include <pthread.h>

typedef struct tci_queue {
  pthread_mutex_t lock;
  pthread_cond_t wake;
  tci_patch *pending; /* a stack: patches waiting for a lane */
  size_t pending_count, pending_cap;
  tci_piece **kept; /* finished pieces, in completion order (sorted afterwards) */
  size_t kept_count, kept_cap;
  int working;   /* patches taken and not yet finished */
  int stopped;   /* a failure or a cancellation: lanes take no more patches */
  int cancelled; /* the stop was a cancellation */
  int failed;    /* the stop was a failure */
  size_t finished;
  tci_stats stats;
} tci_queue;

int tci_queue_init(tci_queue *q, size_t capacity, char *why);
void tci_queue_destroy(tci_queue *q); /* frees kept pieces still held */
/* Take a patch: 1 with *out set, 0 when the run is over (the queue is empty and no patch is
 * being worked on, or the run stopped). Waits in short timed slices while peers work, and
 * returns 0 once cancelled(arg) says so. */
int tci_queue_take(tci_queue *q, tci_patch *out, int (*cancelled)(void *), void *arg);
/* Finish a taken patch whose TCI took `seconds`: its outcome's piece is kept, or its children
 * (split on the next site: one per local value) are queued. Returns TCI_E_NOMEM (the run
 * stops) or 0. */
int tci_queue_finish(tci_queue *q, const tci_patch *patch, const tci_patch_outcome *outcome,
                     double seconds, int local_dim, char *why);
/* Account one patch TCI of `seconds` in the stats (lock held); the chain its children carry. */
double tci_queue_timing(tci_queue *q, const tci_patch *patch, double seconds);
/* A lane failed or was stopped (`taken`: while it held a patch): the run stops. */
void tci_queue_stop(tci_queue *q, int cancelled, int taken, uint64_t evaluations);

/* The options a run uses: `in` with TCI_CACHE_AUTO decided for function f (patch.c). */
void tci_options_resolve(tci_options *out, const tci_options *in, const tci_function *f);

/* The options' and grid's checks shared by every run (patch.c). */
int tci_check_run(const tci_grid *grid, const tci_function *function, const tci_options *o,
                  char *why);

#endif
