/* src/phase/lane_report.h: what one lane of a phase run reports to its driver. The context
 * keeps one per lane (made with the context, reused by every run); a lane writes only its
 * own, and the driver reads them after the join. */
#ifndef TL_PHASE_LANE_REPORT_H
#define TL_PHASE_LANE_REPORT_H

#include <stdatomic.h>

#include "tenlane/status.h"

/* One lane's report, written by its worker, read by the driver after the join. */
typedef struct tl__lane_report {
  atomic_int active;        /* 1 while the lane is inside its child surface (read by stats) */
  int entered;              /* opened its child surface */
  int skipped;              /* saw cancellation before entry */
  int code;                 /* the callback's value */
  tl_status session_status; /* entry or cleanup failure */
  int panicked;
  char message[TL_MESSAGE_CAPACITY];
} tl__lane_report;

#endif
