/* benches/bench_providers.c: tenlane's GEMM and LAPACK routes against the strongest stacks on
 * this machine, never against tenlane's own calls only. One thread, pinned, f64, c128, c64:
 *   - GEMM n = 64, 256, 1024: tl_gemm_into on a held one-thread session against OpenBLAS
 *     serial's dgemm/zgemm and BLIS called directly with tenlane's context;
 *   - QR (geqrf + orgqr/ungqr), SVD (gesdd, thin) and LU (getrf), n = 64, 256, 512: tl_*_into
 *     against OpenBLAS serial's LAPACK and against reference LAPACK over BLIS with tenlane's
 *     context (the archives tenlane links, called directly; its gemv, gemm, ger and trmm
 *     calls are capped to BLIS's kernels, see blis_kernels), the tl row anchored to the faster of
 * the two;
 *   - GEMM in c64, n = 64, 256, 1024: against OpenBLAS serial's cgemm and BLIS's cgemm
 *     (a table of its own);
 *   - tiny complex GEMM: c128 n = 4, 16 against f64 at the same n (aim: at most 4x), and a
 *     tl_map of 10 such GEMMs per item on 2 lanes against 1 lane (aim: 2 lanes at most 0.54x
 *     the 1-lane time, i.e. 1.85x faster), in a table of its own with the host's bound for
 *     2 lanes beside it (each CPU's 1-lane rate, measured in the same rounds; bench_lanes)
 *     and the same map written by hand on two plain futex-woken threads (pair_call);
 *   - replacements (issue 30's rule: a hand-written BLAS/LAPACK replacement stays only for a
 *     15% gain on a user-level route): each replacement that can be turned off at run time,
 *     with and without it, alternated in the same run, on the routes it sits under (GEMM, QR,
 *     SVD, LU; f64, c128, and c64 for GEMM; n = 64, 256, 512; and complex contractions
 *     through tl_einsum_into),
 *     the gain, and kept/remove (bench_replacements).
 *     `TL_BENCH_PROVIDERS_ONLY=replacements` prints that table alone.
 * OpenBLAS is never linked: libopenblas0-serial's .deb is unpacked into BUILD/openblas (taken
 * from there or /tmp/openblas when present, else fetched with `apt-get download`, not in
 * --quick) and loaded by path with dlopen (RTLD_LOCAL | RTLD_DEEPBIND, so its own symbols
 * serve its internal calls). When it cannot be had, its rows say so and carry no figure.
 * --quick: n = 64 only and few samples (CI's smoke run; no network). */
#include <complex.h>
#include <dlfcn.h>
#include <linux/futex.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench.h"
#include "bench_session.h"
#include "kernels/kernels.h"
#include "map/map_int.h"
#include "tenlane/tenlane.h"

static void die(const char *what, tl_status status) {
  tl_bench_die("bench_providers", what, status);
}

typedef int fint; /* LAPACK's 32-bit integer */

/* The Fortran entries one stack offers (the hidden string lengths passed last). */
typedef struct stack {
  const char *name;
  void (*dgemm)(const char *, const char *, const fint *, const fint *, const fint *,
                const double *, const double *, const fint *, const double *, const fint *,
                const double *, double *, const fint *, size_t, size_t);
  void (*zgemm)(const char *, const char *, const fint *, const fint *, const fint *,
                const double complex *, const double complex *, const fint *,
                const double complex *, const fint *, const double complex *, double complex *,
                const fint *, size_t, size_t);
  void (*cgemm)(const char *, const char *, const fint *, const fint *, const fint *,
                const float complex *, const float complex *, const fint *, const float complex *,
                const fint *, const float complex *, float complex *, const fint *, size_t, size_t);
  void (*dgeqrf)(const fint *, const fint *, double *, const fint *, double *, double *,
                 const fint *, fint *);
  void (*zgeqrf)(const fint *, const fint *, double complex *, const fint *, double complex *,
                 double complex *, const fint *, fint *);
  void (*dorgqr)(const fint *, const fint *, const fint *, double *, const fint *, const double *,
                 double *, const fint *, fint *);
  void (*zungqr)(const fint *, const fint *, const fint *, double complex *, const fint *,
                 const double complex *, double complex *, const fint *, fint *);
  void (*dgesdd)(const char *, const fint *, const fint *, double *, const fint *, double *,
                 double *, const fint *, double *, const fint *, double *, const fint *, fint *,
                 fint *, size_t);
  void (*zgesdd)(const char *, const fint *, const fint *, double complex *, const fint *, double *,
                 double complex *, const fint *, double complex *, const fint *, double complex *,
                 const fint *, double *, fint *, fint *, size_t);
  void (*dgetrf)(const fint *, const fint *, double *, const fint *, fint *, fint *);
  void (*zgetrf)(const fint *, const fint *, double complex *, const fint *, fint *, fint *);
  void (*dsyevd)(const char *, const char *, const fint *, double *, const fint *, double *,
                 double *, const fint *, fint *, const fint *, fint *, size_t, size_t);
  void (*zheevd)(const char *, const char *, const fint *, double complex *, const fint *, double *,
                 double complex *, const fint *, double *, const fint *, fint *, const fint *,
                 fint *, size_t, size_t);
  int blis_kernels; /* its LAPACK's BLAS calls kept on BLIS's kernels (blis_kernels) */
} stack;

/* tenlane defines the gemv, gemm and ger LAPACK calls (src/linalg/gemv.c, gemm_blas.c,
 * ger.c), and the reference stack's calls reach them in this binary as they do inside
 * libtenlane. Capped, they send every call to BLIS's kernels, so that the stack measures
 * reference LAPACK over BLIS and not tenlane's own kernels. */
extern int tl__blas_isa_cap;
extern int tl__blas_off; /* TL__BLAS_OWN_* bits (src/linalg/linalg_int.h) */
enum { OWN_GEMV = 1, OWN_GER = 2, OWN_GEMM = 4 }; /* TL__BLAS_OWN_* */
/* The cap the tl rows run with: 1, or 0 under TL_BENCH_REPLACEMENTS (below). */
static int tl_rows_blas_cap = 1;
static void blis_kernels(const stack *s, int on) {
  if (!s->blis_kernels) return;
  tl__blas_isa_cap = on ? 0 : tl_rows_blas_cap;
}

/* 1 when `word` is one of the comma-separated words of `list`. */
static int word_in(const char *list, const char *word) {
  const size_t len = strlen(word);
  for (const char *p = list; (p = strstr(p, word)) != NULL; p += len)
    if ((p == list || p[-1] == ',') && (p[len] == '\0' || p[len] == ',')) return 1;
  return 0;
}

/* TL_BENCH_REPLACEMENTS=off-blas,off-gemv,off-ger,off-gemm-blas,off-packed-complex
 * runs the tl rows without tenlane's own kernels under LAPACK (off-blas: all three of gemv.c,
 * ger.c, gemm_blas.c/gemm_narrow.c send every call to the provider; the others one
 * file each) or without the packed complex GEMM (gemm_packed_complex.c), so that a run with
 * and a run without show what each earns on the user-level routes, against the same anchors.
 * Unset: everything on. (The complex level-1 kernels in BLIS's contexts have a row of their
 * own in the replacements group, not words here.) */
static void replacements_from_env(void) {
  const char *want = getenv("TL_BENCH_REPLACEMENTS");
  if (want == NULL) return;
  if (word_in(want, "off-blas")) tl_rows_blas_cap = 0, tl__blas_isa_cap = 0;
  if (word_in(want, "off-gemv")) tl__blas_off |= OWN_GEMV;
  if (word_in(want, "off-ger")) tl__blas_off |= OWN_GER;
  if (word_in(want, "off-gemm-blas")) tl__blas_off |= OWN_GEMM;
  if (word_in(want, "off-packed-complex")) tl__packed_complex_off = 1;
  printf("replacements: %s (TL_BENCH_REPLACEMENTS)\n", want);
}

