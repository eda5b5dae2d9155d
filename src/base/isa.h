/* src/base/isa.h: the instruction-set level of the process (isa.c). */
#ifndef TL_BASE_ISA_H
#define TL_BASE_ISA_H

#include "tenlane/status.h"

enum { TL__ISA_PORTABLE = 0, TL__ISA_AVX2 = 1, TL__ISA_AVX512 = 2 };
/* The level the kernels may use: the CPU's (AVX-512F; AVX2 with FMA; portable C), capped by
 * the environment variable TL_ISA when set. Read once per process; any thread. */
int tl__isa_level(void);
/* The CPU's own level, uncapped. Any thread. */
int tl__isa_cpu_level(void);
/* TL_OK, or TL_E_INVALID with a message naming the value when TL_ISA holds anything but
 * portable, avx2 or avx512 (tl_context_create returns it). Any thread. */
tl_status tl__isa_check(void);
/* The level named `name`, or -1. */
int tl__isa_parse(const char *name);
/* The name of a level: "portable", "avx2" or "avx512". */
const char *tl__isa_name(int level);

#endif
