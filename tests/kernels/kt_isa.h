/* tests/kernels/kt_isa.h: run a test body once per instruction set the permute kernels can
 * use on this CPU (portable, AVX2, AVX-512; src/kernels/permute_core.c), by lowering
 * tl__permute_isa_cap; the cap is back at its default when the loop ends. Set only while no
 * permute runs (the tests call it between routes). */
#ifndef KT_ISA_H
#define KT_ISA_H

#include "kernels/kernels.h"

#define KT_FOR_EACH_PERMUTE_ISA(isa)                                          \
  for (int isa = TL__ISA_PORTABLE,                                            \
           best_ = (tl__permute_isa_cap = TL__ISA_AVX512, tl__permute_isa()); \
       isa <= best_ || (tl__permute_isa_cap = TL__ISA_AVX512, 0); isa++)      \
    if ((tl__permute_isa_cap = isa), 1)

#endif