/* Reference LAPACK as tenlane links it (the archives), whose BLAS calls land in tenlane's
 * BLIS with tenlane's context once tl__providers_init has run on the calling thread. */
void dgemm_(), zgemm_(), cgemm_(), dgeqrf_(), zgeqrf_(), dorgqr_(), zungqr_(), dgesdd_(), zgesdd_(),
    dgetrf_(), zgetrf_(), dsyevd_(), zheevd_();

static stack reference_stack(void) {
  stack s;
  s.name = "ref LAPACK over BLIS (tenlane ctx)";
  s.dgemm = (void *)dgemm_, s.zgemm = (void *)zgemm_, s.cgemm = (void *)cgemm_;
  s.dgeqrf = (void *)dgeqrf_, s.zgeqrf = (void *)zgeqrf_;
  s.dorgqr = (void *)dorgqr_, s.zungqr = (void *)zungqr_;
  s.dgesdd = (void *)dgesdd_, s.zgesdd = (void *)zgesdd_;
  s.dgetrf = (void *)dgetrf_, s.zgetrf = (void *)zgetrf_;
  s.dsyevd = (void *)dsyevd_, s.zheevd = (void *)zheevd_;
  s.blis_kernels = 1;
  return s;
}

#ifndef TL_BENCH_BUILD_DIR
#define TL_BENCH_BUILD_DIR "."
#endif
#ifndef TL_BENCH_MULTIARCH
#define TL_BENCH_MULTIARCH "x86_64-linux-gnu"
#endif

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* Which kernels the OpenBLAS anchor runs, and why (printed under the tables). */
static char openblas_core[64] = "", openblas_env_note[400] = "";

/* OpenBLAS reads OPENBLAS_CORETYPE (and OPENBLAS_L2_SIZE) when it is loaded. A machine may
 * set them for every process (older OpenBLAS builds misdetect some CPUs), and forced to an
 * older core the anchor runs slower kernels than OpenBLAS picks for itself: on Zen 5 the
 * Haswell kernels took 1.6x the time of the Cooperlake ones its own detection chose for
 * dgemm and zgemm at n = 1024. So the full run lets OpenBLAS detect the CPU, or runs the
 * core TL_BENCH_OPENBLAS_CORETYPE names, and checks the anchor's results (openblas_check);
 * --quick (CI's smoke run) leaves the environment as it is. Only this process's environment
 * changes, before the library is loaded. */
static void openblas_pick_core(int quick) {
  const char *forced = getenv("TL_BENCH_OPENBLAS_CORETYPE");
  const char *inherited = getenv("OPENBLAS_CORETYPE");
  if (quick) {
    snprintf(openblas_env_note, sizeof openblas_env_note,
             "the environment's OPENBLAS_CORETYPE%s%.60s", inherited != NULL ? "=" : " (unset)",
             inherited != NULL ? inherited : "");
    return;
  }
  char note[100];
  snprintf(note, sizeof note, "%s%.60s", inherited != NULL ? "OPENBLAS_CORETYPE=" : "",
           inherited != NULL ? inherited : "");
  if (forced != NULL && forced[0] != '\0') {
    setenv("OPENBLAS_CORETYPE", forced, 1);
    snprintf(openblas_env_note, sizeof openblas_env_note, "TL_BENCH_OPENBLAS_CORETYPE=%.60s",
             forced);
    return;
  }
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv("OPENBLAS_L2_SIZE");
  snprintf(openblas_env_note, sizeof openblas_env_note,
           "its own CPU detection%s%s%s (TL_BENCH_OPENBLAS_CORETYPE=NAME forces a core)",
           note[0] ? "; the environment's " : "", note, note[0] ? " not used" : "");
}

/* The anchor must compute what it is timed on: a 37 x 29 x 41 dgemm and zgemm against a
 * naive product. 0 when both agree. */
static int openblas_check(const stack *s) {
  enum { M = 37, N = 29, K = 41 };
  static double complex a[M * K], b[K * N], c[M * N];
  const fint m = M, n = N, k = K;
  for (int i = 0; i < M * K; i++) a[i] = (double)(i % 7) - 3.0 + I * (double)(i % 5) * 0.25;
  for (int i = 0; i < K * N; i++) b[i] = (double)(i % 11) * 0.5 - 2.0 - I * (double)(i % 3);
  for (int z = 0; z < 2; z++) {
    if (z == 0) {
      const double one = 1.0, zero = 0.0;
      double *ar = (double *)a, *br = (double *)b, *cr = (double *)c;
      s->dgemm("N", "N", &m, &n, &k, &one, ar, &m, br, &k, &zero, cr, &m, 1, 1);
      for (int j = 0; j < N; j++)
        for (int i = 0; i < M; i++) {
          double want = 0.0;
          for (int l = 0; l < K; l++) want += ar[i + l * M] * br[l + j * K];
          if (fabs(cr[i + j * M] - want) > 1e-10 * (1.0 + fabs(want))) return 1;
        }
    } else {
      const double complex one = 1.0, zero = 0.0;
      s->zgemm("N", "N", &m, &n, &k, &one, a, &m, b, &k, &zero, c, &m, 1, 1);
      for (int j = 0; j < N; j++)
        for (int i = 0; i < M; i++) {
          double complex want = 0.0;
          for (int l = 0; l < K; l++) want += a[i + l * M] * b[l + j * K];
          if (cabs(c[i + j * M] - want) > 1e-10 * (1.0 + cabs(want))) return 1;
        }
    }
  }
  return 0;
}

/* OpenBLAS serial loaded by path, or NULL with *why saying what is missing. */
static int load_openblas(int quick, stack *s, const char **why) {
  static char lib[512], cmd[1400];
  const char *dir = TL_BENCH_BUILD_DIR "/openblas";
  snprintf(lib, sizeof lib, "%s/usr/lib/%s/openblas-serial/libopenblas.so.0", dir,
           TL_BENCH_MULTIARCH);
  if (!exists(lib)) {
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s' && cd '%s' && deb=$(ls libopenblas0-serial_*.deb "
             "/tmp/openblas/libopenblas0-serial_*.deb 2>/dev/null | head -n 1); "
             "if [ -z \"$deb\" ] && [ %d = 0 ]; then apt-get download libopenblas0-serial "
             ">/dev/null 2>&1; deb=$(ls libopenblas0-serial_*.deb 2>/dev/null | head -n 1); fi; "
             "[ -n \"$deb\" ] && dpkg-deb -x \"$deb\" .",
             dir, dir, quick);
    if (system(cmd) != 0 || !exists(lib)) {
      *why = quick ? "OpenBLAS serial: no .deb at hand (--quick does not fetch)"
                   : "OpenBLAS serial: .deb not found and apt-get download failed";
      return 0;
    }
  }
  openblas_pick_core(quick);
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (h == NULL) {
    *why = "OpenBLAS serial: dlopen failed";
    return 0;
  }
  s->name = "OpenBLAS 0.3 serial";
  char *(*corename)(void) = NULL;
  *(void **)&corename = dlsym(h, "openblas_get_corename");
  snprintf(openblas_core, sizeof openblas_core, "%s", corename != NULL ? corename() : "?");
  s->blis_kernels = 0;
  *(void **)&s->dgemm = dlsym(h, "dgemm_"), *(void **)&s->zgemm = dlsym(h, "zgemm_");
  *(void **)&s->cgemm = dlsym(h, "cgemm_");
  *(void **)&s->dgeqrf = dlsym(h, "dgeqrf_"), *(void **)&s->zgeqrf = dlsym(h, "zgeqrf_");
  *(void **)&s->dorgqr = dlsym(h, "dorgqr_"), *(void **)&s->zungqr = dlsym(h, "zungqr_");
  *(void **)&s->dgesdd = dlsym(h, "dgesdd_"), *(void **)&s->zgesdd = dlsym(h, "zgesdd_");
  *(void **)&s->dgetrf = dlsym(h, "dgetrf_"), *(void **)&s->zgetrf = dlsym(h, "zgetrf_");
  *(void **)&s->dsyevd = dlsym(h, "dsyevd_"), *(void **)&s->zheevd = dlsym(h, "zheevd_");
  if (!s->dgemm || !s->zgemm || !s->cgemm || !s->dgeqrf || !s->zgeqrf || !s->dorgqr || !s->zungqr ||
      !s->dgesdd || !s->zgesdd || !s->dgetrf || !s->zgetrf) {
    *why = "OpenBLAS serial: a routine is missing";
    return 0;
  }
  if (openblas_check(s) != 0) {
    static char wrong[160];
    snprintf(wrong, sizeof wrong,
             "OpenBLAS serial: its %s kernels compute a wrong product (TL_BENCH_OPENBLAS_CORETYPE "
             "picks others)",
             openblas_core);
    *why = wrong;
    return 0;
  }
  return 1;
}

