/* tests/tci/test_tci.c: the TCI example library (examples/tci): exactly known ranks, exact
 * polynomials, patching only where needed, NaN reported with its point, cancellation that
 * leaves the session usable, the same bits for any number of lanes, save/load. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tci.h"
#include "tenlane/tenlane.h"

static int failures;
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      failures++;                                                              \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
    }                                                                          \
  } while (0)

static tl_context *ctx_of(int threads) {
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = threads;
  tl_context *ctx = NULL;
  if (tl_context_create(&config, &ctx) != TL_OK) {
    fprintf(stderr, "context: %s\n", tl_last_message());
    exit(1);
  }
  return ctx;
}

/* Run on a fresh context of `threads` lanes. */
static int run(int threads, const tci_grid *g, const tci_function *f, const tci_options *o,
               tci_train *t, tci_stats *s, char *why) {
  tl_context *ctx = ctx_of(threads);
  tl_session *session;
  if (tl_session_open(ctx, tl_owner_new(), TL_WAIT, &session) != TL_OK) exit(1);
  int rc = tci_run_lanes(session, g, f, o, t, s, why);
  tl_session_close(session);
  tl_context_destroy(ctx);
  return rc;
}

/* f(x) = sum_k c_k exp(a_k x): each term is a product over the quantics bits (rank 1). */
static int exp_sum(const double *x, size_t n, int dims, double *y, void *arg) {
  (void)dims;
  int terms = *(int *)arg;
  static const double a[4] = {1.0, -2.0, 3.5, 0.5}, c[4] = {1.0, 0.7, -0.3, 2.0};
  for (size_t i = 0; i < n; i++) {
    y[i] = 0.0;
    for (int k = 0; k < terms; k++) y[i] += c[k] * exp(a[k] * x[i]);
  }
  return 0;
}

static double max_error(const tci_train *t, const tci_function *f) {
  tci_accuracy acc;
  char why[TCI_WHY];
  if (tci_accuracy_check(t, f, 2000, 5, &acc, why)) return INFINITY;
  return acc.max_error;
}

static void separable_sum_of_k_terms_gives_bond_dimension_k(void) {
  for (int terms = 1; terms <= 4; terms++) {
    tci_function f = {
        "expsum", "sum of exponentials", 1, {0.0}, {1.0}, exp_sum, &terms, 20, 0, 0, 0, NULL};
    tci_grid g;
    char why[TCI_WHY];
    CHECK(tci_grid_init(&g, 1, 20, TCI_INTERLEAVED, f.lo, f.hi, why) == 0, "%s", why);
    tci_options o;
    tci_options_init(&o);
    o.tol = 1e-12;
    o.patching = 0;
    tci_train t;
    tci_stats s;
    int rc = run(2, &g, &f, &o, &t, &s, why);
    CHECK(rc == 0, "%s", why);
    if (rc) continue;
    CHECK(t.count == 1, "one piece, got %zu", t.count);
    CHECK(tci_train_max_rank(&t) == terms, "%d terms gave bond dimension %d", terms,
          tci_train_max_rank(&t));
    double err = max_error(&t, &f);
    CHECK(err < 1e-10, "%d terms: error %g", terms, err);
    tci_train_free(&t);
  }
}

/* A cubic: rank 4 on the quantics sites, exact to rounding. */
static int cubic(const double *x, size_t n, int dims, double *y, void *arg) {
  (void)dims;
  (void)arg;
  for (size_t i = 0; i < n; i++) {
    double t = x[i];
    y[i] = 1.0 + 2.0 * t - 3.0 * t * t + 0.5 * t * t * t;
  }
  return 0;
}

static void quantics_polynomial_is_exact_to_rounding(void) {
  tci_function f = {"cubic", "1+2x-3x^2+x^3/2", 1, {-1.0}, {2.0}, cubic, NULL, 30, 0, 0, 0, NULL};
  for (int layout = 0; layout < 2; layout++) {
    tci_grid g;
    char why[TCI_WHY];
    CHECK(tci_grid_init(&g, 1, 30, (tci_layout)layout, f.lo, f.hi, why) == 0, "%s", why);
    tci_options o;
    tci_options_init(&o);
    o.tol = 1e-14;
    o.patching = 0;
    tci_train t;
    tci_stats s;
    int rc = run(1, &g, &f, &o, &t, &s, why);
    CHECK(rc == 0, "%s", why);
    if (rc) continue;
    CHECK(tci_train_max_rank(&t) <= 4, "a cubic needs at most bond 4, got %d",
          tci_train_max_rank(&t));
    double err = max_error(&t, &f);
    CHECK(err < 1e-12, "cubic: error %g", err);
    tci_train_free(&t);
  }
}

