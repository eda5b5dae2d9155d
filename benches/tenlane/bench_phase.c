/* benches/tenlane/bench_phase.c: tenlane's fork-join paths beside their anchors, measured in
 * one run: the pool broadcast and the empty phase run from an outside driver (2 workers, 3
 * threads on 2 cores, the record's layout) against an empty OpenMP region on 2 threads; the
 * budget-1 inline phase run; tl_map's cost per empty item; and one trivial operation on a
 * held session against open + operation + close per call. The cache-line round trip is
 * probed first. Workers and the caller are pinned; contestants alternate in rounds. The
 * floor is a hand-written spin-then-futex broadcast in the same thread layout
 * (benches/support/floor.c): what any pool driven from outside must pay here. */
#include <omp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "floor.h"
#include "tenlane/map.h"
#include "tenlane/ops.h"
#include "tenlane/phase.h"
#include "tenlane/session.h"
#include "exec/exec.h"

static void die(const char *what, tl_status status) {
  fprintf(stderr, "bench_phase: %s: %s (%s)\n", what, tl_status_name(status), tl_last_message());
  exit(1);
}

static void empty_worker(int worker_index, void *arg) { (void)arg, (void)worker_index; }

static void run_broadcast(void *arg) { tl_pool_broadcast(arg, empty_worker, NULL); }

static int empty_lane(tl_lane *lane, int lane_index, void *arg) {
  (void)lane, (void)lane_index, (void)arg;
  return 0;
}

/* The phase contestants run inside one long-lived phase: each timed call is one run. */
static tl_phase *current_phase;
static tl_phase *current_inline_phase;

static void run_phase(void *arg) {
  (void)arg;
  tl_phase_run(current_phase, empty_lane, NULL, NULL);
}

static void run_inline_phase(void *arg) {
  (void)arg;
  tl_phase_run(current_inline_phase, empty_lane, NULL, NULL);
}

static void (*volatile omp_task)(int, void *) = empty_worker;

static void run_omp(void *arg) {
  (void)arg;
#pragma omp parallel num_threads(2)
  omp_task(omp_get_thread_num(), NULL);
}

typedef struct bench_state {
  tl_bench_options opt;
  tl_bench_stats round_trip;
  tl_context *ctx;
  tl_context *serial;
  tl_session *serial_session;
  tl_bench_contestant fork_join[4];
  floor_pool *floor;
  tl_bench_contestant inline_run[1];
  tl_bench_stats map_per_item;
  tl_bench_stats held, scoped;
} bench_state;

/* With TL_BENCH_PHASE_CSV=FILE set, also write single fork-join samples (kind,latency_ns)
 * for scripts/bench-plot's latency distribution. Measured the way the table is: in rounds,
 * each kind in turn, first untimed for 30 ms (so the previous kind's threads have gone
 * idle and this kind's are awake), then 500 timed calls. */
static void write_latency_csv(const char *path, tl_bench_contestant *contestants, int count) {
  FILE *out = fopen(path, "w");
  if (out == NULL) {
    fprintf(stderr, "bench_phase: cannot write %s\n", path);
    return;
  }
  fprintf(out, "kind,latency_ns\n");
  static const char *kinds[] = {"omp_parallel", "spin_futex_floor", "tl_pool_broadcast",
                                "tl_phase_run"};
  enum { ROUNDS = 10, PER_ROUND = 500 };
  static uint64_t samples[PER_ROUND];
  for (int round = 0; round < ROUNDS; round++) {
    for (int k = 0; k < count; k++) {
      uint64_t settle_end = tl_bench_now_ns() + 30000000u;
      while (tl_bench_now_ns() < settle_end) contestants[k].run(contestants[k].arg);
      for (int i = 0; i < PER_ROUND; i++) {
        uint64_t start = tl_bench_now_ns();
        contestants[k].run(contestants[k].arg);
        samples[i] = tl_bench_now_ns() - start;
      }
      for (int i = 0; i < PER_ROUND; i++)
        fprintf(out, "%s,%llu\n", kinds[k], (unsigned long long)samples[i]);
    }
  }
  fclose(out);
}

