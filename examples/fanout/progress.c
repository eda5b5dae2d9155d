/* examples/fanout/progress.c: progress from inside the items themselves.
 *
 * No thread of its own (the demo counts the process's threads): whichever item finishes
 * after the next report time claims the report with one compare-and-swap and writes it.
 * One report covers the whole measured run (every variant, every round); its label names
 * the variant and round running now.
 * A terminal gets a bar redrawn in place ten times a second; anything else gets a plain
 * line a second. Reports are formatted on the stack and written with write(2): no stdio
 * lock and no allocation inside an item. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fanout.h"

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long interval_ns(int mode) { return mode == 1 ? 100000000LL : 1000000000LL; }

void fan_progress_begin(fan_progress *p, size_t total, int mode) {
  atomic_init(&p->label, "");
  p->total = total;
  p->mode = mode;
  p->start = fan_now();
  atomic_init(&p->done, 0);
  atomic_init(&p->next_ns, now_ns() + interval_ns(mode));
}

void fan_progress_label(fan_progress *p, const char *label) {
  atomic_store_explicit(&p->label, label, memory_order_relaxed);
}

static void report(fan_progress *p, size_t done, int final) {
  char line[256];
  const char *label = atomic_load_explicit(&p->label, memory_order_relaxed);
  double elapsed = fan_now() - p->start;
  double rate = elapsed > 0.0 ? (double)done / elapsed : 0.0;
  int n;
  if (p->mode == 1) {
    enum { WIDTH = 24 };
    char bar[WIDTH + 1];
    int filled = p->total ? (int)((double)WIDTH * (double)done / (double)p->total) : WIDTH;
    for (int i = 0; i < WIDTH; i++) bar[i] = i < filled ? '#' : '.';
    bar[WIDTH] = '\0';
    n = snprintf(line, sizeof line, "\r  %-34s [%s] %6zu/%zu %9.0f items/s%s", label, bar, done,
                 p->total, rate, final ? "\n" : "");
  } else {
    n = snprintf(line, sizeof line, "  %s: %zu/%zu items, %.1f s, %.0f items/s%s\n", label, done,
                 p->total, elapsed, rate, final ? " (done)" : "");
  }
  if (n > 0) {
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    ssize_t ignored = write(STDERR_FILENO, line, len);
    (void)ignored;
  }
}

void fan_progress_item(fan_progress *p) {
  size_t done = atomic_fetch_add_explicit(&p->done, 1, memory_order_relaxed) + 1;
  if (p->mode == 0) return;
  long long next = atomic_load_explicit(&p->next_ns, memory_order_relaxed);
  long long now = now_ns();
  if (now < next) return;
  if (!atomic_compare_exchange_strong_explicit(&p->next_ns, &next, now + interval_ns(p->mode),
                                               memory_order_relaxed, memory_order_relaxed))
    return; /* another item took this report */
  report(p, done, 0);
}

void fan_progress_end(fan_progress *p, int ok) {
  if (p->mode == 0) return;
  size_t done = atomic_load(&p->done);
  if (ok || p->mode == 1) report(p, done, 1);
}