/* 1 + x on the left half, a fast chirp on the right half. */
static int half_chirp(const double *x, size_t n, int dims, double *y, void *arg) {
  (void)dims;
  (void)arg;
  for (size_t i = 0; i < n; i++)
    y[i] = x[i] < 0.5 ? 1.0 + x[i] : sin(300.0 * x[i] * x[i]) * exp(x[i]);
  return 0;
}

static void patching_splits_only_where_needed(void) {
  tci_function f = {"halfchirp", "1+x | chirp", 1, {0.0}, {1.0}, half_chirp, NULL, 12, 0, 0,
                    0,           NULL};
  tci_grid g;
  char why[TCI_WHY];
  CHECK(tci_grid_init(&g, 1, 12, TCI_INTERLEAVED, f.lo, f.hi, why) == 0, "%s", why);
  tci_options o;
  tci_options_init(&o);
  o.tol = 1e-10;
  o.max_bond = 4;
  tci_train t;
  tci_stats s;
  int rc = run(2, &g, &f, &o, &t, &s, why);
  CHECK(rc == 0, "%s", why);
  if (rc) return;
  size_t left = 0, right = 0;
  for (size_t i = 0; i < t.count; i++) {
    const tci_patch *p = &t.pieces[i]->patch;
    CHECK(p->prefix_len >= 1, "the root must split (the chirp needs more than bond 4)");
    if (p->prefix_len < 1) continue;
    if (p->prefix[0] == 0) {
      left++;
      CHECK(p->prefix_len == 1, "the smooth half split further (prefix length %d)", p->prefix_len);
    } else {
      right++;
    }
  }
  CHECK(left == 1, "the smooth half is %zu pieces, not 1", left);
  CHECK(right > 2, "the chirp half is only %zu pieces", right);
  CHECK(s.splits == t.count - 1, "a binary split tree of %zu leaves has %zu splits, not %zu",
        t.count, t.count - 1, s.splits);
  double err = max_error(&t, &f);
  CHECK(err < 1e-8, "patched error %g", err);
  tci_train_free(&t);
}

/* NaN on [0.25, 0.3). */
static int nan_band(const double *x, size_t n, int dims, double *y, void *arg) {
  (void)dims;
  (void)arg;
  for (size_t i = 0; i < n; i++) y[i] = x[i] >= 0.25 && x[i] < 0.3 ? NAN : cos(x[i]);
  return 0;
}

static void nan_gives_an_error_naming_the_point(void) {
  tci_function f = {"nanband", "NaN on [0.25, 0.3)", 1, {0.0}, {1.0}, nan_band, NULL, 10, 0, 0, 0,
                    NULL};
  tci_grid g;
  char why[TCI_WHY] = "";
  CHECK(tci_grid_init(&g, 1, 10, TCI_INTERLEAVED, f.lo, f.hi, why) == 0, "%s", why);
  tci_options o;
  tci_options_init(&o);
  tci_train t;
  tci_stats s;
  for (int lanes = 1; lanes <= 2; lanes++) {
    int rc = run(lanes, &g, &f, &o, &t, &s, why);
    CHECK(rc == TCI_E_NONFINITE, "rc %d: %s", rc, why);
    CHECK(strstr(why, "function 'nanband' returned nan at x = (0.2") != NULL, "message: %s", why);
    CHECK(strstr(why, "grid index (") != NULL, "message: %s", why);
    CHECK(t.count == 0 && t.pieces == NULL, "a failed run keeps nothing");
  }
}