/* ---- one problem: an n x n input, outputs and every buffer the direct calls need -------- */
typedef struct problem {
  int n, cplx;
  tl_dtype dtype;
  const stack *st; /* for the direct contestants */
  tl_exec *exec;
  tl_tensor a, b, c, out1, out2, s;
  int64_t *pivots;
  void *work_a, *tau, *work, *u, *vt;
  double *sv, *rwork;
  fint *ipiv, *iwork, lwork;
} problem;

static void problem_make(problem *p, tl_dtype dtype, int n, tl_exec *exec) {
  memset(p, 0, sizeof *p);
  p->n = n;
  p->dtype = dtype;
  p->cplx = dtype == TL_C128;
  p->exec = exec;
  int64_t shape[2] = {n, n};
  tl_status status;
  if ((status = tl_tensor_create(dtype, 2, shape, &p->a)) != TL_OK ||
      (status = tl_tensor_create(dtype, 2, shape, &p->b)) != TL_OK ||
      (status = tl_tensor_create(dtype, 2, shape, &p->c)) != TL_OK ||
      (status = tl_tensor_create(dtype, 2, shape, &p->out1)) != TL_OK ||
      (status = tl_tensor_create(dtype, 2, shape, &p->out2)) != TL_OK ||
      (status = tl_tensor_create(TL_F64, 1, shape, &p->s)) != TL_OK)
    die("tl_tensor_create", status);
  size_t per = p->cplx || dtype == TL_C64 ? 2 : 1, count = (size_t)n * (size_t)n * per;
  for (size_t i = 0; i < count; i++) {
    double ai = sin(0.71 * (double)i) + (i % (per * (size_t)(n + 1)) == 0 ? 4.0 : 0.0);
    double bi = cos(0.37 * (double)i);
    if (dtype == TL_C64) /* single precision: GEMM rows only */
      ((float *)p->a.data)[i] = (float)ai, ((float *)p->b.data)[i] = (float)bi;
    else
      ((double *)p->a.data)[i] = ai, ((double *)p->b.data)[i] = bi;
  }
  size_t es = tl_dtype_size(dtype), nn = (size_t)n * (size_t)n;
  p->lwork = 5 * n * n + 64 * n;
  p->pivots = malloc(sizeof(int64_t) * (size_t)n);
  p->ipiv = malloc(sizeof(fint) * (size_t)n);
  p->iwork = malloc(sizeof(fint) * 8 * (size_t)n);
  p->work_a = malloc(es * nn);
  p->tau = malloc(es * (size_t)n);
  p->work = malloc(es * (size_t)p->lwork);
  p->u = malloc(es * nn);
  p->vt = malloc(es * nn);
  p->sv = malloc(sizeof(double) * (size_t)n);
  p->rwork = malloc(sizeof(double) * (5 * nn + 7 * (size_t)n));
}

static void problem_free(problem *p) {
  tl_tensor *ts[6] = {&p->a, &p->b, &p->c, &p->out1, &p->out2, &p->s};
  for (int i = 0; i < 6; i++) tl_tensor_release(ts[i]);
  free(p->pivots), free(p->ipiv), free(p->iwork), free(p->work_a), free(p->tau);
  free(p->work), free(p->u), free(p->vt), free(p->sv), free(p->rwork);
}

static void fresh_copy(problem *p) {
  memcpy(p->work_a, p->a.data, tl_dtype_size(p->dtype) * (size_t)p->n * (size_t)p->n);
}

/* ---- contestants ------------------------------------------------------------------------ */
static void tl_gemm_run(void *arg) {
  problem *p = arg;
  tl_status status =
      tl_gemm_into(p->exec, tl_scalar_real(1.0), &p->a, &p->b, tl_scalar_real(0.0), &p->c);
  if (status != TL_OK) die("tl_gemm_into", status);
}

static void direct_gemm_run(void *arg) {
  problem *p = arg;
  fint n = p->n;
  if (p->dtype == TL_C64) {
    float complex one = 1, zero = 0;
    p->st->cgemm("N", "N", &n, &n, &n, &one, p->a.data, &n, p->b.data, &n, &zero, p->c.data, &n, 1,
                 1);
  } else if (p->cplx) {
    double complex one = 1, zero = 0;
    p->st->zgemm("N", "N", &n, &n, &n, &one, p->a.data, &n, p->b.data, &n, &zero, p->c.data, &n, 1,
                 1);
  } else {
    double one = 1, zero = 0;
    p->st->dgemm("N", "N", &n, &n, &n, &one, p->a.data, &n, p->b.data, &n, &zero, p->c.data, &n, 1,
                 1);
  }
}

static void blis_gemm_run(void *arg) {
  problem *p = arg;
  tl__prov_gemm(p->dtype, p->n, p->n, p->n, tl_scalar_real(1.0), p->a.data, 1, p->n, p->b.data, 1,
                p->n, tl_scalar_real(0.0), p->c.data, 1, p->n);
}

static void tl_qr_run(void *arg) {
  problem *p = arg;
  tl_status status = tl_qr_into(p->exec, &p->a, &p->out1, &p->out2);
  if (status != TL_OK) die("tl_qr_into", status);
}

static void direct_qr_run(void *arg) {
  problem *p = arg;
  fint n = p->n, info;
  fresh_copy(p);
  blis_kernels(p->st, 1);
  if (p->cplx) {
    p->st->zgeqrf(&n, &n, p->work_a, &n, p->tau, p->work, &p->lwork, &info);
    p->st->zungqr(&n, &n, &n, p->work_a, &n, p->tau, p->work, &p->lwork, &info);
  } else {
    p->st->dgeqrf(&n, &n, p->work_a, &n, p->tau, p->work, &p->lwork, &info);
    p->st->dorgqr(&n, &n, &n, p->work_a, &n, p->tau, p->work, &p->lwork, &info);
  }
  blis_kernels(p->st, 0);
}

static void tl_svd_run(void *arg) {
  problem *p = arg;
  tl_status status = tl_svd_into(p->exec, NULL, &p->a, &p->out1, &p->s, &p->out2, NULL);
  if (status != TL_OK) die("tl_svd_into", status);
}

