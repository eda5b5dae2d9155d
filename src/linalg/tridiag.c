/* src/linalg/tridiag.c: the eigenproblem of a real symmetric tridiagonal matrix (tl_eigh's
 * solver step) run in pieces, so that tl_exec_cancel is seen inside it.
 *
 * The matrix is cut into unreduced blocks where an off-diagonal entry is negligible (stedc's
 * test: |e_i| <= eps sqrt|d_i| sqrt|d_i+1|). Without vectors every block goes to sterf and
 * the eigenvalues are sorted at the end. With vectors a block of order at most
 * TL__TRIDIAG_LEAF goes to steqr; a larger one is scaled to norm 1 and solved by divide and
 * conquer driven here: halved level by level until every part has order <= TL__TRIDIAG_LEAF,
 * each tear a rank-one change (the torn entry taken off the two diagonal entries beside it),
 * each leaf solved by steqr, then the halves merged pairwise, level by level, by LAPACK's
 * laed1 (deflation, the secular equation, the product with the halves' vectors). That is
 * stedc's own sequence (compz 'I': its laed0 with icompq 2), so results agree with stedc's
 * within rounding; the columns are sorted by eigenvalue at the end as stedc sorts them.
 *
 * Invariant: before every piece (a block, a leaf, a merge) the cancel flag is looked at,
 * then the pause point TL__PAUSE_TRIDIAG_PIECE is passed (tests raise the flag there); once
 * more after the last piece. The longest piece is the top merge of the largest block
 * (O(m^2) for the secular equation plus an m x m x m product that returns zeros once the
 * flag is up where tenlane provides dgemm_), or sterf on one block (O(m^2)). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/fault.h"
#include "linalg_int.h"

/* The largest order solved by steqr directly (stedc's crossover, ilaenv's smlsiz). */
#define TL__TRIDIAG_LEAF 25