static void cancel_mid_run_leaves_no_lane_running_and_session_usable(void) {
  const tci_function *f = tci_builtin("sharp2d");
  tci_grid g;
  char why[TCI_WHY];
  CHECK(tci_grid_init(&g, 2, 10, TCI_INTERLEAVED, f->lo, f->hi, why) == 0, "%s", why);
  tci_options o;
  tci_options_init(&o);
  o.cancel_after = 2;
  tl_context *ctx = ctx_of(2);
  tl_session *session;
  if (tl_session_open(ctx, tl_owner_new(), TL_WAIT, &session) != TL_OK) exit(1);
  tci_train t;
  tci_stats s;
  int rc = tci_run_lanes(session, &g, f, &o, &t, &s, why);
  CHECK(rc == TCI_E_CANCELLED, "rc %d: %s", rc, why);
  CHECK(strstr(why, "cancelled") != NULL, "message: %s", why);
  CHECK(t.count == 0, "a cancelled run keeps nothing");
  /* Every lane joined (the phase returned); the session runs the next phase and routes. */
  tci_function c = {"cubic", "cubic", 1, {0.0}, {1.0}, cubic, NULL, 12, 0, 0, 0, NULL};
  tci_grid g1;
  CHECK(tci_grid_init(&g1, 1, 12, TCI_INTERLEAVED, c.lo, c.hi, why) == 0, "%s", why);
  tci_options_init(&o);
  o.tol = 1e-13;
  rc = tci_run_lanes(session, &g1, &c, &o, &t, &s, why);
  CHECK(rc == 0, "the session after a cancelled run: %s", why);
  CHECK(max_error(&t, &c) < 1e-10, "after the cancel: error %g", max_error(&t, &c));
  tci_train_free(&t);
  CHECK(tl_session_close(session) == TL_OK, "%s", tl_last_message());
  tl_context_destroy(ctx);
}

static void sharp2d_train(int lanes, tci_train *t, tci_stats *s) {
  const tci_function *f = tci_builtin("sharp2d");
  tci_grid g;
  char why[TCI_WHY];
  CHECK(tci_grid_init(&g, 2, 8, TCI_INTERLEAVED, f->lo, f->hi, why) == 0, "%s", why);
  tci_options o;
  tci_options_init(&o);
  o.max_bond = 16;
  int rc = run(lanes, &g, f, &o, t, s, why);
  CHECK(rc == 0, "%d lanes: %s", lanes, why);
}

static void result_is_bit_identical_for_any_number_of_lanes(void) {
  tci_train one, other;
  tci_stats s1, s;
  sharp2d_train(1, &one, &s1);
  CHECK(one.count >= 4, "the run should patch: %zu pieces", one.count);
  for (int lanes = 2; lanes <= 4; lanes++) {
    sharp2d_train(lanes, &other, &s);
    CHECK(tci_train_identical(&one, &other), "%d lanes differ from one lane", lanes);
    CHECK(s.evaluations == s1.evaluations, "%d lanes: %llu evaluations, one lane %llu", lanes,
          (unsigned long long)s.evaluations, (unsigned long long)s1.evaluations);
    /* The timing figures are consistent: a chain is part of the busy time, which the lanes
     * spent within the run (1 ms of slack for the clock reads around it). */
    CHECK(s.chain_seconds > 0.0 && s.chain_seconds <= s.busy_seconds + 1e-9,
          "chain %g s, busy %g s", s.chain_seconds, s.busy_seconds);
    CHECK(s.busy_seconds <= lanes * s.seconds + 1e-3, "busy %g s over %d lanes x %g s",
          s.busy_seconds, lanes, s.seconds);
    CHECK(s.chain_seconds <= s.seconds + 1e-3, "chain %g s longer than the run's %g s",
          s.chain_seconds, s.seconds);
    tci_train_free(&other);
  }
  tci_train_free(&one);
}

