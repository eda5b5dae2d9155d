/* src/base/isa.h: the instruction-set level of the process (isa.c). */
#ifndef TL_BASE_ISA_H
#define TL_BASE_ISA_H

#include "tenlane/status.h"

/* 1 where the x86 kernels (AVX2 and AVX-512, through target attributes and immintrin.h) are
 * compiled: x86-64 with a GNU C compiler. 0 elsewhere (aarch64 and any other CPU): there
 * the files that hold such kernels compile their portable C paths only, and tl__isa_level
 * is TL__ISA_PORTABLE, so no call can reach an x86 kernel. */
#if defined(__x86_64__) && defined(__GNUC__)
#define TL_X86_KERNELS 1
#else
#define TL_X86_KERNELS 0
#endif

enum { TL__ISA_PORTABLE = 0, TL__ISA_AVX2 = 1, TL__ISA_AVX512 = 2 };
/* The level the kernels may use: the CPU's (AVX-512F; AVX2 with FMA; portable C), capped by
 * the environment variable TL_ISA when set. Read once per process; any thread. */
int tl__isa_level(void);
/* 1 once this process has read TL_ISA (the first context creation or kernel that asked), 0
 * before: tests that set TL_ISA themselves can only do so in a process that has not read
 * it yet. Any thread. */
int tl__isa_was_read(void);
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
