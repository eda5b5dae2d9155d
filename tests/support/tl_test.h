/* tests/support/tl_test.h: the suite's small test harness. A test binary holds several
 * named cases; ctest runs each case as its own test (`binary case_name`) with a TIMEOUT,
 * and the binary also arms an alarm of its own so a deadlock fails instead of hanging. */
#ifndef TL_TEST_H
#define TL_TEST_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "tenlane/status.h"

typedef struct tl_test_case {
  const char *name;
  void (*fn)(void);
} tl_test_case;

void tl_test_fail_at(const char *file, int line, const char *what);
int tl_test_main(int argc, char **argv, const tl_test_case *cases, size_t count);
/* Seconds until the binary kills itself (default 60, TL_TEST_ALARM overrides). */
unsigned tl_test_alarm_seconds(void);

#define TL_CHECK(cond)                                       \
  do {                                                       \
    if (!(cond)) tl_test_fail_at(__FILE__, __LINE__, #cond); \
  } while (0)

#define TL_CHECK_STATUS(expr, expected)                                                        \
  do {                                                                                         \
    tl_status tl_check_status_ = (expr);                                                       \
    if (tl_check_status_ != (expected)) {                                                      \
      char tl_check_buf_[512];                                                                 \
      snprintf(tl_check_buf_, sizeof tl_check_buf_, "%s returned %s, expected %s (%s)", #expr, \
               tl_status_name(tl_check_status_), tl_status_name(expected), tl_last_message()); \
      tl_test_fail_at(__FILE__, __LINE__, tl_check_buf_);                                      \
    }                                                                                          \
  } while (0)

#define TL_CHECK_OK(expr) TL_CHECK_STATUS(expr, TL_OK)

#define TL_TEST_MAIN(...)                                                   \
  int main(int argc, char **argv) {                                         \
    static const tl_test_case cases[] = {__VA_ARGS__};                      \
    return tl_test_main(argc, argv, cases, sizeof cases / sizeof cases[0]); \
  }

#define TL_CASE(fn) \
  { #fn, fn }

#endif
