/* src/kernels/small_gemm.c: which kernel a small real GEMM runs, and when libxsmm may
 * generate one.
 *
 * libxsmm's JIT kernels are the fastest for small shapes once they exist (8^3 in ~11 ns,
 * 64^3 at ~140 GFLOP/s on this machine) but generating one costs 10-15 us on a quiet
 * machine and several times that on a loaded one, while BLIS costs 1.6 us of overhead
 * even at 4^3. A stream of shapes that each appear once or twice (an MPS sweep growing its
 * bonds, a fan-out whose ranks differ per patch) would pay a JIT per call. So:
 *   1. a kernel this thread already holds (per-thread direct-mapped cache) runs at once;
 *   2. a shape some thread has generated before (a process-wide set of fingerprints) is
 *      fetched from libxsmm's registry, which costs tens of ns and never generates code;
 *   3. otherwise the shape is counted (per thread), and until it has been seen `jit_after`
 *      times the hand kernel of small_gemm_core.c runs (no code generation; 2x libxsmm's
 *      time from 16^3 to 64^3, tens of ns below); the call that reaches the count generates
 *      the kernel, and from then on every thread fetches it (2.).
 * tenlane's routes (tl__small_gemm) use the count only as a function of the shape: 0 (the
 * hand kernel, always) up to TL__SMALL_GEMM_HAND_MAX multiply-adds, now the whole reach, so
 * a call's bits never depend on what ran before it and no route generates code; libxsmm
 * stays reachable through tl__small_gemm_ex for the tests and benchmarks that compare.
 * Real shapes libxsmm cannot take (alpha other than 1, beta other than 0 or 1, strided
 * rows) also run the hand kernel while they are small. Complex dtypes are not handled
 * here.
 *
 * Thread rules: the caches and counts are per thread (no locking); the fingerprint set is
 * a fixed array of atomics, insert-only (a full set only means a later thread counts a
 * shape again). Nothing here allocates or fails: a libxsmm dispatch that returns no kernel
 * falls back to the hand kernel. */
#include <stdatomic.h>
#include <string.h>

#include "kernels.h"
#include "providers.h"

/* libxsmm's reach as tenlane uses it, and the hand kernel's (its packed block is k x 16
 * elements of the stack). */
#define XSMM_MAX_MNK (64 * 64 * 64)
#define XSMM_MAX_EXTENT 256

typedef struct xsmm_key {
  int32_t m, n, k, lda, ldb, ldc;
  int32_t dtype, flags;
} xsmm_key;

static uint64_t key_hash(const xsmm_key *key) {
  uint64_t h = 1469598103934665603ull;
  const int32_t *words = (const int32_t *)key;
  for (size_t i = 0; i < sizeof *key / 4; i++) h = (h ^ (uint32_t)words[i]) * 1099511628211ull;
  return h | 1; /* 0 marks an empty slot below */
}

/* ---- per-thread kernel cache ---------------------------------------------------------
 * libxsmm's own dispatch is a locked registry lookup (~18 ns); a direct-mapped cache per
 * thread makes a repeated shape cost a few ns and shares nothing between threads. */
#define XSMM_CACHE_SLOTS 64

typedef void (*xsmm_void_fn)(void);

typedef struct xsmm_slot {
  xsmm_key key;
  xsmm_void_fn kernel;
  int valid;
} xsmm_slot;

static _Thread_local xsmm_slot xsmm_cache[XSMM_CACHE_SLOTS];

/* ---- shapes seen, per thread, and kernels generated, per process ---------------------- */
#define SEEN_SLOTS 256
#define MADE_SLOTS 4096
#define MADE_PROBES 16

typedef struct seen_slot {
  uint64_t hash;
  int count;
} seen_slot;

static _Thread_local seen_slot seen[SEEN_SLOTS];
static _Atomic uint64_t made[MADE_SLOTS];