static void save_load_round_trip(void) {
  tci_train t, back;
  tci_stats s;
  sharp2d_train(2, &t, &s);
  char path[] = "/tmp/test_tci_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0, "mkstemp");
  if (fd < 0) return;
  close(fd);
  char why[TCI_WHY];
  CHECK(tci_save(&t, path, why) == 0, "%s", why);
  CHECK(tci_load(path, &back, why) == 0, "%s", why);
  CHECK(tci_train_identical(&t, &back), "the loaded train differs");
  CHECK(tci_train_integral(&t) == tci_train_integral(&back), "integrals differ");
  tci_train_free(&back);
  /* A truncated file is refused with a message, and keeps nothing. */
  CHECK(truncate(path, 100) == 0, "truncate");
  CHECK(tci_load(path, &back, why) == TCI_E_IO, "a truncated file loaded");
  CHECK(strstr(why, "not a readable tci file") != NULL, "message: %s", why);
  unlink(path);
  tci_train_free(&t);
}

/* -1 plus the tail of a narrow ridge that runs outside the domain: inside, the tail is above
 * the tolerance only in a corner of about 1e-4 of the area, which 1024 random probes hit in
 * roughly one run in six. Everywhere else it is tiny but nonzero, so a search that climbs the
 * error from its worst probe reaches the corner. */
static int corner_tail(const double *x, size_t n, int dims, double *y, void *arg) {
  (void)dims;
  (void)arg;
  for (size_t i = 0; i < n; i++) {
    double r = x[2 * i] + x[2 * i + 1] + 0.4;
    y[i] = -1.0 + 0.5 * exp(-r * r / 1e-3);
  }
  return 0;
}

static void global_search_finds_a_feature_no_probe_hits(void) {
  tci_function f = {"corner",    "ridge tail in a corner",
                    2,           {-1.0, -1.0},
                    {-0.5, 0.0}, corner_tail,
                    NULL,        10,
                    0,           0,
                    0,           NULL};
  tci_grid g;
  char why[TCI_WHY];
  CHECK(tci_grid_init(&g, 2, 10, TCI_INTERLEAVED, f.lo, f.hi, why) == 0, "%s", why);
  tci_options o;
  tci_options_init(&o);
  o.tol = 1e-6;
  o.patching = 0;
  tci_train t;
  tci_stats s;
  CHECK(run(2, &g, &f, &o, &t, &s, why) == 0, "%s", why);
  /* The worst point of the domain: its last grid point, nearest the ridge. */
  uint64_t index[2] = {1023, 1023}, again[2];
  uint8_t sites[TCI_MAX_SITES];
  double x[2], want;
  tci_grid_sites(&g, index, sites);
  tci_grid_point(&g, sites, again, x);
  corner_tail(x, 1, 2, &want, NULL);
  double got = tci_train_eval(&t, index);
  CHECK(fabs(got - want) <= 10.0 * o.tol, "corner (%g, %g): train %.12g, f %.12g", x[0], x[1], got,
        want);
  tci_train_free(&t);
}

/* sharp2d on 2^6 x 2^6, recording every point the patches call f on (one lane: no lock
 * needed). The run's first call, its scale probe on the calling thread, is not a patch's. */
typedef struct recorder {
  uint64_t *seen; /* grid indices i * 64 + j */
  size_t count, cap, calls;
} recorder;

static int recording_sharp2d(const double *x, size_t n, int dims, double *y, void *arg) {
  recorder *r = arg;
  const tci_function *f = tci_builtin("sharp2d");
  if (r->calls++ == 0) return f->fn(x, n, dims, y, f->arg);
  for (size_t p = 0; p < n; p++) {
    if (r->count == r->cap) {
      r->cap = r->cap ? 2 * r->cap : 4096;
      uint64_t *grown = realloc(r->seen, r->cap * sizeof *grown);
      if (!grown) exit(1);
      r->seen = grown;
    }
    uint64_t i = (uint64_t)llround((x[2 * p] - f->lo[0]) / (f->hi[0] - f->lo[0]) * 64.0);
    uint64_t j = (uint64_t)llround((x[2 * p + 1] - f->lo[1]) / (f->hi[1] - f->lo[1]) * 64.0);
    r->seen[r->count++] = i * 64 + j;
  }
  return f->fn(x, n, dims, y, f->arg);
}

