/* examples/fanout/counters.c: what the demo measures about the process itself.
 *
 * Heap allocations: this program replaces the malloc family with thin wrappers that count
 * each call and forward to glibc's own entry points (__libc_malloc and friends), so every
 * allocation in the process is counted: tenlane's (whose default allocator is
 * aligned_alloc), LAPACKE's work arrays, libgomp's, the program's own. The counter is one
 * relaxed atomic; a delta is exact once the threads that allocate have joined. Sanitizer
 * builds bring their own allocator, so there the wrappers are left out
 * (FANOUT_COUNT_MALLOC=0) and the count reads as unavailable.
 *
 * Threads: the entries of /proc/self/task, read with open + getdents64 into a stack
 * buffer, so sampling from inside an item allocates nothing. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fanout.h"

#ifndef FANOUT_COUNT_MALLOC
#define FANOUT_COUNT_MALLOC 1
#endif

static atomic_uint_fast64_t malloc_calls;

#if FANOUT_COUNT_MALLOC

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *ptr, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void __libc_free(void *ptr);

static inline void count_one(void) {
  atomic_fetch_add_explicit(&malloc_calls, 1, memory_order_relaxed);
}

void *malloc(size_t size) {
  count_one();
  return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
  count_one();
  return __libc_calloc(count, size);
}

void *realloc(void *ptr, size_t size) {
  count_one();
  return __libc_realloc(ptr, size);
}

void free(void *ptr) { __libc_free(ptr); }

void *aligned_alloc(size_t align, size_t size) {
  count_one();
  return __libc_memalign(align, size);
}

void *memalign(size_t align, size_t size) {
  count_one();
  return __libc_memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size) {
  if (align < sizeof(void *) || (align & (align - 1)) != 0) return EINVAL;
  count_one();
  void *ptr = __libc_memalign(align, size);
  if (!ptr) return ENOMEM;
  *out = ptr;
  return 0;
}

int fan_malloc_counted(void) { return 1; }

#else

int fan_malloc_counted(void) { return 0; }

#endif

uint64_t fan_malloc_count(void) {
  return atomic_load_explicit(&malloc_calls, memory_order_relaxed);
}

struct dirent64_record {
  uint64_t inode;
  int64_t offset;
  unsigned short length;
  unsigned char type;
  char name[];
};

int fan_thread_count(void) {
  int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  _Alignas(8) char buffer[4096];
  int count = 0;
  for (;;) {
    long got = syscall(SYS_getdents64, fd, buffer, sizeof buffer);
    if (got < 0) {
      count = -1;
      break;
    }
    if (got == 0) break;
    for (long at = 0; at < got;) {
      const struct dirent64_record *entry = (const struct dirent64_record *)(buffer + at);
      if (entry->name[0] != '.') count++;
      at += entry->length;
    }
  }
  close(fd);
  return count;
}

void fan_thread_sample(atomic_int *max_seen) {
  int now = fan_thread_count();
  int seen = atomic_load_explicit(max_seen, memory_order_relaxed);
  while (now > seen && !atomic_compare_exchange_weak_explicit(
                           max_seen, &seen, now, memory_order_relaxed, memory_order_relaxed)) {
  }
}

double fan_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int fan_pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0 ? 0 : -1;
}
