/* src/kernels/provider_blas.c: the provider boundary on a plain Fortran BLAS
 * (TL_PROVIDER=reference: Netlib's reference BLAS; TL_PROVIDER=openblas: OpenBLAS's serial
 * build). Built only for those providers (cmake/Providers.cmake), which names the provider
 * (TL_PROVIDER_NAME) for the provider string.
 *
 * Every call goes through the BLAS's Fortran interface (gfortran's: arguments by address,
 * 32-bit INTEGER, a hidden length after the character arguments). That interface takes
 * column-major matrices with one unit stride, so tl__prov_gemm maps each operand onto it:
 * a unit row stride is a column-major matrix, a unit column stride a transposed one, and a
 * row-major C is computed as C^T = B^T A^T. An operand with neither unit stride (or an
 * extent past INT_MAX) runs a plain loop instead, slow but correct and allocation-free;
 * routes hand such layouts rarely (gemm.c copies the worst ones first).
 *
 * Neither provider has anything for tenlane to choose: no context, no per-thread state.
 *
 * Concurrent callers. Reference BLAS keeps no state and runs unlocked. OpenBLAS's serial
 * build does not take concurrent callers safely, USE_LOCKING or not: in 0.3.21 (Debian 12's
 * libopenblas-serial-dev, built with USE_LOCKING) blas_memory_alloc holds its lock only
 * while it checks that the buffer pool is initialised; the search for a free buffer and the
 * store that marks it used run unlocked unless the library was built threaded (SMP), so two
 * threads can take the same buffer and overwrite each other's packed operands. Found as a
 * wrong singular value (test_provider_lanes: dgesdd from four lanes; 0.03 off on a 5.5 value
 * in a standalone C program calling dgesdd_ from four threads, none with a lock around it),
 * and read in the archive's own blas_memory_alloc (the lock taken and dropped before the
 * loop over the pool). The OpenBLAS build is told at run time (openblas_get_parallel: 0
 * serial, 1 pthreads, 2 OpenMP; the OpenMP build skips that lock entirely), not its patch
 * level, so every build but the pthreads one runs under one process-wide recursive lock
 * (tl__prov_lock, held by every call below and by src/linalg/lapack.c around its LAPACK
 * calls), and the provider string ends in "+lock". Lanes then take OpenBLAS one at a time:
 * correct, but its work does not scale with lanes. For the same reason, and because
 * OpenBLAS picks its kernels by shape (a block of C rounds differently from the whole), a
 * GEMM on OpenBLAS is never cut over a team (provider_split 0, gemm.c).
 *
 * src/linalg's replacements keep their tl__own_ names here (TL__BLAS_ENTRY in linalg_int.h)
 * and fall back on the routines below. OpenBLAS's LAPACK calls OpenBLAS's own routines;
 * reference LAPACK's ?gemm_ and ?gemv_ calls reach the tl__own_ entries (its archive is
 * linked from a copy with those calls renamed, cmake/Providers.cmake), so that they stop
 * computing once the route is cancelled, and every other call reaches reference BLAS. */
#include <complex.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"

#ifndef TL_PROVIDER_NAME
#error "provider_blas.c needs TL_PROVIDER_NAME (cmake/Providers.cmake)"
#endif

/* ---- The Fortran BLAS routines used (gfortran's calling convention) ---- */
#define TL__FGEMM(NAME, T)                                                                         \
  void NAME(const char *ta, const char *tb, const int *m, const int *n, const int *k,              \
            const T *alpha, const T *a, const int *lda, const T *b, const int *ldb, const T *beta, \
            T *c, const int *ldc, size_t ta_len, size_t tb_len);
TL__FGEMM(sgemm_, float)
TL__FGEMM(dgemm_, double)
TL__FGEMM(cgemm_, float complex)
TL__FGEMM(zgemm_, double complex)
#define TL__FGEMV(NAME, T)                                                                     \
  void NAME(const char *trans, const int *m, const int *n, const T *alpha, const T *a,         \
            const int *lda, const T *x, const int *incx, const T *beta, T *y, const int *incy, \
            size_t trans_len);