static double get(tl_dtype real, const char *p, int64_t i) {
  return real == TL_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static void put(tl_dtype real, char *p, int64_t i, double value) {
  if (real == TL_F32) {
    ((float *)p)[i] = (float)value;
  } else {
    ((double *)p)[i] = value;
  }
}

/* The order of the unreduced block that begins at `start`. */
static int64_t block_end(tl_dtype real, const char *d, const char *e, int64_t start, int64_t n) {
  double eps = real == TL_F32 ? (double)FLT_EPSILON * 0.5 : DBL_EPSILON * 0.5;
  int64_t end = start;
  while (end < n - 1) {
    double tiny = eps * sqrt(fabs(get(real, d, end))) * sqrt(fabs(get(real, d, end + 1)));
    if (!(fabs(get(real, e, end)) > tiny)) break;
    end++;
  }
  return end + 1;
}

/* The number of leaves divide and conquer makes of a block of order m: halved while the
 * largest part (the rounded-up half) exceeds TL__TRIDIAG_LEAF. */
static int64_t leaves_of(int64_t m) {
  int64_t leaves = 1;
  while (m > TL__TRIDIAG_LEAF) {
    m = (m + 1) / 2;
    leaves *= 2;
  }
  return leaves;
}

/* The pieces a block of order m costs: none for order 1, one (sterf, steqr) for a small
 * block or without vectors, leaves + merges for divide and conquer. */
static int64_t pieces_of(int64_t m, int vectors) {
  if (m <= 1) return 0;
  if (!vectors || m <= TL__TRIDIAG_LEAF) return 1;
  return 2 * leaves_of(m) - 1;
}

typedef struct progress {
  tl_exec *exec;
  const char *route;
  const char *how;
  int64_t done, total;
} progress;

/* The look at the flag before a piece (or after the last), then the pause point. */
static tl_status next_piece(progress *p) {
  if (tl__exec_cancelled(p->exec)) {
    return tl__fail(TL_E_CANCELLED,
                    "%s: cancelled while the tridiagonal solver ran (%s): %lld of %lld pieces "
                    "were not started (outputs unspecified)",
                    p->route, p->how, (long long)(p->total - p->done), (long long)p->total);
  }
  if (p->done < p->total) tl__pause(TL__PAUSE_TRIDIAG_PIECE);
  p->done++;
  return TL_OK;
}

/* Divide and conquer on the block of order m at (d, e, z) (z: the block's top-left corner,
 * zero outside the block's square on entry). part: leaves_of(m) entries, indxq: m, iwork:
 * 4m; work: 4m + m^2. */
static tl_status divide_and_conquer(progress *p, tl_dtype real, int64_t m, char *d, char *e,
                                    char *z, lapack_int ldz, char *work, lapack_int *part,
                                    lapack_int *indxq, lapack_int *iwork) {
  size_t rsize = tl_dtype_size(real);
  /* Scaled to norm 1 (the largest entry), as stedc scales each block. */
  double norm = 0.0;
  for (int64_t i = 0; i < m; i++) norm = fmax(norm, fabs(get(real, d, i)));
  for (int64_t i = 0; i + 1 < m; i++) norm = fmax(norm, fabs(get(real, e, i)));
  if (norm == 0.0) norm = 1.0;
  for (int64_t i = 0; i < m; i++) put(real, d, i, get(real, d, i) / norm);
  for (int64_t i = 0; i + 1 < m; i++) put(real, e, i, get(real, e, i) / norm);
  /* The parts: each level halves every part (rounded down left, up right). Leaves and m
   * are below 2^31 (n is), so the cumulative ends fit lapack_int. */
  int64_t count = 1;
  part[0] = (lapack_int)m;
  while (part[count - 1] > TL__TRIDIAG_LEAF) {
    for (int64_t j = count - 1; j >= 0; j--) {
      lapack_int whole = part[j];
      part[2 * j + 1] = (whole + 1) / 2;
      part[2 * j] = whole / 2;
    }
    count *= 2;
  }
  for (int64_t j = 1; j < count; j++) part[j] += part[j - 1];
  /* The tears: the torn entry e comes off the diagonal entries on both sides. */
  for (int64_t j = 0; j + 1 < count; j++) {
    int64_t at = part[j] - 1;
    double torn = fabs(get(real, e, at));
    put(real, d, at, get(real, d, at) - torn);
    put(real, d, at + 1, get(real, d, at + 1) - torn);
  }
  tl_status status;
  for (int64_t j = 0; j < count; j++) {
    int64_t start = j == 0 ? 0 : part[j - 1], size = part[j] - start;
    if ((status = next_piece(p)) != TL_OK) return status;
    char *corner = z + rsize * ((size_t)start + (size_t)start * (size_t)ldz);
    lapack_int info = tl__lapack_steqr(real, (lapack_int)size, d + (size_t)start * rsize,
                                       e + (size_t)start * rsize, corner, ldz, work);
    if (info != 0) return tl__la_provider_fail(p->route, "steqr", info);
    for (int64_t k = 0; k < size; k++) indxq[start + k] = (lapack_int)(k + 1);
  }
  /* The merges, bottom-up: parts 2i and 2i+1 become part i. */
  while (count > 1) {
    for (int64_t j = 0; j + 1 < count; j += 2) {
      int64_t start = j == 0 ? 0 : part[j - 1];
      int64_t size = part[j + 1] - start, cut = part[j] - start;
      if ((status = next_piece(p)) != TL_OK) return status;
      char *corner = z + rsize * ((size_t)start + (size_t)start * (size_t)ldz);
      lapack_int info = tl__lapack_laed1(real, (lapack_int)size, d + (size_t)start * rsize, corner,
                                         ldz, indxq + start, get(real, e, start + cut - 1),
                                         (lapack_int)cut, work, iwork);
      if (info != 0) return tl__la_provider_fail(p->route, "laed1", info);
      part[j / 2] = part[j + 1];
    }
    count /= 2;
  }
  /* indxq sorts the merged eigenvalues: d and the columns gathered in that order through
   * work (m values, then m columns of m), copied back, and the scaling undone. */
  char *columns = work + (size_t)m * rsize;
  for (int64_t i = 0; i < m; i++) {
    int64_t from = indxq[i] - 1;
    memcpy(work + (size_t)i * rsize, d + (size_t)from * rsize, rsize);
    memcpy(columns + (size_t)i * (size_t)m * rsize, z + (size_t)from * (size_t)ldz * rsize,
           (size_t)m * rsize);
  }
  for (int64_t i = 0; i < m; i++) {
    put(real, d, i, get(real, work, i) * norm);
    memcpy(z + (size_t)i * (size_t)ldz * rsize, columns + (size_t)i * (size_t)m * rsize,
           (size_t)m * rsize);
  }
  return TL_OK;
}

static int ascending_f64(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int ascending_f32(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

tl_status tl__tridiag_solve(tl_exec *exec, const char *route, tl_dtype real, int64_t n, char *d,
                            char *e, char *z, lapack_int ldz, char *work, lapack_int *iwork) {
  size_t rsize = tl_dtype_size(real);
  int vectors = z != NULL;
  progress p = {exec, route,
                vectors ? "divide and conquer: blocks, leaves and merges" : "sterf on each block",
                0, 0};
  for (int64_t start = 0; start < n;) {
    int64_t end = block_end(real, d, e, start, n);
    p.total += pieces_of(end - start, vectors);
    start = end;
  }
  if (vectors) { /* the identity, as stedc starts (a block of order 1 keeps its column) */
    for (int64_t j = 0; j < n; j++) {
      char *column = z + (size_t)j * (size_t)ldz * rsize;
      memset(column, 0, (size_t)n * rsize);
      put(real, column, j, 1.0);
    }
  }
  tl_status status;
  for (int64_t start = 0; start < n;) {
    /* The same cut as counted above: d and e of later blocks are untouched so far. */
    int64_t end = block_end(real, d, e, start, n), m = end - start;
    char *db = d + (size_t)start * rsize, *eb = e + (size_t)start * rsize;
    char *zb = vectors ? z + rsize * ((size_t)start + (size_t)start * (size_t)ldz) : NULL;
    lapack_int info = 0;
    if (m > 1 && !vectors) {
      if ((status = next_piece(&p)) != TL_OK) return status;
      info = tl__lapack_sterf(real, (lapack_int)m, db, eb);
      if (info != 0) return tl__la_provider_fail(route, "sterf", info);
    } else if (m > 1 && m <= TL__TRIDIAG_LEAF) {
      if ((status = next_piece(&p)) != TL_OK) return status;
      info = tl__lapack_steqr(real, (lapack_int)m, db, eb, zb, ldz, work);
      if (info != 0) return tl__la_provider_fail(route, "steqr", info);
    } else if (m > 1) {
      lapack_int *part = iwork, *indxq = iwork + leaves_of(m), *merge = indxq + m;
      status = divide_and_conquer(&p, real, m, db, eb, zb, ldz, work, part, indxq, merge);
      if (status != TL_OK) return status;
    }
    start = end;
  }
  if ((status = next_piece(&p)) != TL_OK) return status;
  if (!vectors) {
    qsort(d, (size_t)n, rsize, real == TL_F32 ? ascending_f32 : ascending_f64);
    return TL_OK;
  }
  /* Blocks solved apart: eigenvalues ascending across them, the columns following (a
   * selection sort, as stedc's, at most n - 1 swaps; nothing moves for a single block). */
  for (int64_t i = 0; i + 1 < n; i++) {
    int64_t low = i;
    for (int64_t j = i + 1; j < n; j++) {
      if (get(real, d, j) < get(real, d, low)) low = j;
    }
    if (low == i) continue;
    double t = get(real, d, i);
    put(real, d, i, get(real, d, low));
    put(real, d, low, t);
    char *a = z + (size_t)i * (size_t)ldz * rsize, *b = z + (size_t)low * (size_t)ldz * rsize;
    for (size_t q = 0; q < (size_t)n * rsize; q++) {
      char c = a[q];
      a[q] = b[q];
      b[q] = c;
    }
  }
  return TL_OK;
}