static int made_has(uint64_t hash) {
  for (int i = 0; i < MADE_PROBES; i++) {
    uint64_t v =
        atomic_load_explicit(&made[(hash + (uint64_t)i) % MADE_SLOTS], memory_order_relaxed);
    if (v == hash) return 1;
    if (v == 0) return 0;
  }
  return 0;
}

static void made_add(uint64_t hash) {
  for (int i = 0; i < MADE_PROBES; i++) {
    _Atomic uint64_t *slot = &made[(hash + (uint64_t)i) % MADE_SLOTS];
    uint64_t expected = 0;
    if (atomic_compare_exchange_strong_explicit(slot, &expected, hash, memory_order_relaxed,
                                                memory_order_relaxed) ||
        expected == hash)
      return;
  }
}

/* Count one sighting of the shape on this thread; returns the count including this one. A
 * slot taken by another shape is overwritten (that shape starts counting again). */
static int seen_count(uint64_t hash) {
  seen_slot *slot = &seen[(hash >> 7) % SEEN_SLOTS];
  if (slot->hash != hash) {
    slot->hash = hash;
    slot->count = 0;
  }
  return ++slot->count;
}

static xsmm_void_fn xsmm_dispatch(const xsmm_key *key) {
  libxsmm_blasint lda = key->lda, ldb = key->ldb, ldc = key->ldc;
  int flags = key->flags, prefetch = LIBXSMM_PREFETCH_NONE;
  if (key->dtype == TL_F64) {
    double al = 1.0, be = (flags & LIBXSMM_GEMM_FLAG_BETA_0) ? 0.0 : 1.0;
    return (xsmm_void_fn)libxsmm_dmmdispatch(key->m, key->n, key->k, &lda, &ldb, &ldc, &al, &be,
                                             &flags, &prefetch);
  }
  float al = 1.0f, be = (flags & LIBXSMM_GEMM_FLAG_BETA_0) ? 0.0f : 1.0f;
  return (xsmm_void_fn)libxsmm_smmdispatch(key->m, key->n, key->k, &lda, &ldb, &ldc, &al, &be,
                                           &flags, &prefetch);
}

/* The kernel for `key` if this thread holds it, or libxsmm has it, or the shape has now
 * been seen often enough to generate it; else NULL (run the hand kernel). */
static xsmm_void_fn xsmm_kernel(const xsmm_key *key, int jit_after) {
  if (jit_after <= 0) return NULL; /* the hand kernel only */
  uint64_t hash = key_hash(key);
  xsmm_slot *slot = &xsmm_cache[(hash >> 17) % XSMM_CACHE_SLOTS];
  if (slot->valid && memcmp(&slot->key, key, sizeof *key) == 0) return slot->kernel;
  if (!made_has(hash) && seen_count(hash) < jit_after) return NULL;
  xsmm_void_fn fn = xsmm_dispatch(key);
  if (fn == NULL) return NULL;
  made_add(hash);
  slot->key = *key;
  slot->kernel = fn;
  slot->valid = 1;
  return fn;
}

/* The libxsmm form of the call, column-major with unit row strides: 1 and *key filled, or
 * 0 when libxsmm cannot take it. */
static int xsmm_form(tl_dtype dtype, int64_t m, int64_t n, int64_t k, tl_scalar alpha, int64_t rsa,
                     int64_t csa, int64_t rsb, int64_t csb, tl_scalar beta, int64_t rsc,
                     int64_t csc, xsmm_key *key) {
  if (alpha.re != 1.0 || (beta.re != 0.0 && beta.re != 1.0) || k == 0) return 0;
  /* Extent-1 dimensions' strides do not matter: normalise them. */
  if (k == 1) csa = m;
  if (m == 1) rsa = 1;
  if (n == 1) csb = k, csc = m;
  if (k == 1) rsb = 1;
  if (m == 1) rsc = 1;
  if (rsa != 1 || rsb != 1 || rsc != 1) return 0;
  if (csa < m || csb < k || csc < m) return 0;
  if (csa > INT32_MAX || csb > INT32_MAX || csc > INT32_MAX) return 0;
  memset(key, 0, sizeof *key);
  key->m = (int32_t)m;
  key->n = (int32_t)n;
  key->k = (int32_t)k;
  key->lda = (int32_t)csa;
  key->ldb = (int32_t)csb;
  key->ldc = (int32_t)csc;
  key->dtype = dtype;
  key->flags = beta.re == 0.0 ? LIBXSMM_GEMM_FLAG_BETA_0 : LIBXSMM_GEMM_FLAG_NONE;
  return 1;
}