TL__FGEMV(sgemv_, float)
TL__FGEMV(dgemv_, double)
TL__FGEMV(cgemv_, float complex)
TL__FGEMV(zgemv_, double complex)
#define TL__FGER(NAME, T)                                                                        \
  void NAME(const int *m, const int *n, const T *alpha, const T *x, const int *incx, const T *y, \
            const int *incy, T *a, const int *lda);
TL__FGER(sger_, float)
TL__FGER(dger_, double)
TL__FGER(cgeru_, float complex)
TL__FGER(cgerc_, float complex)
TL__FGER(zgeru_, double complex)
TL__FGER(zgerc_, double complex)
#define TL__FTRMM(NAME, T)                                                                \
  void NAME(const char *side, const char *uplo, const char *transa, const char *diag,     \
            const int *m, const int *n, const T *alpha, const T *a, const int *lda, T *b, \
            const int *ldb, size_t side_len, size_t uplo_len, size_t transa_len, size_t diag_len);
TL__FTRMM(strmm_, float)
TL__FTRMM(dtrmm_, double)
TL__FTRMM(ctrmm_, float complex)
TL__FTRMM(ztrmm_, double complex)
#if TL_PROVIDER_OPENBLAS
char *openblas_get_corename(void);
int openblas_get_parallel(void);
#endif

/* ---- The lock (see the top of the file) ---- */

static pthread_mutex_t provider_mutex;
static int provider_locks; /* set once in tl__prov_start, read only after */

static void provider_mutex_init(void) {
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&provider_mutex, &attr);
  pthread_mutexattr_destroy(&attr);
}

void tl__prov_lock(void) {
  tl__providers_init();
  if (provider_locks) pthread_mutex_lock(&provider_mutex);
}

void tl__prov_unlock(void) {
  if (provider_locks) pthread_mutex_unlock(&provider_mutex);
}

/* ---- Set-up ---- */

int tl__prov_start(void) {
  provider_mutex_init(); /* used only where provider_locks is set */
#if TL_PROVIDER_OPENBLAS
  provider_locks = openblas_get_parallel() != 1;
#endif
  return TL__BLIS_SAW_OTHER;
}

void tl__prov_setup(const tl__cpu_features *features, tl__provider_choice *choice, char *name,
                    size_t size) {
  (void)features;
  choice->blis = TL__BLIS_DETECTED;
  choice->complex_1m = 0;
  choice->zen_c64_blocks = 0;
#if TL_PROVIDER_OPENBLAS
  choice->provider_split = 0; /* kernels picked by shape; calls serialized where locked */
  snprintf(name, size, "%s:%s%s", TL_PROVIDER_NAME, openblas_get_corename(),
           provider_locks ? "+lock" : "");
#else
  snprintf(name, size, "%s", TL_PROVIDER_NAME);
#endif
}

void tl__prov_thread(const tl__provider_choice *choice) { (void)choice; }

/* ---- Level 2 and 3 for LAPACK's calls (src/linalg) ---- */

static const char *trans_letter(int trans) { return trans == 0 ? "N" : trans == 1 ? "T" : "C"; }

/* A vector's address as the Fortran interface takes it (its lowest element) from its first
 * element (TL__BLAS_FIRST: the highest in memory for a negative increment). */
static const char *fortran_vector(const void *first, int64_t len, int64_t inc, size_t esize) {
  const char *p = first;
  return inc < 0 ? p + (len - 1) * inc * (int64_t)esize : p;
}