static void direct_svd_run(void *arg) {
  problem *p = arg;
  fint n = p->n, info;
  fresh_copy(p);
  blis_kernels(p->st, 1);
  if (p->cplx)
    p->st->zgesdd("S", &n, &n, p->work_a, &n, p->sv, p->u, &n, p->vt, &n, p->work, &p->lwork,
                  p->rwork, p->iwork, &info, 1);
  else
    p->st->dgesdd("S", &n, &n, p->work_a, &n, p->sv, p->u, &n, p->vt, &n, p->work, &p->lwork,
                  p->iwork, &info, 1);
  blis_kernels(p->st, 0);
}

static void tl_lu_run(void *arg) {
  problem *p = arg;
  tl_status status = tl_lu_into(p->exec, &p->a, &p->out1, p->pivots);
  if (status != TL_OK) die("tl_lu_into", status);
}

static void direct_lu_run(void *arg) {
  problem *p = arg;
  fint n = p->n, info;
  fresh_copy(p);
  blis_kernels(p->st, 1);
  if (p->cplx)
    p->st->zgetrf(&n, &n, p->work_a, &n, p->ipiv, &info);
  else
    p->st->dgetrf(&n, &n, p->work_a, &n, p->ipiv, &info);
  blis_kernels(p->st, 0);
}

/* The eigenproblem of a's lower triangle with vectors, the same algorithm on both sides:
 * tenlane's tl_eigh drives syevd / heevd's steps itself (src/linalg/eigh.c). */
static void tl_eigh_run(void *arg) {
  problem *p = arg;
  tl_status status = tl_eigh_into(p->exec, TL_LOWER, &p->a, &p->s, &p->out1);
  if (status != TL_OK) die("tl_eigh_into", status);
}

static void direct_eigh_run(void *arg) {
  problem *p = arg;
  fint n = p->n, info, liwork = 8 * n, lrwork = 5 * n * n + 7 * n;
  fresh_copy(p);
  blis_kernels(p->st, 1);
  if (p->cplx)
    p->st->zheevd("V", "L", &n, p->work_a, &n, p->sv, p->work, &p->lwork, p->rwork, &lrwork,
                  p->iwork, &liwork, &info, 1, 1);
  else
    p->st->dsyevd("V", "L", &n, p->work_a, &n, p->sv, p->work, &p->lwork, p->iwork, &liwork, &info,
                  1, 1);
  blis_kernels(p->st, 0);
  if (info != 0) die(p->cplx ? "zheevd" : "dsyevd", TL_E_PROVIDER);
}

/* ---- rows --------------------------------------------------------------------------------- */
static char names[160][96];
static int name_count;

static const char *name_of(const char *fmt, const char *a, int n, const char *b) {
  char *out = names[name_count++ % 160];
  snprintf(out, sizeof names[0], fmt, a, n, b);
  return out;
}

/* Options for one problem: about 20 ms of timed calls per contestant per round. */
static tl_bench_options budgeted(const tl_bench_options *opt, void (*run)(void *), void *arg) {
  tl_bench_options local = *opt;
  uint64_t t0 = tl_bench_now_ns();
  run(arg);
  double ns = (double)(tl_bench_now_ns() - t0);
  int per_round = (int)(2e7 / (ns + 1.0));
  if (per_round < 1) per_round = 1;
  if (per_round < local.per_round) local.per_round = per_round;
  if (ns > 2e7 && local.rounds > 5) local.rounds = 5;
  local.settle_ms = ns > 2e6 ? 0 : 2;
  return local;
}

typedef struct route {
  const char *what; /* "gemm", "qr", ... */
  const char *tl_name, *direct_name;
  void (*tl_run)(void *);
  void (*direct_run)(void *);
} route;

static void bench_route(tl_bench_table *table, const tl_bench_options *opt, const route *r,
                        problem *p, const stack *ob, const char *ob_why, const stack *ref) {
  const char *dt = tl_dtype_name(p->dtype);
  problem pob = *p, pref = *p;
  pob.st = ob;
  pref.st = ref;
  tl_bench_contestant c[3];
  int count = 0;
  c[count++] = (tl_bench_contestant){"ref", r->direct_run, &pref, {0, 0, 0}};
  if (ob != NULL) c[count++] = (tl_bench_contestant){"openblas", r->direct_run, &pob, {0, 0, 0}};
  if (strcmp(r->what, "gemm") == 0) /* BLIS direct in place of reference BLAS's gemm_ */
    c[0] = (tl_bench_contestant){"blis", blis_gemm_run, &pref, {0, 0, 0}};
  c[count++] = (tl_bench_contestant){"tl", r->tl_run, p, {0, 0, 0}};
  tl_bench_options local = budgeted(opt, r->direct_run, &pref);
  if (tl_bench_alternate(c, count, &local) != 0) exit(1);
  const char *ref_name = strcmp(r->what, "gemm") == 0
                             ? name_of("%s n=%d BLIS bli_?gemm_ex (tenlane ctx)%s", dt, p->n, "")
                             : name_of("%s n=%d %s", dt, p->n, ref->name);
  const char *ob_name = name_of("%s n=%d OpenBLAS serial %s", dt, p->n, r->direct_name);
  tl_bench_stats best = c[0].stats;
  const char *best_name = ref_name;
  if (ob != NULL) {
    tl_bench_table_add(table, ob_name, c[1].stats, NULL, NULL);
    tl_bench_table_add(table, ref_name, c[0].stats, ob_name, &c[1].stats);
    if (c[1].stats.median_ns < best.median_ns) best = c[1].stats, best_name = ob_name;
  } else {
    tl_bench_table_add(table, name_of("%s n=%d %s", dt, p->n, ob_why), c[0].stats, NULL, NULL);
    tl_bench_stats none = {NAN, NAN, 0};
    tl_bench_table_add(table, ob_name, none, NULL, NULL);
    tl_bench_table_add(table, ref_name, c[0].stats, NULL, NULL);
  }
  tl_bench_table_add(table, name_of("%s n=%d %s", dt, p->n, r->tl_name), c[count - 1].stats,
                     best_name, &best);
}

/* ---- tiny complex --------------------------------------------------------------------------- */
typedef struct tiny {
  tl_dtype dtype;
  int n;
  tl_exec *exec;
  tl_session *one, *two;
  tl_tensor a[2], b[2], c[2]; /* per lane */
  int cpus[2];                /* the CPUs of the two-thread context's workers */
  int pinned;                 /* the CPU the calling thread is pinned to; -1: none */
} tiny;

static void tiny_call(void *arg) {
  tiny *t = arg;
  tl_status status =
      tl_gemm_into(t->exec, tl_scalar_real(1.0), &t->a[0], &t->b[0], tl_scalar_real(0.0), &t->c[0]);
  if (status != TL_OK) die("tl_gemm_into", status);
}

static int tiny_item(tl_exec *exec, size_t item, int lane, void *arg) {
  (void)item;
  tiny *t = arg;
  for (int r = 0; r < 10; r++) {
    tl_status status = tl_gemm_into(exec, tl_scalar_real(1.0), &t->a[lane], &t->b[lane],
                                    tl_scalar_real(0.0), &t->c[lane]);
    if (status != TL_OK) return (int)status;
  }
  return 0;
}

#define TINY_ITEMS 400

static void tiny_map(tl_session *session, tiny *t) {
  tl_map_outcome outcome;
  tl_status status = tl_map(session, TINY_ITEMS, tiny_item, t, &outcome);
  if (status != TL_OK) die("tl_map", status);
}
/* The one-lane map runs inline on the calling thread: unpinned for the 1-lane and 2-lane
 * rows (the driver of the two-thread context must be free to run anywhere), pinned to one
 * worker CPU for the rows that measure each CPU's own rate. The pinning changes at the first
 * call of a contestant's turn, which its settle calls absorb. */