static int by_value(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The cache changes how often f is called, never the train: one unpatched TCI with and
 * without it gives the same bits, asks for the same values, and with it calls f once per
 * point (the grid's 4096 points fit in the table: it is never emptied). */
static void value_cache_calls_f_once_per_point_and_keeps_the_train(void) {
  tci_function f = *tci_builtin("sharp2d");
  tci_grid g;
  char why[TCI_WHY];
  CHECK(tci_grid_init(&g, 2, 6, TCI_INTERLEAVED, f.lo, f.hi, why) == 0, "%s", why);
  tci_options o;
  tci_options_init(&o);
  o.max_bond = 24;
  o.patching = 0;
  recorder r[2] = {{0}};
  tci_train t[2];
  tci_stats s[2];
  f.fn = recording_sharp2d;
  for (int cached = 0; cached < 2; cached++) {
    o.value_cache = cached ? TCI_CACHE_ON : TCI_CACHE_OFF;
    f.arg = &r[cached];
    CHECK(run(1, &g, &f, &o, &t[cached], &s[cached], why) == 0, "cache %d: %s", cached, why);
  }
  CHECK(tci_train_identical(&t[0], &t[1]), "the cache changed the train");
  CHECK(s[1].lookups == s[0].evaluations && s[0].lookups == s[0].evaluations,
        "values asked for: %llu with the cache, %llu (and %llu calls) without",
        (unsigned long long)s[1].lookups, (unsigned long long)s[0].lookups,
        (unsigned long long)s[0].evaluations);
  CHECK(s[1].evaluations == r[1].count, "%llu evaluations counted, f saw %zu points",
        (unsigned long long)s[1].evaluations, r[1].count);
  qsort(r[1].seen, r[1].count, sizeof *r[1].seen, by_value);
  size_t repeats = 0;
  for (size_t k = 1; k < r[1].count; k++) repeats += r[1].seen[k] == r[1].seen[k - 1];
  CHECK(repeats == 0, "f was called %zu times on a point it had already given", repeats);
  CHECK(s[1].evaluations < s[0].evaluations, "the cache saved nothing: %llu calls, %llu without",
        (unsigned long long)s[1].evaluations, (unsigned long long)s[0].evaluations);
  for (int k = 0; k < 2; k++) {
    free(r[k].seen);
    tci_train_free(&t[k]);
  }
}

/* osc1d at points of its 2^40 grid against the same formula in long double (64-bit or wider
 * mantissa: phases right to about 2e-10 rad): a plain double evaluation is off by up to 2e-8
 * relative there, the built-in must be within 1e-9. */
static void osc1d_is_accurate_at_grid_points(void) {
  const tci_function *f = tci_builtin("osc1d");
  const long double b = ldexpl(1.0L, -30), c = 4.0L * sqrtl(5.0L) * b;
  uint64_t s = 88172645463325252ull;
  double worst = 0.0;
  for (int k = 0; k < 4000; k++) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    uint64_t i = s >> 24; /* below 2^40 */
    double x = f->lo[0] + (f->hi[0] - f->lo[0]) * ((double)i / ldexp(1.0, 40)), y;
    CHECK(f->fn(&x, 1, 1, &y, f->arg) == 0, "osc1d failed at %.17g", x);
    long double xl = logl(20.0L) * ((long double)i / ldexpl(1.0L, 40));
    long double want = cosl(xl / b) * cosl(xl / c) * expl(-xl * xl) + 2.0L * expl(-xl);
    double err = (double)fabsl((long double)y - want) / 2.96;
    if (err > worst) worst = err;
  }
  CHECK(worst < 1e-9, "osc1d is off by %.3g relative at a grid point", worst);
}

/* With exact values, the 1-D function reaches 1e-10 on its 2^40 grid with a small bond. */
static void osc1d_reaches_1e_10(void) {
  const tci_function *f = tci_builtin("osc1d");
  tci_grid g;
  char why[TCI_WHY];
  CHECK(tci_grid_init(&g, 1, 40, TCI_INTERLEAVED, f->lo, f->hi, why) == 0, "%s", why);
  tci_options o;
  tci_options_init(&o);
  o.tol = 1e-10;
  o.max_bond = 64;
  o.patching = 0;
  tci_train t;
  tci_stats st;
  CHECK(run(2, &g, f, &o, &t, &st, why) == 0, "%s", why);
  double err = max_error(&t, f);
  CHECK(err <= 1e-9, "max error %.3g at tolerance 1e-10", err);
  CHECK(tci_train_max_rank(&t) <= 32, "bond %d", tci_train_max_rank(&t));
  tci_train_free(&t);
}

/* sharp2d through grid indices: the same values as the built-in, by way of the same coords. */
static int sharp2d_by_index(const uint64_t *index, size_t n, int dims, double *y, void *arg) {
  const tci_grid *g = arg;
  const tci_function *f = tci_builtin("sharp2d");
  for (size_t i = 0; i < n; i++) {
    double x[TCI_MAX_DIMS];
    tci_grid_coords(g, index + i * (size_t)dims, x);
    if (f->fn(x, 1, dims, y + i, NULL)) return 1;
  }
  return 0;
}

static void index_function_gives_the_coordinate_functions_train(void) {
  const tci_function *builtin = tci_builtin("sharp2d");
  char why[TCI_WHY];
  tci_grid g;
  CHECK(tci_grid_init(&g, 2, 8, TCI_INTERLEAVED, builtin->lo, builtin->hi, why) == 0, "%s", why);
  tci_function f = *builtin;
  f.fn = NULL;
  f.index_fn = sharp2d_by_index;
  f.arg = &g;
  tci_options o;
  tci_options_init(&o);
  o.tol = 1e-6;
  o.max_bond = 12;
  tci_train a, b;
  tci_stats sa, sb;
  int rc = run(2, &g, builtin, &o, &a, &sa, why);
  CHECK(rc == 0, "%s", why);
  int rc2 = run(2, &g, &f, &o, &b, &sb, why);
  CHECK(rc2 == 0, "%s", why);
  if (rc || rc2) return;
  CHECK(a.count > 1, "the case should patch: %zu pieces", a.count);
  CHECK(tci_train_identical(&a, &b), "trains differ (%zu and %zu pieces)", a.count, b.count);
  CHECK(sa.evaluations == sb.evaluations, "%llu and %llu evaluations",
        (unsigned long long)sa.evaluations, (unsigned long long)sb.evaluations);
  tci_accuracy acc;
  CHECK(tci_accuracy_check(&b, &f, 500, 3, &acc, why) == 0, "%s", why);
  CHECK(acc.max_error < 1e-5, "index function train error %g", acc.max_error);
  tci_train_free(&a);
  tci_train_free(&b);
}

int main(int argc, char **argv) {
  struct {
    const char *name;
    void (*fn)(void);
  } cases[] = {
      {"tci_separable_sum_of_k_terms_gives_bond_dimension_k",
       separable_sum_of_k_terms_gives_bond_dimension_k},
      {"tci_quantics_polynomial_is_exact_to_rounding", quantics_polynomial_is_exact_to_rounding},
      {"tci_patching_splits_only_where_needed", patching_splits_only_where_needed},
      {"tci_nan_gives_an_error_naming_the_point", nan_gives_an_error_naming_the_point},
      {"tci_cancel_mid_run_leaves_no_lane_running_and_session_usable",
       cancel_mid_run_leaves_no_lane_running_and_session_usable},
      {"tci_result_is_bit_identical_for_any_number_of_lanes",
       result_is_bit_identical_for_any_number_of_lanes},
      {"tci_save_load_round_trip", save_load_round_trip},
      {"tci_global_search_finds_a_feature_no_probe_hits",
       global_search_finds_a_feature_no_probe_hits},
      {"tci_value_cache_calls_f_once_per_point_and_keeps_the_train",
       value_cache_calls_f_once_per_point_and_keeps_the_train},
      {"tci_osc1d_is_accurate_at_grid_points", osc1d_is_accurate_at_grid_points},
      {"tci_osc1d_reaches_1e_10", osc1d_reaches_1e_10},
      {"tci_index_function_gives_the_coordinate_functions_train",
       index_function_gives_the_coordinate_functions_train},
  };
  int ran = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (argc > 1 && strcmp(argv[1], cases[i].name)) continue;
    cases[i].fn();
    ran++;
  }
  if (!ran) {
    fprintf(stderr, "no case named %s\n", argc > 1 ? argv[1] : "?");
    return 1;
  }
  if (failures) fprintf(stderr, "%d checks failed\n", failures);
  return failures ? 1 : 0;
}