void tl__prov_gemv(tl_dtype dtype, int trans, int64_t m, int64_t n, const void *alpha,
                   const void *a, int64_t lda, const void *x, int64_t incx, const void *beta,
                   void *y, int64_t incy) {
  const int im = (int)m, in = (int)n, ilda = (int)lda, ix = (int)incx, iy = (int)incy;
  const int64_t len_x = trans == 0 ? n : m, len_y = trans == 0 ? m : n;
  const size_t es = tl_dtype_size(dtype);
  const void *xf = fortran_vector(x, len_x, incx, es);
  void *yf = (void *)fortran_vector(y, len_y, incy, es);
  const char *t = trans_letter(trans);
  tl__prov_lock();
  switch (dtype) {
    case TL_F32:
      sgemv_(t, &im, &in, alpha, a, &ilda, xf, &ix, beta, yf, &iy, 1);
      break;
    case TL_F64:
      dgemv_(t, &im, &in, alpha, a, &ilda, xf, &ix, beta, yf, &iy, 1);
      break;
    case TL_C64:
      cgemv_(t, &im, &in, alpha, a, &ilda, xf, &ix, beta, yf, &iy, 1);
      break;
    case TL_C128:
      zgemv_(t, &im, &in, alpha, a, &ilda, xf, &ix, beta, yf, &iy, 1);
      break;
  }
  tl__prov_unlock();
}

void tl__prov_gemm_blas(tl_dtype dtype, int ta, int tb, int64_t m, int64_t n, int64_t k,
                        const void *alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
                        const void *beta, void *c, int64_t ldc) {
  const int im = (int)m, in = (int)n, ik = (int)k, ila = (int)lda, ilb = (int)ldb, ilc = (int)ldc;
  const char *tra = trans_letter(ta), *trb = trans_letter(tb);
  tl__prov_lock();
  switch (dtype) {
    case TL_F32:
      sgemm_(tra, trb, &im, &in, &ik, alpha, a, &ila, b, &ilb, beta, c, &ilc, 1, 1);
      break;
    case TL_F64:
      dgemm_(tra, trb, &im, &in, &ik, alpha, a, &ila, b, &ilb, beta, c, &ilc, 1, 1);
      break;
    case TL_C64:
      cgemm_(tra, trb, &im, &in, &ik, alpha, a, &ila, b, &ilb, beta, c, &ilc, 1, 1);
      break;
    case TL_C128:
      zgemm_(tra, trb, &im, &in, &ik, alpha, a, &ila, b, &ilb, beta, c, &ilc, 1, 1);
      break;
  }
  tl__prov_unlock();
}

void tl__prov_ger(tl_dtype dtype, int conj_y, int64_t m, int64_t n, const void *alpha,
                  const void *x, int64_t incx, const void *y, int64_t incy, void *a, int64_t lda) {
  const int im = (int)m, in = (int)n, ix = (int)incx, iy = (int)incy, ilda = (int)lda;
  const size_t es = tl_dtype_size(dtype);
  const void *xf = fortran_vector(x, m, incx, es), *yf = fortran_vector(y, n, incy, es);
  tl__prov_lock();
  switch (dtype) {
    case TL_F32:
      sger_(&im, &in, alpha, xf, &ix, yf, &iy, a, &ilda);
      break;
    case TL_F64:
      dger_(&im, &in, alpha, xf, &ix, yf, &iy, a, &ilda);
      break;
    case TL_C64:
      (conj_y ? cgerc_ : cgeru_)(&im, &in, alpha, xf, &ix, yf, &iy, a, &ilda);
      break;
    case TL_C128:
      (conj_y ? zgerc_ : zgeru_)(&im, &in, alpha, xf, &ix, yf, &iy, a, &ilda);
      break;
  }
  tl__prov_unlock();
}

