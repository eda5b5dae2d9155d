/* examples/tci/train.c: the patched tensor train: pieces sorted by prefix (a prefix-free
 * cover of the grid's sites), evaluation by finding the piece and contracting its cores,
 * the integral, and the bitwise comparison of two trains. */
#include <stdlib.h>
#include <string.h>

#include "tci_internal.h"

#define TRAIN_MAX_RANK 1024

void tci_train_free(tci_train *train) {
  if (!train) return;
  for (size_t i = 0; i < train->count; i++) tci_piece_free(train->pieces[i]);
  free(train->pieces);
  train->pieces = NULL;
  train->count = 0;
}

static int prefix_cmp(const tci_patch *a, const tci_patch *b) {
  int n = a->prefix_len < b->prefix_len ? a->prefix_len : b->prefix_len;
  int c = memcmp(a->prefix, b->prefix, (size_t)n);
  if (c) return c;
  return (a->prefix_len > b->prefix_len) - (a->prefix_len < b->prefix_len);
}

static int piece_cmp(const void *a, const void *b) {
  const tci_piece *const *pa = a, *const *pb = b;
  return prefix_cmp(&(*pa)->patch, &(*pb)->patch);
}

void tci_train_sort(tci_train *train) {
  if (train->count > 1) qsort(train->pieces, train->count, sizeof *train->pieces, piece_cmp);
}

static const tci_piece *find_piece(const tci_train *train, const uint8_t *sites) {
  size_t lo = 0, hi = train->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const tci_piece *p = train->pieces[mid];
    int c = memcmp(p->patch.prefix, sites, (size_t)p->patch.prefix_len);
    if (c == 0) return p;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

double tci_train_eval_sites(const tci_train *train, const uint8_t *sites) {
  const tci_piece *p = find_piece(train, sites);
  if (!p) return 0.0;
  return tci_piece_eval(p, train->grid.local_dim, sites + p->patch.prefix_len);
}

double tci_piece_eval(const tci_piece *p, int dim, const uint8_t *local) {
  double v[TRAIN_MAX_RANK], w[TRAIN_MAX_RANK];
  int r0 = 1;
  v[0] = 1.0;
  for (int k = 0; k < p->n; k++) {
    int r1 = p->rank[k + 1], s = local[k];
    const double *core = p->core[k];
    for (int b = 0; b < r1; b++) w[b] = 0.0;
    for (int a = 0; a < r0; a++) {
      const double *row = core + ((size_t)a * (size_t)dim + (size_t)s) * (size_t)r1;
      for (int b = 0; b < r1; b++) w[b] += v[a] * row[b];
    }
    memcpy(v, w, sizeof(double) * (size_t)r1);
    r0 = r1;
  }
  return v[0];
}

double tci_train_eval(const tci_train *train, const uint64_t *index) {
  uint8_t sites[TCI_MAX_SITES];
  tci_grid_sites(&train->grid, index, sites);
  return tci_train_eval_sites(train, sites);
}

static double piece_sum(const tci_piece *p, int dim) {
  double v[TRAIN_MAX_RANK], w[TRAIN_MAX_RANK];
  int r0 = 1;
  v[0] = 1.0;
  for (int k = 0; k < p->n; k++) {
    int r1 = p->rank[k + 1];
    for (int b = 0; b < r1; b++) w[b] = 0.0;
    for (int a = 0; a < r0; a++)
      for (int s = 0; s < dim; s++) {
        const double *row = p->core[k] + ((size_t)a * (size_t)dim + (size_t)s) * (size_t)r1;
        for (int b = 0; b < r1; b++) w[b] += v[a] * row[b];
      }
    memcpy(v, w, sizeof(double) * (size_t)r1);
    r0 = r1;
  }
  return v[0];
}

double tci_train_integral(const tci_train *train) {
  double sum = 0.0;
  for (size_t i = 0; i < train->count; i++)
    sum += piece_sum(train->pieces[i], train->grid.local_dim);
  return sum * tci_grid_cell(&train->grid);
}

int tci_train_identical(const tci_train *a, const tci_train *b) {
  if (a->count != b->count || a->grid.sites != b->grid.sites ||
      a->grid.local_dim != b->grid.local_dim)
    return 0;
  int dim = a->grid.local_dim;
  for (size_t i = 0; i < a->count; i++) {
    const tci_piece *p = a->pieces[i], *q = b->pieces[i];
    if (prefix_cmp(&p->patch, &q->patch) || p->n != q->n) return 0;
    if (memcmp(p->rank, q->rank, sizeof(int) * (size_t)(p->n + 1))) return 0;
    for (int k = 0; k < p->n; k++) {
      size_t values = (size_t)p->rank[k] * (size_t)dim * (size_t)p->rank[k + 1];
      if (memcmp(p->core[k], q->core[k], sizeof(double) * values)) return 0;
    }
  }
  return 1;
}

int tci_train_max_rank(const tci_train *train) {
  int top = 0;
  for (size_t i = 0; i < train->count; i++) {
    const tci_piece *p = train->pieces[i];
    for (int k = 0; k <= p->n; k++)
      if (p->rank[k] > top) top = p->rank[k];
  }
  return top;
}