static void caller_pin(tiny *t, int cpu) {
  if (t->pinned == cpu) return;
  if (cpu < 0 ? tl_bench_unpin_self() : tl_bench_pin_self(cpu)) {
    fprintf(stderr, "bench_providers: could not %s the calling thread\n",
            cpu < 0 ? "unpin" : "pin");
    exit(1);
  }
  t->pinned = cpu;
}
static void tiny_map_one(void *arg) {
  caller_pin(arg, -1);
  tiny_map(((tiny *)arg)->one, arg);
}
static void tiny_map_two(void *arg) {
  caller_pin(arg, -1);
  tiny_map(((tiny *)arg)->two, arg);
}
static void tiny_map_cpu0(void *arg) {
  caller_pin(arg, ((tiny *)arg)->cpus[0]);
  tiny_map(((tiny *)arg)->one, arg);
}
static void tiny_map_cpu1(void *arg) {
  caller_pin(arg, ((tiny *)arg)->cpus[1]);
  tiny_map(((tiny *)arg)->one, arg);
}

static void tiny_make(tiny *t, tl_dtype dtype, int n) {
  int64_t shape[2] = {n, n};
  t->dtype = dtype;
  t->n = n;
  for (int l = 0; l < 2; l++) {
    tl_tensor *ts[3] = {&t->a[l], &t->b[l], &t->c[l]};
    for (int i = 0; i < 3; i++) {
      tl_status status = tl_tensor_create(dtype, 2, shape, ts[i]);
      if (status != TL_OK) die("tl_tensor_create", status);
      memset(ts[i]->data, 0, tl_dtype_size(dtype) * (size_t)n * (size_t)n);
    }
  }
}

static void tiny_free(tiny *t) {
  for (int l = 0; l < 2; l++)
    tl_tensor_release(&t->a[l]), tl_tensor_release(&t->b[l]), tl_tensor_release(&t->c[l]);
}

static void bench_tiny(tl_bench_table *table, const tl_bench_options *opt, tl_exec *exec) {
  static const int sizes[2] = {4, 16};
  for (int z = 0; z < 2; z++) {
    tiny real, cplx;
    memset(&real, 0, sizeof real), memset(&cplx, 0, sizeof cplx);
    tiny_make(&real, TL_F64, sizes[z]);
    tiny_make(&cplx, TL_C128, sizes[z]);
    real.exec = cplx.exec = exec;
    tl_bench_contestant c[2] = {{"f64", tiny_call, &real, {0, 0, 0}},
                                {"c128", tiny_call, &cplx, {0, 0, 0}}};
    tl_bench_options local = *opt;
    if (local.settle_ms > 2) local.settle_ms = 2;
    if (tl_bench_alternate(c, 2, &local) != 0) exit(1);
    const char *anchor = name_of("%s n=%d tl_gemm_into, 1 thread%s", "f64", sizes[z], "");
    tl_bench_table_add(table, anchor, c[0].stats, NULL, NULL);
    tl_bench_table_add(
        table, name_of("%s n=%d tl_gemm_into, 1 thread (aim <= 4x f64)%s", "c128", sizes[z], ""),
        c[1].stats, anchor, &c[0].stats);
    tiny_free(&real), tiny_free(&cplx);
  }
}

/* ---- the same map by hand: two plain threads ---------------------------------------------
 * What a user could write without tenlane's pool: two threads pinned to the two CPUs, each
 * with its own one-thread session (opened on that thread), woken per call through a futex
 * after spinning 200 us as tenlane's workers do, pulling the same 400 items from one atomic
 * counter in runs sized as tl_map sizes them; the caller sleeps until both are done, as tenlane's
 * driver does on a machine with as many workers as CPUs. Both sides pay the host's wake-ups and
 * share its CPUs alike, so 2 lanes against this pair is tenlane's own cost. */
typedef struct pair pair;
typedef struct pair_arg {
  pair *p;
  int index;
} pair_arg;

struct pair {
  tiny *t; /* its cpus are the threads' */
  pthread_t threads[2];
  pair_arg args[2];
  _Alignas(64) atomic_uint go;   /* bumped per call; UINT32_MAX stops the threads */
  _Alignas(64) atomic_uint done; /* threads finished with this call */
  _Alignas(64) atomic_size_t next;
  atomic_int ready, failed;
};

static long futex(atomic_uint *word, int op, unsigned value) {
  return syscall(SYS_futex, (unsigned *)word, op, value, NULL, NULL, 0);
}

static void *pair_thread(void *arg) {
  pair *p = ((pair_arg *)arg)->p;
  const int k = ((pair_arg *)arg)->index;
  tl_bench_held held;
  if (tl_bench_pin_self(p->t->cpus[k]) != 0) {
    atomic_store(&p->failed, 1);
    atomic_fetch_add(&p->ready, 1);
    return NULL;
  }
  tl_bench_held_open(&held, "bench_providers", 1, 0, TL_WAIT);
  atomic_fetch_add(&p->ready, 1);
  unsigned seen = 0;
  for (;;) {
    const uint64_t until = tl_bench_now_ns() + 200000;
    unsigned now;
    for (unsigned spins = 1; (now = atomic_load(&p->go)) == seen; spins++) {
      if ((spins & 63u) != 0) continue;
      if (tl_bench_now_ns() < until)
        sched_yield();
      else
        futex(&p->go, FUTEX_WAIT_PRIVATE, seen);
    }
    seen = now;
    if (now == UINT32_MAX) break;
    /* Runs of items sized as tl_map sizes them (src/map/chunk.c), so the pair and the map
     * run the same algorithm. */
    for (size_t chunk = 1;;) {
      size_t want = tl__map_chunk_bound(
          TINY_ITEMS, atomic_load_explicit(&p->next, memory_order_relaxed), 2, chunk);
      size_t first = atomic_fetch_add_explicit(&p->next, want, memory_order_relaxed);
      if (first >= TINY_ITEMS) break;
      size_t end = TINY_ITEMS - first < want ? TINY_ITEMS : first + want;
      uint64_t started = tl_bench_now_ns();
      for (size_t item = first; item < end; item++)
        if (tiny_item(held.exec, item, k, p->t) != 0) atomic_store(&p->failed, 1);
      chunk = tl__map_chunk_next(chunk, tl_bench_now_ns() - started);
    }
    if (atomic_fetch_add(&p->done, 1) == 1) futex(&p->done, FUTEX_WAKE_PRIVATE, 1);
  }
  tl_bench_held_close(&held);
  return NULL;
}

static void pair_call(void *arg) {
  pair *p = arg;
  caller_pin(p->t, -1);
  atomic_store(&p->next, 0);
  atomic_store(&p->done, 0);
  atomic_fetch_add(&p->go, 1);
  futex(&p->go, FUTEX_WAKE_PRIVATE, 2);
  unsigned done;
  while ((done = atomic_load(&p->done)) < 2) futex(&p->done, FUTEX_WAIT_PRIVATE, done);
  if (atomic_load(&p->failed)) die("tl_gemm_into (plain threads)", TL_E_INVALID);
}

static int pair_start(pair *p, tiny *t) {
  memset(p, 0, sizeof *p);
  p->t = t;
  for (int k = 0; k < 2; k++) {
    p->args[k].p = p;
    p->args[k].index = k;
    if (pthread_create(&p->threads[k], NULL, pair_thread, &p->args[k]) != 0) return -1;
  }
  while (atomic_load(&p->ready) < 2) sched_yield();
  return atomic_load(&p->failed) ? -1 : 0;
}

