/* src/base/fault.c: the fault countdowns (fault.h). */
#include "fault.h"

atomic_int tl__fault_countdown[TL__FAULT_SITES];
_Atomic(tl__pause_fn) tl__pause_hook;

void tl__fault_arm(tl__fault_site site, int countdown) {
  atomic_store(&tl__fault_countdown[site], countdown < 0 ? 0 : countdown);
}