void tl__prov_trmm(tl_dtype dtype, int right, int upper, int trans, int unit_diag, int64_t m,
                   int64_t n, const void *alpha, const void *a, int64_t lda, void *b, int64_t ldb) {
  const int im = (int)m, in = (int)n, ila = (int)lda, ilb = (int)ldb;
  const char *side = right ? "R" : "L", *uplo = upper ? "U" : "L", *t = trans_letter(trans);
  const char *diag = unit_diag ? "U" : "N";
  tl__prov_lock();
  switch (dtype) {
    case TL_F32:
      strmm_(side, uplo, t, diag, &im, &in, alpha, a, &ila, b, &ilb, 1, 1, 1, 1);
      break;
    case TL_F64:
      dtrmm_(side, uplo, t, diag, &im, &in, alpha, a, &ila, b, &ilb, 1, 1, 1, 1);
      break;
    case TL_C64:
      ctrmm_(side, uplo, t, diag, &im, &in, alpha, a, &ila, b, &ilb, 1, 1, 1, 1);
      break;
    case TL_C128:
      ztrmm_(side, uplo, t, diag, &im, &in, alpha, a, &ila, b, &ilb, 1, 1, 1, 1);
      break;
  }
  tl__prov_unlock();
}

/* ---- Block sizes for cancellation (gemm.c) ---- */

void tl__prov_gemm_block(double *flops, int64_t *min_len) {
#if TL_PROVIDER_OPENBLAS
  /* As fast as BLIS, and it packs per call as BLIS does. */
  *flops = (double)(1LL << 32);
  *min_len = 128;
#else
  /* Reference BLAS's dgemm runs its loops at about 1 Gflop/s on one core (less when the
   * core is shared): 2^26 flops keep a block under about a tenth of a second, where 2^30
   * took seconds and a Ctrl-C on a large einsum came 4.4 s late. It packs nothing, so short
   * blocks cost only the calls. */
  *flops = (double)(1LL << 26);
  *min_len = 16;
#endif
}

/* ---- GEMM with general strides (tl__gemm_serial's last resort) ---- */

/* One operand of rows x cols with strides (rs, cs) as the Fortran interface takes it: 'N'
 * with leading dimension ld (unit row stride) or 'T' (unit column stride). 0 when it has
 * neither unit stride or a size past int. An extent of 1 leaves its stride unused. */
typedef struct fortran_operand {
  const char *trans;
  int ld;
} fortran_operand;

static int fortran_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, fortran_operand *op) {
  int64_t ld;
  if (rs == 1 && (cols <= 1 || cs >= rows)) {
    op->trans = "N";
    ld = cols <= 1 ? (rows > 1 ? rows : 1) : cs;
  } else if (cs == 1 && (rows <= 1 || rs >= cols)) {
    op->trans = "T";
    ld = rows <= 1 ? (cols > 1 ? cols : 1) : rs;
  } else {
    return 0;
  }
  if (ld > INT_MAX) return 0;
  op->ld = (int)ld;
  return 1;
}

/* C = alpha A B + beta C element by element (beta 0 does not read C): layouts the Fortran
 * interface cannot take. */
#define TL__GEMM_LOOP(NAME, T)                                                                     \
  static void NAME(int64_t m, int64_t n, int64_t k, T alpha, const T *a, int64_t rsa, int64_t csa, \
                   const T *b, int64_t rsb, int64_t csb, T beta, T *c, int64_t rsc, int64_t csc) { \
    for (int64_t j = 0; j < n; j++)                                                                \
      for (int64_t i = 0; i < m; i++) {                                                            \
        T sum = 0;                                                                                 \
        for (int64_t p = 0; p < k; p++) sum += a[i * rsa + p * csa] * b[p * rsb + j * csb];        \
        T *cij = c + i * rsc + j * csc;                                                            \
        *cij = beta == 0 ? alpha * sum : alpha * sum + beta * *cij;                                \
      }                                                                                            \
  }
TL__GEMM_LOOP(loop_s, float)
TL__GEMM_LOOP(loop_d, double)
TL__GEMM_LOOP(loop_c, float complex)
TL__GEMM_LOOP(loop_z, double complex)

