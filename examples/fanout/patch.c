/* examples/fanout/patch.c: the computation of one patch, written once for every runner.
 *
 * A patch is one step of a two-site tensor-cross interpolation. Its inputs (its bond
 * dimension chi, the free site p, chi left pivot multi-indices over sites 0..p-1 and chi
 * right pivot multi-indices over sites p+2..L-1) are drawn from a random stream seeded by
 * (seed, item) alone. The patch samples the tensor train, cut to bond chi, on the
 * (chi d) x (d chi) grid
 *   A[(alpha, s), (t, beta)] = f(I_alpha, s, t, J_beta)
 * where each entry is the chain left^T G_0[i_0] ... G_p[s] G_{p+1}[t] ... G_{L-1}[j] right;
 * the chains share their prefixes and suffixes, so they are contracted as environments,
 * one small GEMM per site (the right ones on the transposed cores, so that every GEMM
 * reads a leading block of a core with the core's own leading dimension), plus three GEMMs
 * for the two free sites. Then the cross:
 *   - QR with column pivoting, truncated where |r(k,k)| <= tol |r(0,0)|, gives the rank r
 *     and the pivot columns J (the first r of its order);
 *   - LU with partial pivoting of A[:, J] gives the pivot rows I and A[I, J] = L1 U;
 *   - two triangular solves give the new left core A[:, J] A[I, J]^-1 = (A[:, J] U^-1) L1^-1;
 *     the new right core is A[I, :];
 *   - the residual ||A - left_core A[I, :]||_F / ||A||_F is the item's check.
 *
 * Invariant: the result depends only on (problem, item) and on the kernels in the
 * fan_ops table; nothing here allocates per item, so the buffers and the kernels decide
 * where memory comes from. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "patch.h"

const char *fan_dtype_name(fan_dtype dtype) { return dtype == FAN_C128 ? "c128" : "f64"; }

size_t fan_results_mismatches(const fan_result *x, const fan_result *y, size_t n, size_t *first) {
  size_t count = 0;
  for (size_t i = 0; i < n; i++) {
    int same = x[i].rank == y[i].rank && x[i].site == y[i].site && x[i].bond == y[i].bond &&
               x[i].digest == y[i].digest &&
               memcmp(&x[i].residual, &y[i].residual, sizeof(double)) == 0 && x[i].computed &&
               y[i].computed;
    if (!same && count++ == 0) *first = i;
  }
  return count;
}

/* ---- Deterministic random numbers ---------------------------------------------------- */

