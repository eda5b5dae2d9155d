/* tests/kernels/test_permute_tiles.c: the 2-D tile path of the permute
 * (src/kernels/permute_core.c) at every instruction set this CPU has (the portable
 * kernels, AVX2, AVX-512; tl__permute_isa_cap lowers the choice), against element-by-element
 * references: the micro-tile kernel on sizes around its edges; transposes of every dtype
 * large enough for streaming stores, with destination rows 64-byte aligned (the AVX-512
 * streaming kernels) and only 32-byte aligned (AVX2's); the grouped path's streaming
 * output at 64-byte alignment; and a 3-D transpose whose destination steps are not 32-byte
 * multiples along an axis other than the source's dense one, which used to take streaming
 * stores to unaligned addresses and crash the process. The streaming transposes run with
 * this CPU's tiles at every instruction set, and with the other tile size the CPUs get
 * (tl__permute_tiles_for) at the best one. */
#include <string.h>

#include "kernels/kernels.h"
#include "kt_isa.h"
#include "tenlane/ops.h"
#include "th_fixtures.h"
#include "th_numeric.h"
#include "th_test.h"

static void permute_tile_kernel_moves_bits_at_every_isa(void) {
  static unsigned char src[40 * 40 * 16], dst[40 * 40 * 16];
  KT_FOR_EACH_PERMUTE_ISA(isa) {
    TH_CHECK(tl__permute_isa() == isa);
    for (int es = 4; es <= 16; es *= 2)
      for (int r = 1; r <= 35; r += 2)
        for (int c = 1; c <= 37; c += 3) {
          for (size_t i = 0; i < sizeof src; i++) src[i] = (unsigned char)(i * 131 + 7 + isa);
          memset(dst, 0xee, sizeof dst);
          int64_t ss = r + 3, ds = c + 1;
          tl__transpose_tile(es, r, c, (const char *)src, ss, (char *)dst, ds);
          int bad = 0;
          for (int i = 0; i < r; i++)
            for (int j = 0; j < c; j++)
              bad |= memcmp(dst + (size_t)(j + i * ds) * es, src + (size_t)(i + j * ss) * es,
                            (size_t)es) != 0;
          TH_CHECK(bad == 0);
          TH_CHECK(dst[(size_t)(c + (r - 1) * ds) * es] == 0xee); /* the gap is untouched */
        }
  }
}

/* x (shape, column-major, element i has value i in its real part) permuted by `perm` into a
 * fresh output, compared element by element; the plan's streaming and alignment flags are
 * returned for the caller to check. */
static void check_permute(tl_exec *exec, tl_dtype dt, int rank, const int64_t *shape,
                          const int *perm, tl__permute_plan *plan) {
  int64_t oshape[TL_MAX_RANK];
  for (int k = 0; k < rank; k++) oshape[k] = shape[perm[k]];
  tl_tensor x, out, permuted;
  TH_CHECK_OK(tl_tensor_create(dt, rank, shape, &x));
  TH_CHECK_OK(tl_tensor_create(dt, rank, oshape, &out));
  /* Raw element offsets walked incrementally (these tensors are 16 MiB and run under the
   * sanitizers too: per-element calls made the check the cost of the test). Element i of x
   * in column-major index order holds i (and -(i % 977) in a complex part), as bytes of its
   * dtype; the check compares bytes. */
  const int64_t n = tl_tensor_numel(&x), es = (int64_t)tl_dtype_size(dt);
  int64_t idx[TL_MAX_RANK] = {0}, at = 0;
  for (int64_t i = 0; i < n; i++) {
    th_num_store_parts(dt, (char *)x.data + es * (x.offset + at), 0, (double)i, -(double)(i % 977));
    for (int k = 0; k < rank; k++) {
      at += x.strides[k];
      if (++idx[k] < shape[k]) break;
      at -= x.strides[k] * shape[k];
      idx[k] = 0;
    }
  }
  TH_CHECK_OK(tl_tensor_permute_view(&x, perm, &permuted));
  tl__permute_plan_make(plan, &out, &permuted);
  TH_CHECK_OK(tl_permute_into(exec, &x, perm, &out));
  /* out[idx] must be x[src] with src[perm[k]] = idx[k]: permuted's strides walk x there. */
  int64_t bad = 0, po = 0, pp = 0;
  memset(idx, 0, sizeof idx);
  for (int64_t i = 0; i < n; i++) {
    bad += memcmp((const char *)out.data + es * (out.offset + po),
                  (const char *)permuted.data + es * (permuted.offset + pp), (size_t)es) != 0;
    for (int k = 0; k < rank; k++) {
      po += out.strides[k], pp += permuted.strides[k];
      if (++idx[k] < oshape[k]) break;
      po -= out.strides[k] * oshape[k], pp -= permuted.strides[k] * oshape[k];
      idx[k] = 0;
    }
  }
  char what[160];
  snprintf(what, sizeof what, "%s rank %d isa %d: %lld elements differ", tl_dtype_name(dt), rank,
           tl__permute_isa(), (long long)bad);
  if (bad) th_test_fail_at(__FILE__, __LINE__, what);
  tl_tensor_release(&x);
  tl_tensor_release(&out);
}

