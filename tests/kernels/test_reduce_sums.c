/* tests/kernels/test_reduce_sums.c: the reduce core's unit-stride sums (reduce_sums.c)
 * give the same bits at every instruction-set level this CPU has, with no, a running and a
 * run-bounded software prefetch, for doubles and floats,
 * real and as complex pairs, over every length from 0 to 80 (each tail of the sixteen
 * accumulators, once and twice over) and a few long ones, with values of mixed magnitude
 * and sign, values that cancel (+-1e16 among small ones: any change of order shows in the
 * bits) and a NaN, starting at each of the sixteen element positions in a 64-byte line
 * (the AVX-512 double sums read whole lines and keep their accumulators rotated by that
 * position; the float sums' blocks of 256 end at other places in a line); and each total
 * of the first kind is the plain sum within rounding (in float's rounding for floats,
 * which are summed in float sixteen to an accumulator). Runs not
 * on element boundaries (which C callers may pass; Python refuses them) take the AVX-512
 * paths' unaligned loads and give the bits of an aligned copy. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/isa.h"
#include "kernels/reduce_core.h"
#include "th_numeric.h"
#include "th_test.h"

#define LEN_MAX 4099
#define STARTS 16 /* element positions in a 64-byte line (f32; f64 has 8) */
static _Alignas(64) double xd_line[LEN_MAX + STARTS];
static _Alignas(64) float xf_line[LEN_MAX + STARTS];
static double *xd = xd_line;
static float *xf = xf_line;