static uint64_t splitmix_next(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Uniform on [-1, 1). */
static double uniform_pm1(uint64_t *state) {
  return (double)(splitmix_next(state) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

static uint64_t below(uint64_t *state, uint64_t n) { return splitmix_next(state) % n; }

/* The stream of item `item`: independent of every other item and of the runner. */
static uint64_t item_stream(uint64_t seed, size_t item) {
  uint64_t s = seed ^ 0x243f6a8885a308d3ULL;
  uint64_t mixed = splitmix_next(&s);
  s = mixed ^ ((uint64_t)item * 0x9e3779b97f4a7c15ULL + 0x13198a2e03707344ULL);
  (void)splitmix_next(&s);
  return s;
}

/* The item's bond dimension: the first draw of its stream, when there is a range (drawn
 * in sorted order too, so that the rest of the stream is the same in both orders). */
static int draw_bond(const fan_problem *pb, size_t item, uint64_t *state) {
  if (pb->bond_hi <= pb->bond_lo) return pb->bond_hi;
  uint64_t span = (uint64_t)(pb->bond_hi - pb->bond_lo + 1);
  int drawn = pb->bond_lo + (int)below(state, span);
  if (!pb->bond_sorted || pb->patches == 0 || item >= pb->patches) return drawn;
  return pb->bond_lo + (int)((uint64_t)item * span / (uint64_t)pb->patches);
}

int fan_item_bond(const fan_problem *pb, size_t item) {
  uint64_t state = item_stream(pb->seed, item);
  return draw_bond(pb, item, &state);
}

/* ---- Elements of either dtype ------------------------------------------------------------ */

static inline void *elem(void *base, size_t index, size_t esize) {
  return (char *)base + index * esize;
}
static inline const void *celem(const void *base, size_t index, size_t esize) {
  return (const char *)base + index * esize;
}
/* One element, with a size the compiler sees as constant in each branch. */
static inline void copy_elem(void *dst, const void *src, size_t esize) {
  if (esize == 8)
    memcpy(dst, src, 8);
  else
    memcpy(dst, src, 16);
}

/* ---- The tensor train ----------------------------------------------------------------- */

static size_t core_elems(const fan_problem *pb) {
  return (size_t)pb->bond_hi * (size_t)pb->phys * (size_t)pb->bond_hi;
}

int fan_problem_make(fan_problem *pb) {
  const int chi = pb->bond_hi, d = pb->phys, length = pb->length;
  const size_t esize = fan_dtype_size(pb->dtype), core_size = core_elems(pb);
  const int parts = pb->dtype == FAN_C128 ? 2 : 1;
  pb->cores = malloc(esize * core_size * (size_t)length);
  pb->cores_t = malloc(esize * core_size * (size_t)length);
  pb->left = malloc(esize * (size_t)chi);
  pb->right = malloc(esize * (size_t)chi);
  if (!pb->cores || !pb->cores_t || !pb->left || !pb->right) {
    fan_problem_free(pb);
    return -1;
  }
  uint64_t state = pb->seed * 0x2545f4914f6cdd1dULL + 0x6a09e667f3bcc909ULL;
  /* Bond weights decay geometrically to 1e-10 over the bond, so the grid's singular values
   * decay and the tolerance decides the rank. Entries are scaled so that a step keeps a
   * vector's expected norm: uniform [-1, 1) has variance 1/3 (per part of a complex). */
  double weight_sq_sum = 0.0;
  for (int b = 0; b < chi; b++) {
    double w = chi > 1 ? pow(10.0, -10.0 * b / (chi - 1)) : 1.0;
    weight_sq_sum += w * w;
  }
  double scale = sqrt(3.0 / (weight_sq_sum * parts));
  for (int k = 0; k < length; k++) {
    double *core = (double *)pb->cores + (size_t)k * core_size * (size_t)parts;
    double *core_t = (double *)pb->cores_t + (size_t)k * core_size * (size_t)parts;
    for (int b = 0; b < chi; b++) {
      double w = chi > 1 ? pow(10.0, -10.0 * b / (chi - 1)) : 1.0;
      for (int s = 0; s < d; s++)
        for (int a = 0; a < chi; a++) {
          size_t at = (size_t)a + (size_t)chi * ((size_t)s + (size_t)d * (size_t)b);
          size_t at_t = (size_t)b + (size_t)chi * ((size_t)s + (size_t)d * (size_t)a);
          for (int part = 0; part < parts; part++) {
            double v = uniform_pm1(&state) * scale * w;
            core[at * (size_t)parts + (size_t)part] = v;
            core_t[at_t * (size_t)parts + (size_t)part] = v;
          }
        }
    }
  }
  for (int a = 0; a < chi * parts; a++) ((double *)pb->left)[a] = uniform_pm1(&state);
  for (int a = 0; a < chi * parts; a++) ((double *)pb->right)[a] = uniform_pm1(&state);
  return 0;
}

void fan_problem_free(fan_problem *pb) {
  free(pb->cores);
  free(pb->cores_t);
  free(pb->left);
  free(pb->right);
  pb->cores = pb->cores_t = pb->left = pb->right = NULL;
}

static const void *core_at(const fan_problem *pb, int k) {
  return celem(pb->cores, (size_t)k * core_elems(pb), fan_dtype_size(pb->dtype));
}

static const void *core_t_at(const fan_problem *pb, int k) {
  return celem(pb->cores_t, (size_t)k * core_elems(pb), fan_dtype_size(pb->dtype));
}

/* ---- Buffers --------------------------------------------------------------------------- */

/* The pieces of a fan_work, in field order: byte size of each. */
enum { WORK_PIECES = 19 };

static void work_layout(const fan_problem *pb, fan_work *w, void **slots[WORK_PIECES],
                        size_t sizes[WORK_PIECES]) {
  size_t chi = (size_t)pb->bond_hi, m = (size_t)fan_grid_side_max(pb), len = (size_t)pb->length;
  size_t sq = m * m, e = fan_dtype_size(pb->dtype);
  void **list[WORK_PIECES] = {
      (void **)&w->env_left,    (void **)&w->env_right_t, (void **)&w->step,
      (void **)&w->lmat,        (void **)&w->rmat,        (void **)&w->grid,
      (void **)&w->qbuf,        (void **)&w->rbuf,        (void **)&w->cols,
      (void **)&w->lu,          (void **)&w->half,        (void **)&w->left_core,
      (void **)&w->right_core,  (void **)&w->recon,       (void **)&w->perm,
      (void **)&w->pivots,      (void **)&w->rows,        (void **)&w->left_pivots,
      (void **)&w->right_pivots};
  size_t i8 = sizeof(int64_t), i4 = sizeof(int);
  size_t bytes[WORK_PIECES] = {
      chi * chi * e, chi * chi * e, chi * m * e, m * chi * e,    chi * m * e,   sq * e, sq * e,
      sq * e,        sq * e,        sq * e,      sq * e,         sq * e,        sq * e, sq * e,
      m * i8,        m * i8,        m * i4,      chi * len * i4, chi * len * i4};
  memcpy(slots, list, sizeof list);
  memcpy(sizes, bytes, sizeof bytes);
}

static size_t round64(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

size_t fan_work_bytes(const fan_problem *pb) {
  fan_work w;
  void **slots[WORK_PIECES];
  size_t sizes[WORK_PIECES];
  work_layout(pb, &w, slots, sizes);
  size_t total = 0;
  for (int i = 0; i < WORK_PIECES; i++) total += round64(sizes[i]);
  return total;
}

void fan_work_carve(const fan_problem *pb, void *block, fan_work *w) {
  void **slots[WORK_PIECES];
  size_t sizes[WORK_PIECES];
  work_layout(pb, w, slots, sizes);
  char *cursor = block;
  for (int i = 0; i < WORK_PIECES; i++) {
    *slots[i] = cursor;
    cursor += round64(sizes[i]);
  }
}

int fan_work_malloc_each(const fan_problem *pb, fan_work *w) {
  void **slots[WORK_PIECES];
  size_t sizes[WORK_PIECES];
  memset(w, 0, sizeof *w);
  work_layout(pb, w, slots, sizes);
  int failed = 0;
  for (int i = 0; i < WORK_PIECES; i++) {
    *slots[i] = malloc(sizes[i]);
    failed |= *slots[i] == NULL;
  }
  if (failed) {
    fan_work_free_each(w);
    return -1;
  }
  return 0;
}

void fan_work_free_each(fan_work *w) {
  void **slots[WORK_PIECES];
  size_t sizes[WORK_PIECES];
  fan_problem sizes_only;
  memset(&sizes_only, 0, sizeof sizes_only);
  work_layout(&sizes_only, w, slots, sizes);
  for (int i = 0; i < WORK_PIECES; i++) {
    free(*slots[i]);
    *slots[i] = NULL;
  }
}

/* ---- The patch ------------------------------------------------------------------------- */

static uint64_t fnv_bytes(uint64_t h, const void *data, size_t bytes) {
  const unsigned char *p = data;
  for (size_t i = 0; i < bytes; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

/* Smallest p such that d^p >= chi (enough distinct multi-indices for chi pivots). */
static int pivot_depth(int d, int chi) {
  int depth = 0;
  long long reach = 1;
  while (reach < chi && depth < 62) {
    reach *= d;
    depth++;
  }
  return depth;
}

/* The patch's sizes and random inputs (the free site and the pivots into w). */
typedef struct patch_shape {
  int chi, d, length, m, site;
  size_t esize;
} patch_shape;

static void draw_inputs(const fan_problem *pb, size_t item, fan_work *w, patch_shape *ps) {
  uint64_t state = item_stream(pb->seed, item);
  ps->chi = draw_bond(pb, item, &state);
  ps->d = pb->phys;
  ps->length = pb->length;
  ps->m = ps->chi * ps->d;
  ps->esize = fan_dtype_size(pb->dtype);
  const int chi = ps->chi, d = ps->d, length = ps->length;
  int depth = pivot_depth(d, chi);
  int lo = depth, hi = length - 2 - depth;
  if (hi < lo) lo = hi = (length - 2) / 2;
  ps->site = lo + (int)below(&state, (uint64_t)(hi - lo + 1));
  for (int alpha = 0; alpha < chi; alpha++)
    for (int k = 0; k < ps->site; k++)
      w->left_pivots[k + (size_t)length * alpha] = (int)below(&state, (uint64_t)d);
  for (int beta = 0; beta < chi; beta++)
    for (int k = ps->site + 2; k < length; k++)
      w->right_pivots[k + (size_t)length * beta] = (int)below(&state, (uint64_t)d);
}

/* Sample the grid A (m x m, ld m) into w->grid: environments, then the two free sites. */
static int sample_grid(const fan_problem *pb, const patch_shape *ps, fan_call *call, fan_work *w) {
  const int chi = ps->chi, d = ps->d, length = ps->length, m = ps->m, site = ps->site;
  const int ldc = pb->bond_hi; /* every core's leading dimension */
  const size_t e = ps->esize;
  /* Left environments: row alpha of env_left = left^T G_0[i_0] ... G_{site-1}[i_{site-1}]
   * for pivot alpha. One GEMM per site against the core's leading block, then a gather of
   * each row's own physical index. */
  for (int alpha = 0; alpha < chi; alpha++)
    for (int a = 0; a < chi; a++)
      copy_elem(elem(w->env_left, (size_t)alpha + (size_t)chi * a, e), celem(pb->left, a, e), e);
  for (int k = 0; k < site; k++) {
    int rc =
        call->ops->gemm(call, chi, m, chi, w->env_left, chi, core_at(pb, k), ldc, w->step, chi);
    if (rc) return rc;
    for (int b = 0; b < chi; b++)
      for (int alpha = 0; alpha < chi; alpha++) {
        int s = w->left_pivots[k + (size_t)length * alpha];
        copy_elem(elem(w->env_left, (size_t)alpha + (size_t)chi * b, e),
                  celem(w->step, (size_t)alpha + (size_t)chi * (s + (size_t)d * b), e), e);
      }
  }
  /* Right environments, transposed: row beta of env_right_t = (G_{site+2}[j] ... right)^T,
   * one GEMM per site against the transposed core, then the same gather. */
  for (int beta = 0; beta < chi; beta++)
    for (int b = 0; b < chi; b++)
      copy_elem(elem(w->env_right_t, (size_t)beta + (size_t)chi * b, e), celem(pb->right, b, e), e);
  for (int k = length - 1; k >= site + 2; k--) {
    int rc = call->ops->gemm(call, chi, m, chi, w->env_right_t, chi, core_t_at(pb, k), ldc, w->step,
                             chi);
    if (rc) return rc;
    for (int a = 0; a < chi; a++)
      for (int beta = 0; beta < chi; beta++) {
        int t = w->right_pivots[k + (size_t)length * beta];
        copy_elem(elem(w->env_right_t, (size_t)beta + (size_t)chi * a, e),
                  celem(w->step, (size_t)beta + (size_t)chi * (t + (size_t)d * a), e), e);
      }
  }
  /* The two free sites: lmat[(alpha, s), b]; step[beta, (t, a)], transposed into
   * rmat[a, (t, beta)]; then A = lmat rmat. */
  int rc =
      call->ops->gemm(call, chi, m, chi, w->env_left, chi, core_at(pb, site), ldc, w->lmat, chi);
  if (!rc)
    rc = call->ops->gemm(call, chi, m, chi, w->env_right_t, chi, core_t_at(pb, site + 1), ldc,
                         w->step, chi);
  if (rc) return rc;
  for (int beta = 0; beta < chi; beta++)
    for (int t = 0; t < d; t++)
      for (int a = 0; a < chi; a++)
        copy_elem(elem(w->rmat, (size_t)a + (size_t)chi * (t + (size_t)d * beta), e),
                  celem(w->step, (size_t)beta + (size_t)chi * (t + (size_t)d * a), e), e);
  return call->ops->gemm(call, m, m, chi, w->lmat, m, w->rmat, chi, w->grid, m);
}

/* The cross of rank `rank` from the factored grid: pivot rows, both cores, the residual. */
static int cross(const patch_shape *ps, size_t item, int rank, fan_call *call, fan_work *w,
                 double *residual) {
  const int m = ps->m;
  const size_t e = ps->esize;
  int *rows = w->rows;
  /* Row pivots: LU with partial pivoting of the pivot columns A[:, J]. */
  for (int k = 0; k < rank; k++) {
    int64_t col = w->perm[k];
    if (col < 0 || col >= m) {
      snprintf(call->why, sizeof call->why, "item %zu: column pivot %lld out of range", item,
               (long long)col);
      return 1;
    }
    memcpy(elem(w->cols, (size_t)m * k, e), celem(w->grid, (size_t)m * (size_t)col, e),
           e * (size_t)m);
  }
  int rc = call->ops->lu(call, m, rank, w->cols, m, w->lu, m, w->pivots);
  if (rc) return rc;
  for (int i = 0; i < m; i++) rows[i] = i;
  for (int k = 0; k < rank; k++) {
    int64_t swap = w->pivots[k];
    if (swap < k || swap >= m) {
      snprintf(call->why, sizeof call->why, "item %zu: LU pivot %lld out of range", item,
               (long long)swap);
      return 1;
    }
    int keep = rows[k];
    rows[k] = rows[swap];
    rows[swap] = keep;
  }
  /* The new cores. A[I, J] = L1 U (L1 the unit lower top of the LU), so the left core
   * A[:, J] A[I, J]^-1 is two triangular solves: by U, then by L1. */
  rc = call->ops->solve_right(call, 0, 0, m, rank, w->lu, m, w->cols, m, w->half, m);
  if (!rc) rc = call->ops->solve_right(call, 1, 1, m, rank, w->lu, m, w->half, m, w->left_core, m);
  if (rc) return rc;
  for (int j = 0; j < m; j++)
    for (int k = 0; k < rank; k++)
      copy_elem(elem(w->right_core, (size_t)k + (size_t)rank * j, e),
                celem(w->grid, (size_t)rows[k] + (size_t)m * j, e), e);

  /* The check: the cross left_core * A[I, :] against the grid (a complex entry's two
   * parts count as two reals in both sums). */
  rc = call->ops->gemm(call, m, m, rank, w->left_core, m, w->right_core, rank, w->recon, m);
  if (rc) return rc;
  double diff_sq = 0.0, norm_sq = 0.0;
  const double *recon = w->recon, *grid = w->grid;
  size_t reals = (size_t)m * (size_t)m * (e / sizeof(double));
  for (size_t i = 0; i < reals; i++) {
    double delta = recon[i] - grid[i];
    diff_sq += delta * delta;
    norm_sq += grid[i] * grid[i];
  }
  *residual = norm_sq > 0.0 ? sqrt(diff_sq / norm_sq) : 0.0;
  return 0;
}

int fan_patch_run(const fan_problem *pb, size_t item, fan_call *call, fan_work *w,
                  fan_result *out) {
  patch_shape ps;
  draw_inputs(pb, item, w, &ps);
  const int m = ps.m;
  if (call->dtype != pb->dtype) {
    snprintf(call->why, sizeof call->why, "item %zu: kernels for %s, problem in %s", item,
             fan_dtype_name(call->dtype), fan_dtype_name(pb->dtype));
    return 1;
  }
  if (pb->fail_item >= 0 && (size_t)pb->fail_item == item) {
    snprintf(call->why, sizeof call->why, "injected failure (--fail-item %lld)", pb->fail_item);
    return 1;
  }
  int rc = sample_grid(pb, &ps, call, w);
  if (rc) return rc;

  /* Column pivots and the rank: QR with column pivoting, truncated at tol |r(0,0)|. */
  int rank = 0;
  rc = call->ops->qrcp(call, m, m, w->grid, m, pb->tol, w->qbuf, m, w->rbuf, m, w->perm, &rank);
  if (rc) return rc;
  if (rank < 0 || rank > m) {
    snprintf(call->why, sizeof call->why, "item %zu: the factorization reported rank %d of %d",
             item, rank, m);
    return 1;
  }
  double residual = 1.0;
  if (rank > 0 && (rc = cross(&ps, item, rank, call, w, &residual)) != 0) return rc;
  if (!(residual == residual)) {
    snprintf(call->why, sizeof call->why, "item %zu: residual is NaN (rank %d of %d)", item, rank,
             m);
    return 1;
  }

  const size_t e = ps.esize;
  uint64_t h = 0xcbf29ce484222325ULL;
  h = fnv_bytes(h, &ps.chi, sizeof ps.chi);
  h = fnv_bytes(h, &rank, sizeof rank);
  h = fnv_bytes(h, w->perm, sizeof(int64_t) * (size_t)m);
  h = fnv_bytes(h, w->rows, sizeof(int) * (size_t)rank);
  /* The pivots that matter: the kept columns J and rows I (the order of the dropped columns
   * follows their rounding-level remainders). */
  uint64_t pivots = fnv_bytes(0xcbf29ce484222325ULL, &ps.chi, sizeof ps.chi);
  pivots = fnv_bytes(pivots, &rank, sizeof rank);
  pivots = fnv_bytes(pivots, w->perm, sizeof(int64_t) * (size_t)rank);
  pivots = fnv_bytes(pivots, w->rows, sizeof(int) * (size_t)rank);
  h = fnv_bytes(h, w->left_core, e * (size_t)m * (size_t)rank);
  h = fnv_bytes(h, w->right_core, e * (size_t)rank * (size_t)m);
  h = fnv_bytes(h, &residual, sizeof residual);

  out->rank = rank;
  out->site = ps.site;
  out->bond = ps.chi;
  out->residual = residual;
  out->digest = h;
  out->pivots = pivots;
  out->computed = 1;
  return 0;
}