/* The streaming cases at instruction set `isa` (the cap set to it by the caller) with the
 * tiles in force. */
static void streaming_cases(th_held *h, int isa) {
  const int t2[2] = {1, 0};
  /* >= 16 MiB out (tl_tensor_create's base is 64-byte aligned). Rows of f64 1536^2:
   * 12288 bytes (a 64-byte multiple); 1540^2: 12320 (32, not 64); 1450^2: 11600 (not 32:
   * no streaming); c128 1024^2: 16384; 1026^2: 16416; c64 1472^2: 11776; f32 has no
   * streaming kernel. */
  const struct {
    tl_dtype dt;
    int64_t n;
    int stream, align64; /* expected with AVX2 or better */
  } cases[] = {{TL_F64, 1536, 1, 1},  {TL_F64, 1540, 1, 0},  {TL_F64, 1450, 0, 0},
               {TL_C128, 1024, 1, 1}, {TL_C128, 1026, 1, 0}, {TL_C64, 1472, 1, 1},
               {TL_F32, 2048, 0, 0}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int64_t shape[2] = {cases[c].n, cases[c].n};
    tl__permute_plan plan;
    check_permute(h->exec, cases[c].dt, 2, shape, t2, &plan);
    TH_CHECK(plan.tiled && !plan.grouped);
    TH_CHECK(plan.stream == (isa >= TL__ISA_AVX2 && cases[c].stream));
    TH_CHECK(!plan.stream || plan.align64 == cases[c].align64);
  }
  /* grouped path, streaming, destination rows 64-byte aligned: 16 MiB of doubles */
  int64_t s6[6] = {16, 8, 16, 8, 16, 8};
  int p6[6] = {5, 3, 1, 4, 2, 0};
  tl__permute_plan plan;
  check_permute(h->exec, TL_F64, 6, s6, p6, &plan);
  TH_CHECK(plan.grouped);
  TH_CHECK(plan.stream == (isa >= TL__ISA_AVX2) && (!plan.stream || plan.align64));
}

/* Outputs under the streaming size take the tiles' cached source extent: power-of-two
 * transposes (the case it was chosen for), an odd size, and a 3-D order, each dtype. */
static void cached_cases(th_held *h, int isa) {
  const int t2[2] = {1, 0}, t3[3] = {2, 1, 0};
  const struct {
    tl_dtype dt;
    int64_t rows, cols;
  } cases[] = {{TL_F64, 1024, 1024},
               {TL_F64, 512, 1024},
               {TL_C128, 512, 512},
               {TL_C64, 1000, 700},
               {TL_F32, 1024, 2048}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int64_t shape[2] = {cases[c].rows, cases[c].cols};
    tl__permute_plan plan;
    check_permute(h->exec, cases[c].dt, 2, shape, t2, &plan);
    TH_CHECK(plan.tiled && !plan.grouped && !plan.stream);
    const int64_t es = (int64_t)tl_dtype_size(cases[c].dt);
    TH_CHECK(plan.tile1 * es == tl__permute_tiles_here().src_bytes_cached);
  }
  int64_t s3[3] = {96, 48, 160}; /* 11.8 MB out, dense extents 1536 and 2560 bytes */
  tl__permute_plan plan;
  check_permute(h->exec, TL_C128, 3, s3, t3, &plan);
  TH_CHECK(plan.tiled && !plan.grouped && !plan.stream);
  (void)isa;
}

/* Cached-size transposes at every instruction set, with this CPU's tiles and the other
 * choice's. */
static void permute_cached_transposes_match_naive_with_either_tiles(void) {
  th_held h;
  th_held_open(&h, 2);
  KT_FOR_EACH_PERMUTE_ISA(isa) { cached_cases(&h, isa); }
  const tl__permute_tiles own = tl__permute_tiles_here();
  tl__permute_tiles_forced = tl__permute_tiles_for(1, own.dst_bytes == 4096 ? 25 : 26);
  cached_cases(&h, tl__permute_isa());
  tl__permute_tiles_forced.dst_bytes = 0;
  th_held_close(&h);
}