static void pair_stop(pair *p) {
  atomic_store(&p->go, UINT32_MAX);
  futex(&p->go, FUTEX_WAKE_PRIVATE, 2);
  for (int k = 0; k < 2; k++) pthread_join(p->threads[k], NULL);
}

/* 1 lane against 2 lanes, and the host's own bound on the 2-lane time: on this shared host
 * one CPU at times runs the same code markedly slower than the other (a probe measured 670
 * against 420 cycles per n = 4 c128 GEMM, alone on each CPU, and the other way round seconds
 * later), so the rows also time the 1-lane map with the calling thread pinned to each of the
 * two CPUs the 2-lane context's workers run on. 2 lanes cannot beat both CPUs' rates
 * added: t_a t_b / (t_a + t_b), a derived row (no p99). */
static void bench_lanes(tl_bench_table *table, const tl_bench_options *opt, tl_session *one,
                        tl_session *two, const int *cpus) {
  static const int sizes[2] = {4, 16};
  for (int z = 0; z < 2; z++) {
    tiny t;
    memset(&t, 0, sizeof t);
    tiny_make(&t, TL_C128, sizes[z]);
    t.one = one;
    t.two = two;
    t.cpus[0] = cpus[0];
    t.cpus[1] = cpus[1];
    t.pinned = -1;
    static pair plain;
    if (pair_start(&plain, &t) != 0) {
      fprintf(stderr, "bench_providers: could not start the two plain threads\n");
      exit(1);
    }
    tl_bench_contestant c[5] = {{"1 lane", tiny_map_one, &t, {0, 0, 0}},
                                {"2 lanes", tiny_map_two, &t, {0, 0, 0}},
                                {"1 lane, CPU a", tiny_map_cpu0, &t, {0, 0, 0}},
                                {"1 lane, CPU b", tiny_map_cpu1, &t, {0, 0, 0}},
                                {"2 plain threads", pair_call, &plain, {0, 0, 0}}};
    tl_bench_options local = budgeted(opt, tiny_map_one, &t);
    if (local.settle_ms < 1) local.settle_ms = 1; /* room for the pinning change */
    if (tl_bench_alternate(c, 5, &local) != 0) exit(1);
    pair_stop(&plain);
    caller_pin(&t, -1);
    const char *anchor =
        name_of("%s n=%d tl_map 400 items x 10 GEMMs, 1 lane%s", "c128", sizes[z], "");
    tl_bench_table_add(table, anchor, c[0].stats, NULL, NULL);
    tl_bench_table_add(table,
                       name_of("%s n=%d tl_map 400 items x 10 GEMMs, 2 lanes (aim <= 0.54x)%s",
                               "c128", sizes[z], ""),
                       c[1].stats, anchor, &c[0].stats);
    for (int k = 0; k < 2; k++) {
      char cpu_text[16];
      snprintf(cpu_text, sizeof cpu_text, "%d (t_%c)", cpus[k], k == 0 ? 'a' : 'b');
      tl_bench_table_add(
          table, name_of("%s n=%d the same, 1 lane, caller on CPU %s", "c128", sizes[z], cpu_text),
          c[2 + k].stats, anchor, &c[0].stats);
    }
    const double t0 = c[2].stats.median_ns, t1 = c[3].stats.median_ns;
    tl_bench_stats bound = {
        t0 * t1 / (t0 + t1), NAN,
        c[2].stats.count < c[3].stats.count ? c[2].stats.count : c[3].stats.count};
    const char *bound_name =
        name_of("%s n=%d host bound for 2 lanes, t_a t_b / (t_a + t_b)%s", "c128", sizes[z], "");
    tl_bench_table_add(table, bound_name, bound, anchor, &c[0].stats);
    tl_bench_table_add(table,
                       name_of("%s n=%d 2 lanes against the host bound%s", "c128", sizes[z], ""),
                       c[1].stats, bound_name, &bound);
    const char *plain_name = name_of("%s n=%d the same by hand on 2 plain threads (futex-woken)%s",
                                     "c128", sizes[z], "");
    tl_bench_table_add(table, plain_name, c[4].stats, anchor, &c[0].stats);
    tl_bench_table_add(
        table, name_of("%s n=%d 2 lanes against the 2 plain threads%s", "c128", sizes[z], ""),
        c[1].stats, plain_name, &c[4].stats);
    tiny_free(&t);
  }
}

/* ---- what each replacement earns (issue 30: kept only for a 15% gain on a route) -------- */

/* One of tenlane's hand-written BLAS/LAPACK replacements that can be turned off at run time:
 * its switch (a variable and the values that turn the replacement on and off: off sends
 * its work to the provider), the ISA level it needs to be in use at all, the user-level
 * routes it sits under and the dtypes it serves. */
typedef struct replacement {
  const char *name, *env_name; /* env_name: its TL_BENCH_REPLACEMENTS word */
  int *cap;
  int on, off;
  int level;
  const char *routes;  /* among "gemm", "qr", "svd", "lu", "contract" */
  int dtypes;          /* bits: 1 f64, 2 c128, 4 c64 (GEMM and contraction only) */
  void (*apply)(void); /* NULL, or what makes a change of *cap take effect */
} replacement;

/* The switch of the level-1 row: 1 puts BLIS's own complex level-1 kernels back into its
 * contexts (tl__prov_own_level1), between calls, never during one. */
static int level1_off = 0;
static void level1_apply(void) { tl__prov_own_level1(!level1_off); }

/* One side of a with/without pair: the switch set, then the route's call. */
typedef struct capped {
  void (*run)(void *);
  void *arg;
  int *cap, value;
  void (*apply)(void);
} capped;

static void capped_run(void *arg) {
  capped *c = arg;
  if (*c->cap != c->value) {
    *c->cap = c->value;
    if (c->apply != NULL) c->apply();
  }
  c->run(c->arg);
}

/* The contraction route's rows: complex pairwise contractions through tl_einsum_into (the
 * binary contraction and its GEMM, src/kernels/contract.c) on a held one-thread session, in
 * shapes a tensor network makes: a tall-skinny product, a wide one, and 3-index tensors
 * contracted over their last index. m, k, n: the GEMM the contraction becomes. */
typedef struct contraction_case {
  const char *spec;
  int rank_a;
  int64_t shape_a[3], shape_b[2];
  int64_t m, k, n;
} contraction_case;

static const contraction_case contraction_cases[] = {
    {"abc,cd->abd", 3, {64, 64, 64}, {64, 64}, 4096, 64, 64},
    {"ab,bc->ac", 2, {4096, 64, 0}, {64, 64}, 4096, 64, 64},
    {"ab,bc->ac", 2, {256, 1000, 0}, {1000, 300}, 256, 1000, 300},
    {"ab,bc->ac", 2, {500, 500, 0}, {500, 40}, 500, 500, 40},
    {"abc,cd->abd", 3, {16, 32, 300}, {300, 200}, 512, 300, 200},
};
#define CONTRACTION_CASES (int)(sizeof contraction_cases / sizeof contraction_cases[0])

typedef struct contraction_problem {
  const contraction_case *cc;
  tl_exec *exec;
  tl_tensor a, b, c;
} contraction_problem;