int tl__small_gemm_fits(tl_dtype dtype, int64_t m, int64_t n, int64_t k) {
  if (dtype != TL_F64 && dtype != TL_F32) return 0;
  if (m > XSMM_MAX_EXTENT || n > XSMM_MAX_EXTENT || k > TL__SMALL_GEMM_MAX_K) return 0;
  return m * n * k <= XSMM_MAX_MNK;
}

int tl__small_gemm_ex(int jit_after, tl_dtype dtype, int64_t m, int64_t n, int64_t k,
                      tl_scalar alpha, const void *a, int64_t rsa, int64_t csa, const void *b,
                      int64_t rsb, int64_t csb, tl_scalar beta, void *c, int64_t rsc, int64_t csc) {
  if (!tl__small_gemm_fits(dtype, m, n, k)) return 0;
  if (m == 0 || n == 0) return 1;
  xsmm_key key;
  int transposed = 0;
  int fits = xsmm_form(dtype, m, n, k, alpha, rsa, csa, rsb, csb, beta, rsc, csc, &key);
  if (!fits) {
    /* C^T = B^T A^T: a row-major C becomes column-major. */
    fits = xsmm_form(dtype, n, m, k, alpha, csb, rsb, csa, rsa, beta, csc, rsc, &key);
    transposed = fits;
  }
  xsmm_void_fn fn = fits ? xsmm_kernel(&key, jit_after) : NULL;
  if (fn != NULL) {
    const void *x = transposed ? b : a, *y = transposed ? a : b;
    if (dtype == TL_F64)
      ((libxsmm_dmmfunction)fn)((const double *)x, (const double *)y, (double *)c);
    else
      ((libxsmm_smmfunction)fn)((const float *)x, (const float *)y, (float *)c);
    return 1;
  }
  /* The hand kernel writes whole columns of C fastest: give it C's unit stride as rows. */
  if (csc == 1 && rsc != 1 && n > 1)
    tl__small_gemm_kernel(-1, dtype, n, m, k, alpha, b, csb, rsb, a, csa, rsa, beta, c, csc, rsc);
  else
    tl__small_gemm_kernel(-1, dtype, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
  return 1;
}

/* The kernel a call runs is a function of its shape alone. The hand kernel and libxsmm's
 * kernels round differently for some shapes (libxsmm splits the k sum for a few m and n; a
 * sweep over m, n <= 64 found 5034 of 40960 shapes that differ), so a choice that depended
 * on how often this thread had seen the shape made the same call give other bits on
 * another lane, or later on the same one: tl_map results then depended on which lane ran
 * an item. A fixed choice of libxsmm, though, means generating code at a shape's first call
 * (10-15 us, more on a loaded machine), which a stream of new shapes pays on every call. So:
 * the hand kernel for every call up to TL__SMALL_GEMM_HAND_MAX multiply-adds, which is the
 * whole small reach (64^3): at 1.1-1.5x libxsmm's time from 16^3 up with 12 accumulators,
 * never generating code, its first call costs what its later calls cost. */
int tl__small_gemm(tl_dtype dtype, int64_t m, int64_t n, int64_t k, tl_scalar alpha, const void *a,
                   int64_t rsa, int64_t csa, const void *b, int64_t rsb, int64_t csb,
                   tl_scalar beta, void *c, int64_t rsc, int64_t csc) {
  int policy = m * n * k <= TL__SMALL_GEMM_HAND_MAX ? 0 : 1;
  return tl__small_gemm_ex(policy, dtype, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc,
                           csc);
}
