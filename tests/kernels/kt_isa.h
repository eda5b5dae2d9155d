/* tests/kernels/kt_isa.h: run a test body once per instruction set the permute kernels can
 * use on this CPU (portable, AVX2, AVX-512; src/kernels/permute_core.c), by lowering
 * tl__permute_isa_cap; the cap is back at its default when the loop ends. Set only while no
 * permute runs (the tests call it between routes). */
#ifndef KT_ISA_H
#define KT_ISA_H

#include "kernels/kernels.h"

/* The first instruction set (the portable kernels), with the cap set to it. */
static inline int kt_isa_first(void) {
  tl__permute_isa_cap = TL__ISA_PORTABLE;
  return TL__ISA_PORTABLE;
}

/* The one after `isa` with the cap set to it, or -1 with the cap back at its default when
 * `isa` was the CPU's best. */
static inline int kt_isa_next(int isa) {
  tl__permute_isa_cap = TL__ISA_AVX512;
  if (isa >= tl__permute_isa()) return -1;
  tl__permute_isa_cap = isa + 1;
  return isa + 1;
}

#define KT_FOR_EACH_PERMUTE_ISA(isa) \
  for (int isa = kt_isa_first(); isa >= 0; isa = kt_isa_next(isa))

#endif