static void measure_fork_join(tl_phase *phase, void *arg) {
  bench_state *state = arg;
  current_phase = phase;
  tl_bench_contestant contestants[4] = {
      {"empty omp parallel, 2 threads (libgomp)", run_omp, NULL, {0, 0, 0}},
      {"spin-then-futex floor, outside caller -> 2 workers", floor_run, state->floor, {0, 0, 0}},
      {"tl_pool_broadcast, outside caller -> 2 workers",
       run_broadcast,
       tl_context_pool(state->ctx),
       {0, 0, 0}},
      {"tl_phase_run, 2 lanes, parked driver", run_phase, NULL, {0, 0, 0}},
  };
  if (tl_bench_alternate(contestants, 4, &state->opt) != 0) exit(1);
  for (int i = 0; i < 4; i++) state->fork_join[i] = contestants[i];
  const char *csv = getenv("TL_BENCH_PHASE_CSV");
  if (csv != NULL && csv[0] != '\0') write_latency_csv(csv, contestants, 4);
}

static void measure_inline(tl_phase *phase, void *arg) {
  bench_state *state = arg;
  current_inline_phase = phase;
  tl_bench_contestant contestants[1] = {
      {"tl_phase_run, budget 1 (inline lane)", run_inline_phase, NULL, {0, 0, 0}}};
  if (tl_bench_alternate(contestants, 1, &state->opt) != 0) exit(1);
  state->inline_run[0] = contestants[0];
}

static int empty_item(tl_exec *exec, size_t item, int lane_index, void *arg) {
  (void)exec, (void)item, (void)lane_index, (void)arg;
  return 0;
}

#define MAP_ITEMS 200000

static void measure_map(bench_state *state, tl_session *session) {
  int samples = state->opt.rounds * 3;
  uint64_t *ns = malloc(sizeof(uint64_t) * (size_t)samples);
  for (int i = 0; i < samples; i++) {
    uint64_t start = tl_bench_now_ns();
    tl_status status = tl_map(session, MAP_ITEMS, empty_item, NULL, NULL);
    if (status != TL_OK) die("tl_map", status);
    ns[i] = (tl_bench_now_ns() - start) / MAP_ITEMS;
  }
  state->map_per_item = tl_bench_stats_of(ns, (size_t)samples);
  free(ns);
}

static double op_a[4] = {1, 2, 3, 4}, op_b[4] = {5, 6, 7, 8}, op_c[4];
static tl_tensor op_ta, op_tb, op_tc; /* described once: the timed call is the operation alone */

static void describe_operands(void) {
  int64_t n = 4;
  tl_tensor_wrap(TL_F64, 1, &n, NULL, op_a, 0, &op_ta);
  tl_tensor_wrap(TL_F64, 1, &n, NULL, op_b, 0, &op_tb);
  tl_tensor_wrap(TL_F64, 1, &n, NULL, op_c, 0, &op_tc);
}

static int trivial_op(tl_exec *exec, void *arg) {
  (void)arg;
  return (int)tl_add_into(exec, &op_ta, &op_tb, &op_tc);
}

static tl_session *held_session;
static tl_context *scoped_ctx;
static tl_owner scoped_owner;

static void run_held(void *arg) {
  (void)arg;
  trivial_op(tl_session_exec(held_session), NULL);
}

/* What the held session itself adds to every route call: the surface checks at the start
 * and the scratch hand-back at the end, with no numerical work between. */
static void run_surface_only(void *arg) {
  (void)arg;
  tl_exec *exec = tl_session_exec(held_session);
  if (tl__exec_begin(exec, "bench") == TL_OK) tl__exec_end(exec, TL_OK);
}

static void run_scoped(void *arg) {
  (void)arg;
  tl_session_with(scoped_ctx, scoped_owner, TL_NOWAIT, trivial_op, NULL, NULL);
}

