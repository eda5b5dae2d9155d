/* tests/support/th_test.c: runs one named case (or all, with no argument) under an alarm. */
#include "th_test.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

void th_test_fail_at(const char *file, int line, const char *what) {
  fprintf(stderr, "FAILED %s:%d: %s\n", file, line, what);
  fflush(stderr);
  _exit(1);
}

unsigned th_test_alarm_seconds(void) {
  const char *env = getenv("TL_TEST_ALARM");
  if (env != NULL && atoi(env) > 0) return (unsigned)atoi(env);
  return 60;
}

static void on_alarm(int sig) {
  (void)sig;
  static const char text[] = "FAILED: the test did not finish in time (deadlock?)\n";
  (void)!write(2, text, sizeof text - 1);
  _exit(2);
}

int th_test_main(int argc, char **argv, const th_test_case *cases, size_t count) {
  signal(SIGALRM, on_alarm);
  if (argc > 1 && strcmp(argv[1], "--list") == 0) {
    for (size_t i = 0; i < count; i++) printf("%s\n", cases[i].name);
    return 0;
  }
  int ran = 0;
  for (size_t i = 0; i < count; i++) {
    if (argc > 1 && strcmp(argv[1], cases[i].name) != 0) continue;
    alarm(th_test_alarm_seconds());
    cases[i].fn();
    alarm(0);
    printf("ok %s\n", cases[i].name);
    ran++;
  }
  if (ran == 0) {
    fprintf(stderr, "no test case named '%s'\n", argc > 1 ? argv[1] : "");
    return 1;
  }
  return 0;
}