static void contraction_make(contraction_problem *p, const contraction_case *cc, tl_dtype dtype,
                             tl_exec *exec) {
  memset(p, 0, sizeof *p);
  p->cc = cc;
  p->exec = exec;
  int64_t shape_c[3] = {cc->shape_a[0], cc->shape_a[1], cc->shape_b[1]};
  if (cc->rank_a == 2) shape_c[1] = cc->shape_b[1];
  tl_status status;
  if ((status = tl_tensor_create(dtype, cc->rank_a, cc->shape_a, &p->a)) != TL_OK ||
      (status = tl_tensor_create(dtype, 2, cc->shape_b, &p->b)) != TL_OK ||
      (status = tl_tensor_create(dtype, cc->rank_a, shape_c, &p->c)) != TL_OK)
    die("tl_tensor_create", status);
  const size_t na = (size_t)tl_tensor_numel(&p->a) * 2, nb = (size_t)tl_tensor_numel(&p->b) * 2;
  for (size_t i = 0; i < na; i++) {
    const double v = sin(0.71 * (double)i);
    if (dtype == TL_C64)
      ((float *)p->a.data)[i] = (float)v;
    else
      ((double *)p->a.data)[i] = v;
  }
  for (size_t i = 0; i < nb; i++) {
    const double v = cos(0.37 * (double)i);
    if (dtype == TL_C64)
      ((float *)p->b.data)[i] = (float)v;
    else
      ((double *)p->b.data)[i] = v;
  }
}

static void contraction_free(contraction_problem *p) {
  tl_tensor_release(&p->a), tl_tensor_release(&p->b), tl_tensor_release(&p->c);
}

static void tl_contraction_run(void *arg) {
  contraction_problem *p = arg;
  const tl_tensor *ops[2] = {&p->a, &p->b};
  tl_status status = tl_einsum_into(p->exec, p->cc->spec, 2, ops, &p->c);
  if (status != TL_OK) die("tl_einsum_into", status);
}

#define REPLACEMENT_KEEP_GAIN 0.15

/* One row: `run` on `arg` with and without the replacement, alternated; prints the row and
 * keeps the best gain and where it was (`where`, best_where holds 96 bytes). */
static void replacement_row(const tl_bench_options *opt, const replacement *rep,
                            void (*run)(void *), void *arg, const char *route_name, tl_dtype dtype,
                            const char *size, const char *spec, const char *where,
                            double *best_gain, char *best_where) {
  capped with = {run, arg, rep->cap, rep->on, rep->apply},
         without = {run, arg, rep->cap, rep->off, rep->apply};
  tl_bench_contestant c[2] = {{"with", capped_run, &with, {0, 0, 0}},
                              {"without", capped_run, &without, {0, 0, 0}}};
  tl_bench_options local = budgeted(opt, capped_run, &without);
  if (tl_bench_alternate(c, 2, &local) != 0) exit(1);
  const double gain = c[1].stats.median_ns / c[0].stats.median_ns - 1.0;
  printf("%-18s %-8s %-5s %13s %14.1f %14.1f %7.1f%%  %s\n", rep->env_name, route_name,
         tl_dtype_name(dtype), size, c[0].stats.median_ns / 1e3, c[1].stats.median_ns / 1e3,
         gain * 100, spec);
  if (gain > *best_gain) {
    *best_gain = gain;
    snprintf(best_where, 96, "%s", where);
  }
}

/* TL_BENCH_REPLACEMENTS_ROUTES=gemm,contract,... runs the rows of those routes only. */
static int route_picked(const char *route_name) {
  const char *routes = getenv("TL_BENCH_REPLACEMENTS_ROUTES");
  return routes == NULL || word_in(routes, route_name);
}

/* With and without each replacement, alternated in the same run on the same input: the gain
 * is the time without over the time with, less 1; a replacement is kept where some route
 * gains at least 15%. Prints its own table (route, dtype, n, the two medians, the gain), then
 * one verdict per replacement. TL_BENCH_REPLACEMENTS_ONLY=off-gemv,... runs those rows only
 * (each row's run fits a few minutes; the whole table takes longer), and
 * TL_BENCH_REPLACEMENTS_ROUTES=gemm,contract,... those routes only (the verdict says so).
 * off-blis-level1 puts BLIS's reference kernels back into its contexts between calls
 * (tl__prov_own_level1). Its gain at TL_ISA=avx2, where gemv.c and ger.c leave LAPACK's
 * level-2 calls to BLIS, differs: run the group there too. (nrm2.c and lange.c had rows until
 * 2026-12-05, when they went under the 15% rule.) */
#define REPLACEMENT_COUNT 6
static void bench_replacements(const tl_bench_options *opt, const route *routes, int route_count,
                               tl_exec *exec, int size_count) {
  static const int sizes[3] = {64, 256, 512};
  static const tl_dtype dtypes[3] = {TL_F64, TL_C128, TL_C64};
  const replacement reps[REPLACEMENT_COUNT] = {
      {"LAPACK's BLAS calls on tenlane's kernels, all three files together (gemv.c, ger.c, "
       "gemm_blas.c + gemm_narrow.c)",
       "off-blas", &tl__blas_isa_cap, 1, 0, TL__ISA_AVX512, "qr,svd,lu", 3, NULL},
      {"LAPACK's gemv calls on tenlane's kernels (gemv.c)", "off-gemv", &tl__blas_off, 0, OWN_GEMV,
       TL__ISA_AVX512, "qr,svd,lu", 3, NULL},
      {"LAPACK's ger calls on tenlane's kernels (ger.c)", "off-ger", &tl__blas_off, 0, OWN_GER,
       TL__ISA_AVX512, "qr,svd,lu", 3, NULL},
      {"LAPACK's narrow gemm calls on tenlane's kernels (gemm_blas.c + gemm_narrow.c)",
       "off-gemm-blas", &tl__blas_off, 0, OWN_GEMM, TL__ISA_AVX512, "qr,svd,lu", 3, NULL},
      {"complex GEMM past the tiny kernel on tenlane's packed kernel (gemm_packed_complex.c)",
       "off-packed-complex", &tl__packed_complex_off, 0, 1, TL__ISA_AVX512,
       "gemm,qr,svd,lu,contract", 6, NULL},
      {"complex-double level-1v/1f kernels in BLIS's contexts (blis_level1.c; off: BLIS's "
       "reference kernels back in their slots)",
       "off-blis-level1", &level1_off, 0, 1, TL__ISA_AVX2, "qr,svd,lu", 2, level1_apply},
  };
  const char *only = getenv("TL_BENCH_REPLACEMENTS_ONLY");
  printf(
      "\n== replacements: each with and without, same run, alternated (gain = time without "
      "/ time with - 1; kept at >= %.0f%% on some route)\n",
      REPLACEMENT_KEEP_GAIN * 100);
  printf("%-18s %-8s %-5s %13s %14s %14s %8s  %s\n", "replacement", "route", "dtype",
         "n (m x k x n)", "with (us)", "without (us)", "gain", "spec");
  char verdicts[REPLACEMENT_COUNT][400];
  int shown[REPLACEMENT_COUNT] = {0};
  for (int i = 0; i < REPLACEMENT_COUNT; i++) {
    const replacement *rep = &reps[i];
    if (only != NULL && !word_in(only, rep->env_name)) continue;
    shown[i] = 1;
    const int saved = *rep->cap;
    double best_gain = -INFINITY;
    char best_where[96] = "";
    for (int r = 0; r < route_count; r++) {
      if (strstr(rep->routes, routes[r].what) == NULL || !route_picked(routes[r].what)) continue;
      for (int d = 0; d < 3; d++)
        for (int z = 0; z < size_count; z++) {
          /* c64: the GEMM route only (the routes' c64 LAPACK is not timed here) */
          if (!(rep->dtypes & (1 << d)) || (d == 2 && strcmp(routes[r].what, "gemm") != 0))
            continue;
          problem p;
          problem_make(&p, dtypes[d], sizes[z], exec);
          char size[32], where[96];
          snprintf(size, sizeof size, "%d", sizes[z]);
          snprintf(where, sizeof where, "%s %s n=%d", routes[r].what, tl_dtype_name(dtypes[d]),
                   sizes[z]);
          replacement_row(opt, rep, routes[r].tl_run, &p, routes[r].what, dtypes[d], size, "",
                          where, &best_gain, best_where);
          problem_free(&p);
        }
    }
    /* The contraction route (complex; the full run only, a few hundred ms of calls each). */
    const int contract = strstr(rep->routes, "contract") != NULL && route_picked("contract");
    for (int d = 1; d < 3 && size_count > 1 && contract; d++)
      for (int x = 0; x < CONTRACTION_CASES && (rep->dtypes & (1 << d)); x++) {
        const contraction_case *cc = &contraction_cases[x];
        contraction_problem p;
        contraction_make(&p, cc, dtypes[d], exec);
        char size[32], where[96];
        snprintf(size, sizeof size, "%lldx%lldx%lld", (long long)cc->m, (long long)cc->k,
                 (long long)cc->n);
        snprintf(where, sizeof where, "contract %s %s m x k x n = %s", tl_dtype_name(dtypes[d]),
                 cc->spec, size);
        replacement_row(opt, rep, tl_contraction_run, &p, "contract", dtypes[d], size, cc->spec,
                        where, &best_gain, best_where);
        contraction_free(&p);
      }
    if (*rep->cap != saved) {
      *rep->cap = saved;
      if (rep->apply != NULL) rep->apply();
    }
    const char *verdict = tl__isa_level() < rep->level ? "not in use on this CPU (ISA level)"
                          : best_gain >= REPLACEMENT_KEEP_GAIN ? "kept"
                                                               : "remove";
    const char *picked = getenv("TL_BENCH_REPLACEMENTS_ROUTES");
    snprintf(verdicts[i], sizeof verdicts[i], "%s: %s%s%.40s%s, best gain %.1f%% (%s) [%s]",
             rep->env_name, verdict, picked != NULL ? " (on the routes " : "",
             picked != NULL ? picked : "", picked != NULL ? " only)" : "", best_gain * 100,
             best_where, rep->name);
  }
  printf("verdicts (isa %s, provider %s%s):\n", tl__isa_name(tl__isa_level()),
         tl_kernels_provider(),
         size_count > 1 ? "" : "; --quick: n = 64 only, no contraction rows, not a decision");
  for (int i = 0; i < REPLACEMENT_COUNT; i++)
    if (shown[i]) printf("  %s\n", verdicts[i]);
}