int main(int argc, char **argv) {
  bench_state state;
  if (tl_bench_options_parse(argc, argv, &state.opt) != 0) return 2;
  int cpus[2];
  if (tl_bench_cpus(cpus, 2) < 2) {
    fprintf(stderr, "bench_phase: needs 2 CPUs\n");
    return 1;
  }
  state.round_trip = tl_bench_round_trip(cpus[0], cpus[1], state.opt.rounds * 200);
  /* The outside driver shares CPU 0 with worker 0: 3 threads on 2 cores. */
  if (tl_bench_pin_self(cpus[0]) != 0) return 1;
#pragma omp parallel num_threads(2)
  tl_bench_pin_self(cpus[omp_get_thread_num()]);

  static floor_pool floor;
  if (floor_start(&floor, cpus) != 0) {
    fprintf(stderr, "bench_phase: the floor's workers could not start or pin\n");
    return 1;
  }
  state.floor = &floor;
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = 2;
  config.cpus = cpus;
  config.cpu_count = 2;
  tl_status status = tl_context_create(&config, &state.ctx);
  if (status != TL_OK) die("tl_context_create", status);
  tl_session *session;
  status = tl_session_open(state.ctx, tl_owner_new(), TL_NOWAIT, &session);
  if (status != TL_OK) die("tl_session_open", status);
  status = tl_session_phase(session, measure_fork_join, &state);
  if (status != TL_OK) die("tl_session_phase", status);
  floor_stop(&floor);
  measure_map(&state, session);

  /* Held vs scoped on a budget-1 context (the operation itself stays on the caller). */
  tl_context_config serial_config;
  tl_context_config_init(&serial_config);
  serial_config.threads = 1;
  if ((status = tl_context_create(&serial_config, &state.serial)) != TL_OK)
    die("tl_context_create", status);
  tl_session *inline_session;
  if ((status = tl_session_open(state.serial, tl_owner_new(), TL_NOWAIT, &inline_session)) != TL_OK)
    die("tl_session_open", status);
  if ((status = tl_session_phase(inline_session, measure_inline, &state)) != TL_OK)
    die("tl_session_phase", status);
  held_session = inline_session;
  describe_operands();
  tl_context *scoped;
  if ((status = tl_context_create(&serial_config, &scoped)) != TL_OK)
    die("tl_context_create", status);
  scoped_ctx = scoped;
  scoped_owner = tl_owner_new();
  tl_bench_contestant ops[3] = {
      {"open + trivial op + close, per call", run_scoped, NULL, {0, 0, 0}},
      {"trivial op (4-element add) on a held session", run_held, NULL, {0, 0, 0}},
      {"held session's own cost per route call (begin+end)", run_surface_only, NULL, {0, 0, 0}},
  };
  if (tl_bench_alternate(ops, 3, &state.opt) != 0) return 1;

  tl_bench_table table;
  tl_bench_table_init(&table, "phase", state.round_trip, &state.opt);
  tl_bench_table_add(&table, "cache-line round trip (probe)", state.round_trip, NULL, NULL);
  tl_bench_table_add(&table, state.fork_join[0].name, state.fork_join[0].stats, NULL, NULL);
  tl_bench_table_add(&table, state.fork_join[1].name, state.fork_join[1].stats,
                     state.fork_join[0].name, &state.fork_join[0].stats);
  tl_bench_table_add(&table, state.fork_join[2].name, state.fork_join[2].stats,
                     state.fork_join[1].name, &state.fork_join[1].stats);
  tl_bench_table_add(&table, state.fork_join[3].name, state.fork_join[3].stats,
                     state.fork_join[2].name, &state.fork_join[2].stats);
  tl_bench_table_add(&table, "tl_phase_run vs libgomp region", state.fork_join[3].stats,
                     state.fork_join[0].name, &state.fork_join[0].stats);
  tl_bench_table_add(&table, state.inline_run[0].name, state.inline_run[0].stats, NULL, NULL);
  tl_bench_table_add(&table, "tl_map, empty item, 2 lanes (per item)", state.map_per_item, NULL,
                     NULL);
  tl_bench_table_add(&table, ops[1].name, ops[1].stats, ops[0].name, &ops[0].stats);
  tl_bench_table_add(&table, ops[2].name, ops[2].stats, NULL, NULL);
  tl_bench_table_print(&table, stdout);

  tl_session_close(inline_session);
  tl_session_close(session);
  tl_context_destroy(state.serial);
  tl_context_destroy(scoped);
  tl_context_destroy(state.ctx);
  return 0;
}
