/* examples/tci/io.c: save and load a patched tensor train (the format is in docs/tci.md):
 * little-endian, an 8-byte magic, int64 header fields, float64 box, then per piece its
 * prefix, ranks and cores. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tci.h"

static const char magic[8] = {'T', 'L', 'T', 'C', 'I', '0', '0', '1'};

static int little_endian(void) {
  const uint16_t one = 1;
  return *(const unsigned char *)&one == 1;
}

static int put_i64(FILE *f, int64_t v) { return fwrite(&v, sizeof v, 1, f) == 1 ? 0 : -1; }
static int put_f64(FILE *f, const double *v, size_t n) {
  return fwrite(v, sizeof *v, n, f) == n ? 0 : -1;
}

int tci_save(const tci_train *train, const char *path, char *why) {
  if (!little_endian()) {
    snprintf(why, TCI_WHY, "the tci format is little-endian; this machine is not");
    return TCI_E_IO;
  }
  FILE *f = fopen(path, "wb");
  if (!f) {
    snprintf(why, TCI_WHY, "cannot write '%s'", path);
    return TCI_E_IO;
  }
  const tci_grid *g = &train->grid;
  int bad = fwrite(magic, 1, 8, f) != 8;
  int64_t head[6] = {g->dims, g->bits, g->layout, g->sites, g->local_dim, (int64_t)train->count};
  for (int i = 0; i < 6; i++) bad |= put_i64(f, head[i]);
  bad |= put_f64(f, g->lo, (size_t)g->dims);
  bad |= put_f64(f, g->hi, (size_t)g->dims);
  for (size_t i = 0; i < train->count && !bad; i++) {
    const tci_piece *p = train->pieces[i];
    bad |= put_i64(f, p->patch.prefix_len);
    for (int k = 0; k < p->patch.prefix_len; k++) bad |= put_i64(f, p->patch.prefix[k]);
    bad |= put_i64(f, p->n);
    for (int k = 0; k <= p->n; k++) bad |= put_i64(f, p->rank[k]);
    for (int k = 0; k < p->n; k++)
      bad |= put_f64(f, p->core[k],
                     (size_t)p->rank[k] * (size_t)g->local_dim * (size_t)p->rank[k + 1]);
  }
  bad |= fclose(f) != 0;
  if (bad) {
    snprintf(why, TCI_WHY, "writing '%s' failed", path);
    return TCI_E_IO;
  }
  return TCI_OK;
}

static int get_i64(FILE *f, int64_t *v, int64_t lo, int64_t hi) {
  return fread(v, sizeof *v, 1, f) == 1 && *v >= lo && *v <= hi ? 0 : -1;
}

static int load_piece(FILE *f, const tci_grid *g, tci_piece **out) {
  int64_t plen, n, v;
  if (get_i64(f, &plen, 0, g->sites - 1)) return -1;
  tci_patch patch;
  patch.prefix_len = (int)plen;
  for (int k = 0; k < plen; k++) {
    if (get_i64(f, &v, 0, g->local_dim - 1)) return -1;
    patch.prefix[k] = (uint8_t)v;
  }
  if (get_i64(f, &n, 1, g->sites) || plen + n != g->sites) return -1;
  int rank[TCI_MAX_SITES + 1];
  size_t values = 0;
  for (int k = 0; k <= n; k++) {
    if (get_i64(f, &v, 1, 1024)) return -1;
    rank[k] = (int)v;
  }
  if (rank[0] != 1 || rank[n] != 1) return -1;
  for (int k = 0; k < n; k++)
    values += (size_t)rank[k] * (size_t)g->local_dim * (size_t)rank[k + 1];
  size_t head = sizeof(tci_piece) + sizeof(int) * (size_t)(n + 1) + sizeof(double *) * (size_t)n;
  head = (head + 63) & ~(size_t)63;
  unsigned char *block = calloc(1, head + sizeof(double) * values);
  if (!block) return -1;
  tci_piece *p = (tci_piece *)(void *)block;
  p->patch = patch;
  p->n = (int)n;
  /* the core pointers first (8-byte aligned after the header), then the ranks */
  p->core = (double **)(void *)(block + sizeof(tci_piece));
  p->rank = (int *)(void *)(block + sizeof(tci_piece) + sizeof(double *) * (size_t)n);
  memcpy(p->rank, rank, sizeof(int) * (size_t)(n + 1));
  double *at = (double *)(void *)(block + head);
  for (int k = 0; k < n; k++) {
    p->core[k] = at;
    at += (size_t)rank[k] * (size_t)g->local_dim * (size_t)rank[k + 1];
    if (rank[k] > p->max_rank) p->max_rank = rank[k];
  }
  p->converged = 1;
  if (fread(p->core[0], sizeof(double), values, f) != values) {
    free(block);
    return -1;
  }
  *out = p;
  return 0;
}

int tci_load(const char *path, tci_train *out, char *why) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(why, TCI_WHY, "cannot read '%s'", path);
    return TCI_E_IO;
  }
  char m[8];
  int64_t head[6];
  int bad = fread(m, 1, 8, f) != 8 || memcmp(m, magic, 8) != 0;
  for (int i = 0; i < 6 && !bad; i++) bad = fread(&head[i], 8, 1, f) != 1;
  double lo[TCI_MAX_DIMS], hi[TCI_MAX_DIMS];
  if (!bad) bad = head[0] < 1 || head[0] > TCI_MAX_DIMS || head[5] < 1 || head[5] > (1 << 26);
  if (!bad) bad = fread(lo, 8, (size_t)head[0], f) != (size_t)head[0];
  if (!bad) bad = fread(hi, 8, (size_t)head[0], f) != (size_t)head[0];
  char inner[TCI_WHY];
  if (!bad)
    bad = tci_grid_init(&out->grid, (int)head[0], (int)head[1], (tci_layout)head[2], lo, hi,
                        inner) != TCI_OK ||
          out->grid.sites != head[3] || out->grid.local_dim != head[4];
  if (!bad) {
    out->pieces = calloc((size_t)head[5], sizeof *out->pieces);
    bad = out->pieces == NULL;
  }
  for (int64_t i = 0; i < head[5] && !bad; i++) {
    bad = load_piece(f, &out->grid, &out->pieces[i]);
    if (!bad) out->count++;
  }
  fclose(f);
  if (bad) {
    snprintf(why, TCI_WHY, "'%s' is not a readable tci file (%zu pieces read)", path, out->count);
    tci_train_free(out);
    return TCI_E_IO;
  }
  return TCI_OK;
}
