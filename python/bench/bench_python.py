#!@TL_PYTHON@
"""bench_python [--rows] [--quick]: the Python module's aims, measured in one run.

  1. s.einsum("ij,jk->ik", a, b) on 2x2 float64, against the same C call (tl_einsum on the
     session's surface, timed in C) and against numpy.einsum; plus the difference to the C
     call, whose aim is at most 1 us.
  2. s.map_einsum over 10,000 small MPS-environment updates (E'[c,e] = E[a,b] A[a,s,c]
     conj(A)[b,s,e], chi 16, d 2) on one lane (max_lanes=1) and on two lanes of one
     2-thread context; the ratio of the row is the 2-lane speedup, aim at least 1.85.

Rounds of the contestants alternate so that both see the same machine; medians and p99s
are over rounds. The 2x2 rows count the calling thread's CPU time (on a shared machine
the time a process waits for a core is not the call's); the lanes row is wall time, since
its point is two threads at once. --rows prints rows for scripts/run-benches; --quick takes few samples."""

import statistics
import sys
import time

sys.path.insert(0, "@TL_PYTHON_MODULE_DIR@")

import numpy as np  # noqa: E402

import tenlane  # noqa: E402
from tenlane import _testing  # noqa: E402


def p99(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(0.99 * len(xs)))]


def per_call(fn, calls):
    """Mean CPU time of the calling thread per call (time descheduled does not count; the
    2x2 calls never leave this thread)."""
    start = time.thread_time_ns()
    for _ in range(calls):
        fn()
    return (time.thread_time_ns() - start) / calls


def einsum_rows(quick):
    rounds, calls = (5, 200) if quick else (41, 3000)
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    b = np.array([[0.5, -1.0], [2.0, 0.25]])
    times = {"tenlane": [], "c": [], "numpy": []}
    with tenlane.Context(threads=2) as ctx, ctx.session() as s:
        for _ in range(3):  # warm up caches and the plan cache
            s.einsum("ij,jk->ik", a, b)
        for _ in range(rounds):
            times["tenlane"].append(per_call(lambda: s.einsum("ij,jk->ik", a, b), calls))
            times["c"].append(_testing.time_c_einsum(s, "ij,jk->ik", a, b, calls))
            times["numpy"].append(per_call(lambda: np.einsum("ij,jk->ik", a, b), calls))
    over = [t - c for t, c in zip(times["tenlane"], times["c"])]
    med = {k: statistics.median(v) for k, v in times.items()}
    name = 's.einsum("ij,jk->ik") 2x2 f64 (thread CPU)'
    return [
        (name, med["tenlane"], p99(times["tenlane"]), "C tl_einsum (same call)", med["c"]),
        (name, med["tenlane"], p99(times["tenlane"]), "numpy.einsum", med["numpy"]),
        ("s.einsum cost over the C call (aim <= 1 us)", statistics.median(over), p99(over), "-", float("nan")),
    ]


def environment_items(count, chi=16, d=2, seed=3):
    rng = np.random.default_rng(seed)
    items = []
    for _ in range(count):
        env = rng.standard_normal((chi, chi))
        a = rng.standard_normal((chi, d, chi))
        items.append((env, a, a.conj()))
    return items


def lanes_rows(quick):
    count, rounds = (1000, 2) if quick else (10000, 7)
    items = environment_items(count)
    spec = "ab,asc,bse->ce"
    times = {1: [], 2: []}
    reference = None
    with tenlane.Context(threads=2) as ctx, ctx.session() as s:
        for r in range(rounds + 1):
            for lanes in (1, 2):
                start = time.perf_counter_ns()
                out = s.map_einsum(spec, items, max_lanes=lanes)
                elapsed = (time.perf_counter_ns() - start) / count
                if r > 0:  # the first round warms up
                    times[lanes].append(elapsed)
                if reference is None:
                    reference = out[-1].tobytes()
                elif out[-1].tobytes() != reference:
                    raise SystemExit("bench_python: 1-lane and 2-lane results differ")
                del out
    m1, m2 = statistics.median(times[1]), statistics.median(times[2])
    return [
        ("map_einsum 10k env updates, 1 lane, per item (ratio: 2-lane speedup, aim >= 1.85)",
         m1, p99(times[1]), "2 lanes, per item", m2),
    ]


def main():
    rows_format = "--rows" in sys.argv
    quick = "--quick" in sys.argv
    rows = einsum_rows(quick) + lanes_rows(quick)
    for bench, median, worst, anchor, anchor_median in rows:
        if rows_format:
            print("row\tpython\t%s\t%.1f\t%.1f\t%s\t%.1f\tnan" % (bench, median, worst, anchor, anchor_median))
        else:
            ratio = "" if anchor == "-" else "  ratio %.2f" % (median / anchor_median)
            print("%-80s %10.1f ns  p99 %10.1f ns  %s %s%s" % (bench, median, worst, anchor,
                                                              "" if anchor == "-" else "%.1f ns" % anchor_median, ratio))
    return 0


if __name__ == "__main__":
    sys.exit(main())
