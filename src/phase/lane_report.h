/* src/phase/lane_report.h: what one lane of a phase run reports to its driver. The context
 * keeps one per lane (made with the context, reused by every run); a lane writes only its
 * own, and the driver reads them after the join. */
#ifndef TL_PHASE_LANE_REPORT_H
#define TL_PHASE_LANE_REPORT_H

#include <stdatomic.h>

#include "exec/exec.h"
#include "tenlane/status.h"

struct tl__run;
struct tl__lane_report;

/* What a lane callback's tl_lane * points at. It lives in the lane's report (context
 * memory), not on the worker's stack, and `live` says whether its callback is running: a
 * tl_lane kept past its callback is recognised (tl_lane_cancelled reads 1, tl_lane_cancel
 * and tl_lane_fail do nothing, its surface is retired) without reading a dead frame. */
struct tl_lane {
  tl_exec *exec; /* the lane's surface: its bundle's (context memory) */
  struct tl__run *run;
  int index;
  struct tl__lane_report *report;
  atomic_int live;
};

/* One lane's report, written by its worker, read by the driver after the join. */
typedef struct tl__lane_report {
  atomic_int active;        /* 1 while the lane is inside its child surface (read by stats) */
  int entered;              /* opened its child surface */
  int skipped;              /* saw cancellation before entry */
  int code;                 /* the callback's value */
  tl_status session_status; /* entry or cleanup failure */
  int panicked;
  char message[TL_MESSAGE_CAPACITY];
  struct tl_lane lane; /* what the lane's callback is handed */
} tl__lane_report;

#endif
