/* src/base/isa.c: the instruction-set level tenlane's kernels may use in this process.
 *
 * The level is the CPU's (AVX-512F, AVX2 with FMA, or portable C), capped by the environment
 * variable TL_ISA=portable|avx2|avx512 when it is set: a level above the CPU's is capped at
 * the CPU's, never raised. It is read once, at the first context creation or the first
 * kernel that asks (pthread_once), and fixed for the life of the process; every kernel's
 * choice of path (small GEMM, complex GEMM, permute tiles, the BLAS replacements under
 * LAPACK, the BLIS context) goes through tl__isa_level, so a test run under TL_ISA=avx2 or
 * portable exercises those paths on an AVX-512 machine. Non-x86 CPUs are portable. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "isa.h"

static pthread_once_t isa_once = PTHREAD_ONCE_INIT;
static int isa_cpu;
static int isa_level;
static int isa_request_bad; /* TL_ISA was set to something not understood */
static atomic_int isa_read; /* 1 once isa_init ran */

static int cpu_level(void) {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
  __builtin_cpu_init();
  const int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2 && __builtin_cpu_supports("avx512f")) return TL__ISA_AVX512;
  if (avx2) return TL__ISA_AVX2;
#endif
  return TL__ISA_PORTABLE;
}

int tl__isa_parse(const char *name) {
  if (name == NULL) return -1;
  if (strcmp(name, "portable") == 0) return TL__ISA_PORTABLE;
  if (strcmp(name, "avx2") == 0) return TL__ISA_AVX2;
  if (strcmp(name, "avx512") == 0) return TL__ISA_AVX512;
  return -1;
}

const char *tl__isa_name(int level) {
  return level == TL__ISA_AVX512 ? "avx512" : level == TL__ISA_AVX2 ? "avx2" : "portable";
}

static void isa_init(void) {
  atomic_store(&isa_read, 1);
  isa_cpu = cpu_level();
  isa_level = isa_cpu;
  const char *request = getenv("TL_ISA");
  if (request == NULL || request[0] == '\0') return;
  int asked = tl__isa_parse(request);
  if (asked < 0) {
    isa_request_bad = 1;
    return;
  }
  if (asked < isa_level) isa_level = asked;
}

int tl__isa_level(void) {
  pthread_once(&isa_once, isa_init);
  return isa_level;
}

int tl__isa_was_read(void) { return atomic_load(&isa_read); }

int tl__isa_cpu_level(void) {
  pthread_once(&isa_once, isa_init);
  return isa_cpu;
}

tl_status tl__isa_check(void) {
  pthread_once(&isa_once, isa_init);
  if (!isa_request_bad) return TL_OK;
  const char *request = getenv("TL_ISA");
  return tl__fail(TL_E_INVALID,
                  "TL_ISA is '%.40s', expected portable, avx2 or avx512 (or unset: the CPU's "
                  "level, %s)",
                  request != NULL ? request : "", tl__isa_name(isa_cpu));
}