static int same(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static void fill(uint64_t *state, int64_t n, int kind) {
  for (int64_t i = 0; i < n; i++) {
    double v = (th_num_uniform(state) - 0.5) * pow(10.0, (double)(i % 7) - 3.0);
    if (kind == 1) v = i % 3 == 0 ? (i % 2 ? -1e16 : 1e16) : v;
    if (kind == 2 && i == n / 2) v = NAN;
    xd[i] = v;
    xf[i] = (float)v;
  }
}

static void reduce_sums_same_bits_at_every_isa(void) {
  const int top = tl__isa_cpu_level();
  uint64_t state = 41;
  int bad = 0, compared = 0;
  static const int64_t longs[] = {255, 256, 257, 1024, 1031, LEN_MAX};
  for (int64_t c = 0; c < 81 + (int64_t)(sizeof longs / sizeof longs[0]); c++) {
    const int64_t n = c <= 80 ? c : longs[c - 81];
    for (int start = 0; start < STARTS; start++) {
      xd = xd_line + start;
      xf = xf_line + start;
      /* the lanes before and after the run are poison: a sum that reads them shows it */
      for (int k = 0; k < LEN_MAX + STARTS; k++) xd_line[k] = 1e300, xf_line[k] = 1e30f;
      for (int kind = 0; kind < 3; kind++) {
        fill(&state, n, kind);
        for (int pairs = 0; pairs < 2; pairs++) {
          for (int f32 = 0; f32 < 2; f32++) {
            double re0 = 0, im0 = 0;
            for (int level = 3 * TL__ISA_PORTABLE; level <= 3 * top + 2; level++) {
              const int isa = level / 3, prefetch = level % 3; /* each level, all three ways */
              double re, im;
              if (f32)
                tl__sum16_f32(isa, prefetch, xf, n, pairs, &re, &im);
              else
                tl__sum16_f64(isa, prefetch, xd, n, pairs, &re, &im);
              if (level == 3 * TL__ISA_PORTABLE) {
                re0 = re, im0 = im;
                /* the plain sum, within rounding (finite data) */
                double want_re = 0, want_im = 0, mag = 0;
                for (int64_t i = 0; i < n; i++) {
                  double v = f32 ? (double)xf[i] : xd[i];
                  if (pairs && i % 2)
                    want_im += v;
                  else
                    want_re += v;
                  mag += fabs(v);
                }
                /* floats are summed in float sixteen at a time (reduce_sums.c) */
                const double tol = f32 ? 2e-6 : 1e-13;
                if (kind == 0 && (fabs(re - want_re) > tol * (mag + 1) ||
                                  fabs(im - want_im) > tol * (mag + 1))) {
                  fprintf(stderr, "  n %lld pairs %d f32 %d: total %g%+gi, plain %g%+gi\n",
                          (long long)n, pairs, f32, re, im, want_re, want_im);
                  bad++;
                }
                continue;
              }
              compared++;
              if (!same(re, re0) || !same(im, im0)) {
                fprintf(stderr,
                        "  n %lld pairs %d f32 %d kind %d: %s (prefetch %d) gives %.17g%+.17gi, "
                        "portable %.17g%+.17gi\n",
                        (long long)n, pairs, f32, kind, tl__isa_name(isa), prefetch, re, im, re0,
                        im0);
                bad++;
              }
            }
          }
        }
      }
    }
  }
  TH_CHECK(bad == 0);
  if (top > TL__ISA_PORTABLE) TH_CHECK(compared > 0);
}

/* A run whose start is not a multiple of its element size, at the top level against the
 * portable sum of an aligned copy. */
static void reduce_sums_off_element_boundaries(void) {
  const int top = tl__isa_cpu_level();
  if (top == TL__ISA_PORTABLE) th_test_skip("no vector level on this CPU");
  static _Alignas(64) unsigned char bytes[(LEN_MAX + 2) * sizeof(double)];
  uint64_t state = 7;
  int bad = 0;
  static const int64_t lengths[] = {0, 1, 7, 15, 16, 17, 33, 100, 1031};
  for (size_t c = 0; c < sizeof lengths / sizeof lengths[0]; c++) {
    const int64_t n = lengths[c];
    xd = xd_line;
    xf = xf_line;
    fill(&state, n, 0);
    for (int pairs = 0; pairs < 2; pairs++) {
      double want_re, want_im, re, im;
      memcpy(bytes + 4, xd, (size_t)n * sizeof(double));
      tl__sum16_f64(TL__ISA_PORTABLE, 0, xd, n, pairs, &want_re, &want_im);
      tl__sum16_f64(top, 1, (const double *)(const void *)(bytes + 4), n, pairs, &re, &im);
      bad += !same(re, want_re) || !same(im, want_im);
      memcpy(bytes + 2, xf, (size_t)n * sizeof(float));
      tl__sum16_f32(TL__ISA_PORTABLE, 0, xf, n, pairs, &want_re, &want_im);
      tl__sum16_f32(top, 1, (const float *)(const void *)(bytes + 2), n, pairs, &re, &im);
      bad += !same(re, want_re) || !same(im, want_im);
    }
  }
  TH_CHECK(bad == 0);
}

/* Four runs side by side (tl__sum16_f32_rows4, tl__sum16_f64_rows4) give each run's own
 * bits from tl__sum16_f32 / _f64, at every level, with and without the prefetch: lengths
 * around the 16-element groups and the 256-element blocks, rows ld apart (ld past n, so a
 * row that read its neighbour's lanes would show it, and rows that start off a line),
 * data that cancels, and a NaN in one row only. */
static void reduce_sums_four_rows_match_one_row_each(void) {
  const int top = tl__isa_cpu_level();
  static const int64_t lengths[] = {0, 1, 15, 16, 17, 33, 60, 255, 256, 257, 272, 300, 513, 1031};
  static float rows[4 * 1100];
  static double rowsd[4 * 1100];
  uint64_t state = 19;
  int bad = 0, compared = 0;
  for (size_t c = 0; c < sizeof lengths / sizeof lengths[0]; c++) {
    const int64_t n = lengths[c], ld = n + 9;
    for (int kind = 0; kind < 3; kind++) {
      for (int64_t k = 0; k < 4 * ld; k++) rows[k] = 1e30f, rowsd[k] = 1e300; /* gaps: poison */
      for (int r = 0; r < 4; r++) {
        xf = xf_line;
        xd = xd_line;
        fill(&state, n, kind == 2 && r != 2 ? 0 : kind); /* kind 2: a NaN in row 2 only */
        memcpy(rows + r * ld, xf, (size_t)n * sizeof(float));
        memcpy(rowsd + r * ld, xd, (size_t)n * sizeof(double));
      }
      for (int isa = TL__ISA_PORTABLE; isa <= top; isa++)
        for (int ahead = 0; ahead < 2; ahead++) /* with and without the prefetch */
          for (int f64 = 0; f64 < 2; f64++)
            for (int pairs = 0; pairs < 2; pairs++) { /* complex runs: an even count of reals */
              const int64_t len = pairs ? n - n % 2 : n;
              double four[8];
              if (f64)
                tl__sum16_f64_rows4(isa, ahead, rowsd, len, ld, pairs, four);
              else
                tl__sum16_f32_rows4(isa, ahead, rows, len, ld, pairs, four);
              for (int r = 0; r < 4; r++) {
                double one, im;
                if (f64)
                  tl__sum16_f64(isa, 0, rowsd + r * ld, len, pairs, &one, &im);
                else
                  tl__sum16_f32(isa, 0, rows + r * ld, len, pairs, &one, &im);
                compared++;
                const double got_re = four[pairs ? 2 * r : r], got_im = pairs ? four[2 * r + 1] : 0;
                if (!same(got_re, one) || !same(got_im, im)) {
                  fprintf(stderr,
                          "  %s n %lld pairs %d kind %d row %d at %s, prefetch %d: four rows "
                          "give %.17g%+.17gi, one %.17g%+.17gi\n",
                          f64 ? "f64" : "f32", (long long)len, pairs, kind, r, tl__isa_name(isa),
                          ahead, got_re, got_im, one, im);
                  bad++;
                }
              }
            }
    }
  }
  TH_CHECK(bad == 0);
  TH_CHECK(compared > 0);
}

/* acc[i] += x[i] (tl__add_run_f64 / _f32) is one double addition per element at every
 * level: every length from 0 to 40 and a few long ones, against the plain loop, with the
 * elements past n untouched. */
static void reduce_sums_add_runs_match_plain_additions(void) {
  const int top = tl__isa_cpu_level();
  static double acc[1100 + 8], want[1100 + 8];
  uint64_t state = 23;
  int bad = 0;
  static const int64_t longs[] = {255, 256, 1031};
  for (int64_t c = 0; c < 41 + 3; c++) {
    const int64_t n = c <= 40 ? c : longs[c - 41];
    xd = xd_line;
    xf = xf_line;
    fill(&state, n, 1);
    for (int f32 = 0; f32 < 2; f32++)
      for (int isa = TL__ISA_PORTABLE; isa <= top; isa++) {
        for (int64_t i = 0; i < n + 8; i++) acc[i] = want[i] = 0.25 * (double)(i % 5) - 1e16;
        for (int64_t i = 0; i < n; i++) want[i] += f32 ? (double)xf[i] : xd[i];
        if (f32)
          tl__add_run_f32(isa, xf, n, acc);
        else
          tl__add_run_f64(isa, xd, n, acc);
        for (int64_t i = 0; i < n + 8; i++)
          if (!same(acc[i], want[i])) {
            fprintf(stderr, "  n %lld f32 %d at %s: element %lld is %.17g, want %.17g\n",
                    (long long)n, f32, tl__isa_name(isa), (long long)i, acc[i], want[i]);
            bad++;
            break;
          }
      }
  }
  TH_CHECK(bad == 0);
}

/* tl__short_sums_*: each run's total is, bit for bit at every level, the in-order double sum
 * (doubles) or the in-order double sum of in-order float sums of blocks of sixteen elements
 * (floats): run lengths 0 to 33 (1 to 45 runs: whole groups of eight and sixteen, and
 * remainders) and 48 to 128 (1 to 13 runs), real elements or complex pairs (each part summed
 * alone), runs forward and backward (a negative ld), in one call or in two whose first prefetches
 * into the second's runs (`ahead`), with cancelling magnitudes and a NaN, and nothing written past
 * the runs' totals. */
static void reduce_sums_short_runs_add_in_order(void) {
  const int top = tl__isa_cpu_level();
  uint64_t state = 29;
  int bad = 0;
  static double out[100];
  static const int64_t longer[] = {48, 64, 100, 128};
  for (int64_t which = 0; which <= 33 + 4 && !bad; which++)
    for (int64_t rows = 1; rows <= (which <= 33 ? 45 : 13) && !bad; rows += 4)
      for (int step = 1; step <= 2 && !bad; step++)
        for (int back = 0; back < 2 && !bad; back++) {
          const int64_t n = which <= 33 ? which : longer[which - 34];
          const int pairs = step == 2;
          const int64_t ld = (back ? -1 : 1) * (n * step + 3);
          const int64_t first = back ? (rows - 1) * -ld : 0; /* run 0's start */
          fill(&state, (rows - 1) * (back ? -ld : ld) + n * step + 1, (int)(n % 3));
          for (int f32 = 0; f32 < 2; f32++)
            for (int isa = TL__ISA_PORTABLE; isa <= 2 * top + 1 && !bad; isa++) {
              const int level = isa / 2, split = isa % 2; /* each level, whole and split */
              const int64_t head = split ? rows / 2 : rows;
              for (int r = 0; r < 100; r++) out[r] = -7.0;
              if (f32) {
                tl__short_sums_f32(level, xf + first, n, pairs, ld, head, rows - head, out);
                tl__short_sums_f32(level, xf + first + head * ld, n, pairs, ld, rows - head, 0,
                                   out + head * step);
              } else {
                tl__short_sums_f64(level, xd + first, n, pairs, ld, head, rows - head, out);
                tl__short_sums_f64(level, xd + first + head * ld, n, pairs, ld, rows - head, 0,
                                   out + head * step);
              }
              for (int64_t r = 0; r < 100 && !bad; r++) {
                double want = -7.0;
                if (r < rows * step) { /* run r / step, part r % step */
                  const int64_t at = first + (r / step) * ld + r % step;
                  float block = 0.0f;
                  want = 0.0;
                  for (int64_t i = 0; i < n; i++) {
                    if (!f32) {
                      want += xd[at + i * step];
                      continue;
                    }
                    block += xf[at + i * step];
                    if (i % 16 == 15 || i == n - 1) want += (double)block, block = 0.0f;
                  }
                }
                if (!same(out[r], want)) {
                  fprintf(stderr,
                          "  n %lld rows %lld (first call %lld) step %d ld %lld f32 %d at %s: "
                          "run %lld is %.17g, want %.17g\n",
                          (long long)n, (long long)rows, (long long)head, step, (long long)ld, f32,
                          tl__isa_name(level), (long long)r, out[r], want);
                  bad++;
                }
              }
            }
        }
  TH_CHECK(bad == 0);
}

/* The total of a strided run fed to tl__sum16_strided_add_* in one call (pieces 0) or in
 * pieces of `pieces` TL__SUM16_PIECE_REALS reals each, the last shorter. */
static void strided_total(const double *rd, const float *rf, int64_t n, int64_t step, int pairs,
                          int64_t pieces, double got[2][2]) {
  double sd[16] = {0}, sf[16] = {0};
  const int64_t piece = pieces > 0 ? (pieces * TL__SUM16_PIECE_REALS) >> pairs : n;
  for (int64_t done = 0; done < n; done += piece) {
    const int64_t len = n - done < piece ? n - done : piece;
    tl__sum16_strided_add_f64(rd + done * step, len, step, pairs, sd);
    tl__sum16_strided_add_f32(rf + done * step, len, step, pairs, sf);
  }
  tl__sum16_total(sd, pairs, &got[0][0], &got[0][1]);
  tl__sum16_total(sf, pairs, &got[1][0], &got[1][1]);
}

/* A strided run (tl__sum16_strided_add_*, tl__sum16_total) gives the bits of the same values
 * laid out contiguously, for reals and complex pairs, steps forward, backward and
 * wide, around the 16-real groups and the 256-real float blocks, with cancelling data and a
 * NaN; in one call and fed in pieces of one or two TL__SUM16_PIECE_REALS. */
static void reduce_sums_strided_match_contiguous(void) {
  static const int64_t lengths[] = {0, 1, 7, 8, 15, 16, 17, 33, 127, 128, 129, 255, 300, 1031};
  static const int64_t steps[] = {1, 2, 3, 7, -1, -5, 64};
  static double sd[2 * 1031 * 64 + 16];
  static float sf[2 * 1031 * 64 + 16];
  uint64_t state = 77;
  int bad = 0, compared = 0;
  for (size_t c = 0; c < sizeof lengths / sizeof lengths[0]; c++)
    for (int kind = 0; kind < 3; kind++)
      for (int pairs = 0; pairs < 2; pairs++) {
        const int64_t n = lengths[c], reals = pairs ? 2 * n : n;
        fill(&state, reals, kind);
        double want_d[2][2];
        tl__sum16_f64(TL__ISA_PORTABLE, 0, xd, reals, pairs, &want_d[0][0], &want_d[0][1]);
        tl__sum16_f32(TL__ISA_PORTABLE, 0, xf, reals, pairs, &want_d[1][0], &want_d[1][1]);
        for (size_t t = 0; t < sizeof steps / sizeof steps[0]; t++) {
          const int64_t e = steps[t], step = pairs ? 2 * e : e; /* step in reals */
          /* element i at base + i * step; the unused reals between are poison */
          const int64_t span = n > 0 ? (n - 1) * (step < 0 ? -step : step) + 2 : 2;
          const int64_t base = step < 0 ? span - 2 : 0;
          for (int64_t k = 0; k < span + 2; k++) sd[k] = 1e300, sf[k] = 1e30f;
          for (int64_t i = 0; i < n; i++)
            for (int q = 0; q <= pairs; q++) {
              sd[base + i * step + q] = xd[(i << pairs) + q];
              sf[base + i * step + q] = xf[(i << pairs) + q];
            }
          for (int64_t pieces = 0; pieces <= 2; pieces++) {
            double got[2][2];
            strided_total(sd + base, sf + base, n, step, pairs, pieces, got);
            for (int f32 = 0; f32 < 2; f32++) {
              compared++;
              if (!same(got[f32][0], want_d[f32][0]) || !same(got[f32][1], want_d[f32][1])) {
                fprintf(stderr,
                        "  n %lld step %lld pairs %d kind %d %s pieces %lld: strided "
                        "%.17g%+.17gi, contiguous %.17g%+.17gi\n",
                        (long long)n, (long long)e, pairs, kind, f32 ? "f32" : "f64",
                        (long long)pieces, got[f32][0], got[f32][1], want_d[f32][0],
                        want_d[f32][1]);
                bad++;
              }
            }
          }
        }
      }
  TH_CHECK(bad == 0);
  TH_CHECK(compared > 0);
}

TH_TEST_MAIN(TH_CASE(reduce_sums_same_bits_at_every_isa),
             TH_CASE(reduce_sums_off_element_boundaries),
             TH_CASE(reduce_sums_four_rows_match_one_row_each),
             TH_CASE(reduce_sums_add_runs_match_plain_additions),
             TH_CASE(reduce_sums_short_runs_add_in_order),
             TH_CASE(reduce_sums_strided_match_contiguous))
