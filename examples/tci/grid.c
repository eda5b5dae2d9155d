/* examples/tci/grid.c: the quantics grid. A variable's grid index i (R bits) is split into
 * its bits, most significant first; the sites of the tensor train carry those bits, either
 * one bit of one variable per site (interleaved: bit b of variable v at site b*dims + v) or
 * the bit b of every variable on one site (fused: site b, value sum_v bit_v << v). */
#include <math.h>
#include <stdio.h>

#include "tci.h"

int tci_grid_init(tci_grid *grid, int dims, int bits, tci_layout layout, const double *lo,
                  const double *hi, char *why) {
  if (dims < 1 || dims > TCI_MAX_DIMS) {
    snprintf(why, TCI_WHY, "the grid takes 1..%d variables, not %d", TCI_MAX_DIMS, dims);
    return TCI_E_ARG;
  }
  if (bits < 1 || bits > TCI_MAX_BITS) {
    snprintf(why, TCI_WHY, "the grid takes 1..%d bits per variable, not %d", TCI_MAX_BITS, bits);
    return TCI_E_ARG;
  }
  if (layout != TCI_INTERLEAVED && layout != TCI_FUSED) {
    snprintf(why, TCI_WHY, "unknown grid layout %d", (int)layout);
    return TCI_E_ARG;
  }
  for (int v = 0; v < dims; v++) {
    if (!isfinite(lo[v]) || !isfinite(hi[v]) || !(hi[v] > lo[v])) {
      snprintf(why, TCI_WHY, "variable %d: the box [%g, %g) is not a finite interval", v, lo[v],
               hi[v]);
      return TCI_E_ARG;
    }
    grid->lo[v] = lo[v];
    grid->hi[v] = hi[v];
  }
  grid->dims = dims;
  grid->bits = bits;
  grid->layout = layout;
  grid->sites = layout == TCI_FUSED ? bits : bits * dims;
  grid->local_dim = layout == TCI_FUSED ? 1 << dims : 2;
  return TCI_OK;
}

void tci_grid_point(const tci_grid *grid, const uint8_t *sites, uint64_t *index, double *x) {
  int d = grid->dims, r = grid->bits;
  for (int v = 0; v < d; v++) index[v] = 0;
  for (int b = 0; b < r; b++) {
    for (int v = 0; v < d; v++) {
      unsigned bit = grid->layout == TCI_FUSED ? (sites[b] >> v) & 1u : sites[b * d + v] & 1u;
      index[v] = (index[v] << 1) | bit;
    }
  }
  if (x) tci_grid_coords(grid, index, x);
}

void tci_grid_coords(const tci_grid *grid, const uint64_t *index, double *x) {
  double points = ldexp(1.0, grid->bits);
  for (int v = 0; v < grid->dims; v++)
    x[v] = grid->lo[v] + (grid->hi[v] - grid->lo[v]) * ((double)index[v] / points);
}

void tci_grid_sites(const tci_grid *grid, const uint64_t *index, uint8_t *sites) {
  int d = grid->dims, r = grid->bits;
  for (int b = 0; b < r; b++) {
    int shift = r - 1 - b;
    if (grid->layout == TCI_FUSED) {
      unsigned value = 0;
      for (int v = 0; v < d; v++) value |= (unsigned)((index[v] >> shift) & 1u) << v;
      sites[b] = (uint8_t)value;
    } else {
      for (int v = 0; v < d; v++) sites[b * d + v] = (uint8_t)((index[v] >> shift) & 1u);
    }
  }
}

double tci_grid_cell(const tci_grid *grid) {
  double cell = 1.0;
  for (int v = 0; v < grid->dims; v++) cell *= ldexp(grid->hi[v] - grid->lo[v], -grid->bits);
  return cell;
}
