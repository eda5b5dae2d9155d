#!/usr/bin/python3
"""bench_stacks [--quick] [--threads N] [--cpu]: stacks of small real products against np.matmul, in one run.

Rows: (N, k, k) @ (N, k, k) and (N, 1, k) @ (N, k, k), k = 2..16, N = 20,000, float64, on a
context of N threads (default 2): s.matmul and s.einsum("bij,bjk->bik") against np.matmul on the same
stacks. Rounds of the contestants alternate so that they see the same machine; each figure
is the median wall time of the rounds. The ratio is tenlane over numpy (below 1: tenlane
faster). --cpu times the calling thread's CPU time instead of wall time (meaningful with
--threads 1 only, where everything runs on the calling thread; on a loaded machine it leaves
out the time spent waiting for a core). The module is the one on sys.path (PYTHONPATH=build/python for a build tree).
--quick takes fewer rounds."""

import statistics
import sys
import time

import numpy as np

import tenlane


CLOCK = time.thread_time_ns if "--cpu" in sys.argv else time.perf_counter_ns


def timed(fn):
    start = CLOCK()
    fn()
    return CLOCK() - start


def rows(s, quick):
    rounds = 5 if quick else 15
    count = 20000
    rng = np.random.default_rng(11)
    out = []
    for rows_a in ("k", "1"):
        for k in range(2, 17):
            m = k if rows_a == "k" else 1
            a = rng.standard_normal((count, m, k))
            b = rng.standard_normal((count, k, k))
            want = np.matmul(a, b)
            if not np.allclose(s.matmul(a, b), want, rtol=1e-12, atol=1e-12):
                raise SystemExit("bench_stacks: the stacked products differ from numpy's")
            contestants = (("np.matmul", lambda: np.matmul(a, b)),
                           ("s.matmul", lambda: s.matmul(a, b)),
                           ("einsum", lambda: s.einsum("bij,bjk->bik", a, b)))
            times = {name: [] for name, _ in contestants}
            for _ in range(rounds + 1):
                for name, fn in contestants:
                    times[name].append(timed(fn))
            med = {name: statistics.median(ts[1:]) for name, ts in times.items()}
            for name in ("s.matmul", "einsum"):
                out.append(("(%d, %d, %d) @ (%d, %d, %d) f64: %s" % (count, m, k, count, k, k, name),
                            med[name], med["np.matmul"]))
    return out


def main():
    quick = "--quick" in sys.argv
    threads = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 2
    with tenlane.Context(threads=threads) as ctx, ctx.session() as s:
        for label, ns, ref in rows(s, quick):
            print("%-48s %10.1f us  np.matmul %10.1f us  ratio %.2f" % (label, ns / 1e3, ref / 1e3,
                                                                       ns / ref))
    return 0


if __name__ == "__main__":
    sys.exit(main())
