"""Timing shared by the Python benchmarks (einsum_networks.py, einsum_threads.py)."""

import time


def median_times(fns, rounds, budget_s, max_calls=None, min_calls=1):
    """Median time of each of fns over `rounds` rounds that alternate them. In each round
    every fn gets one untimed call, then timed calls back to back while it has spent less
    than budget_s in the round and made fewer than max_calls (None: no cap), and at least
    min_calls. This VM's speed drifts for seconds at a time (the same call ran at 0.9 ms in
    one stretch and 1.7 ms in the next, numpy's calls too): measured one after the other,
    each engine saw a different stretch, and a ratio swung from 0.96 to 1.58 between runs.
    Alternating lets each engine see each stretch alike."""
    samples = [[] for _ in fns]
    for _ in range(rounds):
        for fn, times in zip(fns, samples):
            fn()
            spent, first = 0.0, len(times)
            while (spent < budget_s and (max_calls is None or len(times) - first < max_calls)) \
                    or len(times) - first < min_calls:
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
                spent += times[-1]
    return [sorted(times)[len(times) // 2] for times in samples]