/* TL_BENCH_PROVIDERS_ONLY=gemm|qr|svd|lu|eigh|c64|tiny|lanes|replacements runs those groups only
 * (for investigation; several may be named, e.g. "tiny,lanes"). */
static int wanted(const char *group) {
  const char *only = getenv("TL_BENCH_PROVIDERS_ONLY");
  return only == NULL || strstr(only, group) != NULL;
}

int main(int argc, char **argv) {
  tl_bench_env env;
  if (tl_bench_env_init(argc, argv, &env) != 0) return 2;
  int quick = env.opt.rounds <= 2 && env.opt.per_round <= 200;
  /* Sets tenlane's BLIS context process-wide (and 1m on this thread) before any direct call
   * into the reference LAPACK the anchors use. */
  tl__providers_init();
  replacements_from_env();
  stack ob, ref = reference_stack();
  const char *ob_why = NULL;
  int have_ob = load_openblas(quick, &ob, &ob_why);

  if (env.cpu_count > 0) tl_bench_pin_self(env.cpus[0]);
  tl_bench_held held;
  tl_bench_held_open(&held, "bench_providers", 1, 0, TL_NOWAIT);
  /* One table per dtype (a table holds at most TL_BENCH_MAX_ROWS rows). */
  static tl_bench_table tables[4];
  tl_bench_table_init(&tables[0], "providers f64, 1 thread", env.round_trip, &env.opt);
  tl_bench_table_init(&tables[1], "providers c128, 1 thread", env.round_trip, &env.opt);
  tl_bench_table_init(&tables[2], "providers c64 GEMM, 1 thread", env.round_trip, &env.opt);
  tl_bench_table_init(&tables[3], "providers c128 tiny GEMM, 1 vs 2 lanes", env.round_trip,
                      &env.opt);
  const route routes[5] = {
      {"gemm", "tl_gemm_into", "?gemm", tl_gemm_run, direct_gemm_run},
      {"qr", "tl_qr_into", "?geqrf+?orgqr", tl_qr_run, direct_qr_run},
      {"svd", "tl_svd_into", "?gesdd", tl_svd_run, direct_svd_run},
      {"lu", "tl_lu_into", "?getrf", tl_lu_run, direct_lu_run},
      {"eigh", "tl_eigh_into", "?syevd/?heevd", tl_eigh_run, direct_eigh_run},
  };
  /* eigh also at n = 1024, where its cancellable steps (eigh.c) are the most numerous. */
  static const int gemm_sizes[4] = {64, 256, 1024}, la_sizes[4] = {64, 256, 512, 1024};
  const int size_count = quick ? 1 : 3;
  for (int d = 0; d < 2; d++)
    for (int r = 0; r < 5; r++)
      for (int z = 0; z < size_count + (r == 4 && !quick) && wanted(routes[r].what); z++) {
        problem p;
        problem_make(&p, d ? TL_C128 : TL_F64, r == 0 ? gemm_sizes[z] : la_sizes[z], held.exec);
        bench_route(&tables[d], &env.opt, &routes[r], &p, have_ob ? &ob : NULL, ob_why, &ref);
        problem_free(&p);
      }
  for (int z = 0; z < size_count && wanted("c64");
       z++) { /* c64: the GEMM route (the aims name no c64 LAPACK) */
    problem p;
    problem_make(&p, TL_C64, gemm_sizes[z], held.exec);
    bench_route(&tables[2], &env.opt, &routes[0], &p, have_ob ? &ob : NULL, ob_why, &ref);
    problem_free(&p);
  }
  if (wanted("tiny")) bench_tiny(&tables[1], &env.opt, held.exec);
  /* The replacements table prints as it goes, ahead of the other tables. */
  if (wanted("replacements")) bench_replacements(&env.opt, routes, 4, held.exec, size_count);
  tl_bench_held_close(&held);

  /* Lanes: a one-thread and a two-thread context side by side. */
  tl_bench_unpin_self();
  if (env.cpu_count > 1 && wanted("lanes")) {
    /* The two-thread context first, its workers pinned to the process's first two CPUs
     * (unpinned, the scheduler at times left both on one CPU for a whole run and the
     * 2-lane row read 0.8-0.9 of the 1-lane time); then the one-thread context. */
    tl_bench_held one, two;
    tl_bench_held_open_pinned(&two, "bench_providers", 2, env.cpus, 2, TL_WAIT);
    tl_bench_held_open(&one, "bench_providers", 1, 0, TL_WAIT);
    bench_lanes(&tables[3], &env.opt, one.session, two.session, env.cpus);
    tl_bench_held_close(&two);
    tl_bench_held_close(&one);
  }
  for (int t = 0; t < 4; t++) /* groups left out by TL_BENCH_PROVIDERS_ONLY print nothing */
    if (tables[t].count > 0) tl_bench_table_print(&tables[t], stdout);
  if (!env.opt.rows) {
    printf("\nprovider: %s\n", tl_kernels_provider());
    if (have_ob) printf("OpenBLAS anchor: %s kernels, by %s\n", openblas_core, openblas_env_note);
  }
  return 0;
}