void tl__prov_gemm(tl_dtype dtype, int64_t m, int64_t n, int64_t k, tl_scalar alpha, const void *a,
                   int64_t rsa, int64_t csa, const void *b, int64_t rsb, int64_t csb,
                   tl_scalar beta, void *c, int64_t rsc, int64_t csc) {
  tl__providers_init();
  if (m == 0 || n == 0) return;
  /* A C with a unit column stride only: C^T = B^T A^T, every operand transposed. */
  if (!(rsc == 1 && (n <= 1 || csc >= m)) && csc == 1) {
    const void *t = a;
    a = b;
    b = t;
    int64_t s = m;
    m = n;
    n = s;
    s = rsa, rsa = csb, csb = s;
    s = csa, csa = rsb, rsb = s;
    s = rsc, rsc = csc, csc = s;
  }
  fortran_operand fa, fb, fc;
  const int fits = m <= INT_MAX && n <= INT_MAX && k <= INT_MAX &&
                   fortran_layout(m, k, rsa, csa, &fa) && fortran_layout(k, n, rsb, csb, &fb) &&
                   fortran_layout(m, n, rsc, csc, &fc) && fc.trans[0] == 'N';
  const int im = (int)m, in = (int)n, ik = (int)k;
  tl__prov_lock();
  switch (dtype) {
    case TL_F64: {
      const double al = alpha.re, be = beta.re;
      if (fits)
        dgemm_(fa.trans, fb.trans, &im, &in, &ik, &al, a, &fa.ld, b, &fb.ld, &be, c, &fc.ld, 1, 1);
      else
        loop_d(m, n, k, al, a, rsa, csa, b, rsb, csb, be, c, rsc, csc);
      break;
    }
    case TL_F32: {
      const float al = (float)alpha.re, be = (float)beta.re;
      if (fits)
        sgemm_(fa.trans, fb.trans, &im, &in, &ik, &al, a, &fa.ld, b, &fb.ld, &be, c, &fc.ld, 1, 1);
      else
        loop_s(m, n, k, al, a, rsa, csa, b, rsb, csb, be, c, rsc, csc);
      break;
    }
    case TL_C64: {
      const float complex al = (float)alpha.re + I * (float)alpha.im;
      const float complex be = (float)beta.re + I * (float)beta.im;
      if (fits)
        cgemm_(fa.trans, fb.trans, &im, &in, &ik, &al, a, &fa.ld, b, &fb.ld, &be, c, &fc.ld, 1, 1);
      else
        loop_c(m, n, k, al, a, rsa, csa, b, rsb, csb, be, c, rsc, csc);
      break;
    }
    case TL_C128: {
      const double complex al = alpha.re + I * alpha.im, be = beta.re + I * beta.im;
      if (fits)
        zgemm_(fa.trans, fb.trans, &im, &in, &ik, &al, a, &fa.ld, b, &fb.ld, &be, c, &fc.ld, 1, 1);
      else
        loop_z(m, n, k, al, a, rsa, csa, b, rsb, csb, be, c, rsc, csc);
      break;
    }
  }
  tl__prov_unlock();
}

/* ---- nrm2 and the level-1 switch ---- */
float snrm2_(const int *n, const float *x, const int *incx);
double dnrm2_(const int *n, const double *x, const int *incx);
float scnrm2_(const int *n, const float complex *x, const int *incx);
double dznrm2_(const int *n, const double complex *x, const int *incx);

double tl__prov_nrm2(tl_dtype dtype, int64_t n, const void *x, int64_t incx) {
  const int in = (int)n, ix = (int)incx;
  const void *xf = fortran_vector(x, n, incx, tl_dtype_size(dtype));
  double norm = 0.0;
  tl__prov_lock();
  switch (dtype) {
    case TL_F32:
      norm = snrm2_(&in, xf, &ix);
      break;
    case TL_F64:
      norm = dnrm2_(&in, xf, &ix);
      break;
    case TL_C64:
      norm = scnrm2_(&in, xf, &ix);
      break;
    case TL_C128:
      norm = dznrm2_(&in, xf, &ix);
      break;
  }
  tl__prov_unlock();
  return norm;
}

/* A Fortran BLAS has no contexts: tenlane's level-1 kernels were never put in one. */
void tl__prov_own_level1(int on) { (void)on; }
