/* tests/support/th_test.c: runs one named case (or all, with no argument) under an alarm. */
#include "th_test.h"

#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

void th_test_fail_at(const char *file, int line, const char *what) {
  fprintf(stderr, "FAILED %s:%d: %s\n", file, line, what);
  fflush(stderr);
  _exit(1);
}

/* Set while one case runs in a whole-binary run: a skipped case returns here and the rest go
 * on; a single named case exits with 77 instead. */
static jmp_buf skip_jump;
static int skip_jump_armed;

_Noreturn void th_test_skip(const char *why) {
  printf("SKIPPED: %s\n", why);
  fflush(stdout);
  if (skip_jump_armed) longjmp(skip_jump, 1);
  _exit(77);
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
    skip_jump_armed = argc <= 1;
    if (skip_jump_armed && setjmp(skip_jump) != 0) {
      alarm(0);
      printf("skipped %s\n", cases[i].name);
      continue;
    }
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
