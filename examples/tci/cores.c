/* examples/tci/cores.c: the tensor train of a patch from its pivots. Core k is
 * T_k P_{k+1}^{-1}: T_k = f(left[k] x site k x right[k+1]) and P_{k+1} = f(left[k+1] x
 * right[k+1]) the pivot matrix of bond k+1; the last core is T_{n-1}. The solve X P = T runs
 * as P^T X^T = T^T through tenlane's tl_solve_into on the lane's surface (LU with partial
 * pivoting; its temporaries come from the surface's arena), on transposed views of the
 * workspace's row-major buffers, writing straight into the kept core. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenlane/linalg.h"
#include "tci_internal.h"

static uint8_t *left_at(tci_workspace *ws, int b) {
  return ws->left + (size_t)b * (size_t)ws->chi * (size_t)ws->sites;
}
static uint8_t *right_at(tci_workspace *ws, int b) {
  return ws->right + (size_t)b * (size_t)ws->chi * (size_t)ws->sites;
}

/* The bytes of a piece with ranks `rank` (one block: header, ranks, core pointers, values). */
static size_t piece_bytes(const int *rank, int n, int dim, size_t *head_out) {
  size_t values = 0;
  for (int k = 0; k < n; k++) values += (size_t)rank[k] * (size_t)dim * (size_t)rank[k + 1];
  size_t head = sizeof(tci_piece) + sizeof(int) * (size_t)(n + 1) + sizeof(double *) * (size_t)n;
  head = (head + 63) & ~(size_t)63;
  *head_out = head;
  return head + sizeof(double) * values;
}

/* Lay a piece out in `block` (piece_bytes of it), ranks copied, values uninitialised. */
static tci_piece *piece_place(unsigned char *block, const int *rank, int n, int dim) {
  size_t head;
  piece_bytes(rank, n, dim, &head);
  tci_piece *piece = (tci_piece *)(void *)block;
  memset(piece, 0, sizeof *piece);
  /* the core pointers first (8-byte aligned after the header), then the ranks */
  piece->core = (double **)(void *)(block + sizeof(tci_piece));
  piece->rank = (int *)(void *)(block + sizeof(tci_piece) + sizeof(double *) * (size_t)n);
  double *at = (double *)(void *)(block + head);
  for (int k = 0; k < n; k++) {
    piece->core[k] = at;
    at += (size_t)rank[k] * (size_t)dim * (size_t)rank[k + 1];
  }
  memcpy(piece->rank, rank, sizeof(int) * (size_t)(n + 1));
  piece->n = n;
  return piece;
}

tci_piece *tci_piece_keep(const tci_piece *draft, int dim) {
  size_t head, bytes = piece_bytes(draft->rank, draft->n, dim, &head);
  unsigned char *block = malloc(bytes);
  if (!block) return NULL;
  tci_piece *piece = piece_place(block, draft->rank, draft->n, dim);
  tci_piece keep = *piece;
  *piece = *draft;
  piece->rank = keep.rank;
  piece->core = keep.core;
  memcpy(block + head, (const unsigned char *)draft->core[0], bytes - head);
  return piece;
}

void tci_workspace_release(tci_workspace *ws) {
  if (!ws) return;
  free(ws->draft);
  ws->draft = NULL;
  ws->draft_cap = 0;
}

static int all_zero(const double *v, size_t count) {
  for (size_t i = 0; i < count; i++)
    if (v[i] != 0.0) return 0;
  return 1;
}

void tci_piece_free(tci_piece *piece) { free(piece); }

/* core = t p^{-1}, t (m x r) and core row-major, p (r x r) row-major. */
static int solve_right(tl_exec *exec, const double *t, const double *p, double *core, int m, int r,
                       char *why) {
  tl_tensor a, b, x;
  int64_t ashape[2] = {r, r}, astrides[2] = {1, r};
  int64_t bshape[2] = {r, m}, bstrides[2] = {1, r};
  tl_status st = tl_tensor_wrap(TL_F64, 2, ashape, astrides, (void *)p, 0, &a);
  if (st == TL_OK) st = tl_tensor_wrap(TL_F64, 2, bshape, bstrides, (void *)t, 0, &b);
  if (st == TL_OK) st = tl_tensor_wrap(TL_F64, 2, bshape, bstrides, core, 0, &x);
  if (st == TL_OK) st = tl_solve_into(exec, &a, &b, &x);
  if (st != TL_OK) {
    snprintf(why, TCI_WHY, "tl_solve_into on a %d x %d pivot matrix failed: %s", r, r,
             tl_exec_message(exec));
    return st == TL_E_CANCELLED ? TCI_E_CANCELLED : TCI_E_TENLANE;
  }
  return TCI_OK;
}

int tci_build_piece(tl_exec *exec, tci_workspace *ws, const tci_problem *pb, const tci_patch *patch,
                    tci_piece **out, char *why) {
  int n = ws->sites - patch->prefix_len, dim = ws->dim;
  ws->rank[0] = 1;
  ws->rank[n] = 1;
  size_t head, bytes = piece_bytes(ws->rank, n, dim, &head);
  if (bytes > ws->draft_cap) { /* the lane's draft grows geometrically, then stays */
    size_t cap = bytes > 2 * ws->draft_cap ? bytes : 2 * ws->draft_cap;
    free(ws->draft);
    ws->draft = malloc(cap);
    ws->draft_cap = ws->draft ? cap : 0;
    if (!ws->draft) {
      snprintf(why, TCI_WHY, "no memory for a patch's tensor train (%zu bytes)", cap);
      return TCI_E_NOMEM;
    }
  }
  tci_piece *piece = piece_place(ws->draft, ws->rank, n, dim);
  memset(ws->draft + head, 0, bytes - head);
  piece->patch = *patch;
  for (int k = 0; k < n; k++) {
    int r0 = ws->rank[k], r1 = ws->rank[k + 1], rlen = n - k - 1;
    int rc = tci_eval_cross(ws, pb, patch, left_at(ws, k), r0, k, 1, right_at(ws, k + 1), r1, rlen,
                            ws->t, why);
    if (rc == TCI_OK && k == n - 1)
      memcpy(piece->core[k], ws->t, sizeof(double) * (size_t)(r0 * dim * r1));
    if (rc == TCI_OK && k < n - 1)
      rc = tci_eval_cross(ws, pb, patch, left_at(ws, k + 1), r1, k + 1, 0, right_at(ws, k + 1), r1,
                          rlen, ws->p, why);
    /* A pivot matrix that is all zero (f vanished on the whole two-site matrix the pivot came
     * from) keeps a zero core: the interpolant is zero there. */
    if (rc == TCI_OK && k < n - 1 && !all_zero(ws->p, (size_t)r1 * (size_t)r1))
      rc = solve_right(exec, ws->t, ws->p, piece->core[k], r0 * dim, r1, why);
    if (rc) return rc;
  }
  *out = piece;
  return TCI_OK;
}