/* This CPU's tiles, every instruction set it has. */
static void permute_streaming_transposes_match_naive_at_every_isa(void) {
  th_held h;
  th_held_open(&h, 2);
  KT_FOR_EACH_PERMUTE_ISA(isa) { streaming_cases(&h, isa); }
  th_held_close(&h);
}

/* The other tile choice (tl__permute_tiles_for: Zen 5's on every other CPU, the wider one
 * on Zen 5), at the CPU's best instruction set: the tile walk does not depend on the
 * micro-kernels, and the two cases together stay well inside the alarm under TSan. */
static void permute_streaming_transposes_match_naive_with_the_other_tiles(void) {
  th_held h;
  th_held_open(&h, 2);
  const tl__permute_tiles own = tl__permute_tiles_here();
  tl__permute_tiles_forced = tl__permute_tiles_for(1, own.dst_bytes == 4096 ? 25 : 26);
  streaming_cases(&h, tl__permute_isa());
  tl__permute_tiles_forced.dst_bytes = 0; /* back to this CPU's own */
  th_held_close(&h);
}

/* The tile per CPU: Zen 5 (AMD family 26) the tall one measured there, every other CPU
 * (Zen 4 measured; Intel, older AMD) the wider one; and this process's own follows cpuid
 * unless forced. */
static void permute_tiles_follow_the_cpu(void) {
  tl__permute_tiles t = tl__permute_tiles_for(1, 26);
  TH_CHECK(t.dst_bytes == 4096 && t.src_bytes == 256 && t.src_bytes_cached == 128);
  const int others[][2] = {{1, 25}, {1, 23}, {0, 6}, {0, 26}};
  for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
    t = tl__permute_tiles_for(others[i][0], others[i][1]);
    TH_CHECK(t.dst_bytes == 1024 && t.src_bytes == 512 && t.src_bytes_cached == 512);
  }
  /* This CPU's own is one of the two; forcing replaces it, unforcing gives it back. */
  tl__permute_tiles own = tl__permute_tiles_here();
  TH_CHECK((own.dst_bytes == 4096 && own.src_bytes == 256) ||
           (own.dst_bytes == 1024 && own.src_bytes == 512));
  tl__permute_tiles_forced = tl__permute_tiles_for(1, own.dst_bytes == 4096 ? 25 : 26);
  TH_CHECK(tl__permute_tiles_here().dst_bytes != own.dst_bytes);
  tl__permute_tiles_forced.dst_bytes = 0;
  TH_CHECK(tl__permute_tiles_here().dst_bytes == own.dst_bytes);
}

static void permute_streaming_needs_every_destination_step_aligned(void) {
  th_held h;
  th_held_open(&h, 2);
  /* Column-major f64, perm (2, 1, 0), 22 MB out. From (700, 4, 1001): out (1001, 4, 700),
   * whose step along the middle axis is 1001 * 8 = 8008 bytes, not a 32-byte multiple,
   * while the step along the source's dense axis, 4004 * 8 = 32032 bytes, is: no streaming
   * (this one crashed before). From (1001, 4, 700): out (700, 4, 1001), steps 5600 and
   * 22400 bytes, both 32-byte multiples but 5600 no 64-byte one: AVX2 streaming only. */
  int64_t a[3] = {700, 4, 1001}, b[3] = {1001, 4, 700};
  int p[3] = {2, 1, 0};
  KT_FOR_EACH_PERMUTE_ISA(isa) {
    tl__permute_plan plan;
    check_permute(h.exec, TL_F64, 3, a, p, &plan);
    TH_CHECK(plan.tiled && !plan.stream);
    check_permute(h.exec, TL_F64, 3, b, p, &plan);
    TH_CHECK(plan.tiled && plan.stream == (isa >= TL__ISA_AVX2) && !plan.align64);
  }
  th_held_close(&h);
}

TH_TEST_MAIN(TH_CASE(permute_cached_transposes_match_naive_with_either_tiles),
             TH_CASE(permute_tile_kernel_moves_bits_at_every_isa),
             TH_CASE(permute_streaming_transposes_match_naive_at_every_isa),
             TH_CASE(permute_streaming_transposes_match_naive_with_the_other_tiles),
             TH_CASE(permute_streaming_needs_every_destination_step_aligned),
             TH_CASE(permute_tiles_follow_the_cpu))
