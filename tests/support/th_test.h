/* tests/support/th_test.h: the suite's small test harness. A test binary holds several
 * named cases; ctest runs each case as its own test (`binary case_name`) with a TIMEOUT,
 * and the binary also arms an alarm of its own so a deadlock fails instead of hanging. */
#ifndef TH_TEST_H
#define TH_TEST_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "tenlane/status.h"

typedef struct th_test_case {
  const char *name;
  void (*fn)(void);
} th_test_case;

void th_test_fail_at(const char *file, int line, const char *what);
/* Ends the case as skipped: prints why and exits with 77, which ctest reports as skipped
 * (SKIP_RETURN_CODE, set by tl_add_test_binary). For a path this machine or this TL_ISA
 * level cannot run; never for a path that could run. */
_Noreturn void th_test_skip(const char *why);
int th_test_main(int argc, char **argv, const th_test_case *cases, size_t count);
/* Seconds until the binary kills itself (default 60, TL_TEST_ALARM overrides; ctest sets it
 * 20 s inside each case's TIMEOUT, see tests/CMakeLists.txt). */
unsigned th_test_alarm_seconds(void);

#define TH_CHECK(cond)                                       \
  do {                                                       \
    if (!(cond)) th_test_fail_at(__FILE__, __LINE__, #cond); \
  } while (0)

#define TH_CHECK_STATUS(expr, expected)                                                        \
  do {                                                                                         \
    tl_status th_check_status_ = (expr);                                                       \
    if (th_check_status_ != (expected)) {                                                      \
      char th_check_buf_[512];                                                                 \
      snprintf(th_check_buf_, sizeof th_check_buf_, "%s returned %s, expected %s (%s)", #expr, \
               tl_status_name(th_check_status_), tl_status_name(expected), tl_last_message()); \
      th_test_fail_at(__FILE__, __LINE__, th_check_buf_);                                      \
    }                                                                                          \
  } while (0)

#define TH_CHECK_OK(expr) TH_CHECK_STATUS(expr, TL_OK)

#define TH_TEST_MAIN(...)                                                   \
  int main(int argc, char **argv) {                                         \
    static const th_test_case cases[] = {__VA_ARGS__};                      \
    return th_test_main(argc, argv, cases, sizeof cases / sizeof cases[0]); \
  }

#define TH_CASE(fn) \
  { #fn, fn }

#endif
