#!@TL_PYTHON@
"""bench_python [--rows] [--quick] [--no-workloads] [--chains]: the Python module's aims, measured in one run.

  1. s.einsum("ij,jk->ik", a, b) on 2x2 float64, against the same C call (tl_einsum on the
     session's surface, timed in C) and against numpy.einsum; plus the difference to the C
     call, whose aim is at most 1 us.
  2. s.map_einsum over 10,000 small MPS-environment updates (E'[c,e] = E[a,b] A[a,s,c]
     conj(A)[b,s,e], chi 16, d 2) on one lane (max_lanes=1) and on two lanes of one
     2-thread context; the ratio of the row is the 2-lane speedup, aim at least 1.85.

  3. The users' workloads against numpy, 2 threads/lanes, c128, wall time (best of the rounds):
     module-level tenlane.einsum 2x2 against s.einsum (thread CPU; aim within 0.3 us);
     20,000 chains of 10 k x k matrices, k = 2, 4, 8 (numpy: 9 np.matmul on (N, k, k)
     stacks; tenlane: the same 9 s.matmul calls, one einsum over the stacks, map_einsum over
     the chains); one stacked product (20,000 k x k @ k x k, k = 4, 5, 8, 16, f64 and c128:
     einsum "bij,bjk->bik" and s.matmul against np.matmul); an MPS QR sweep (8 sites, d 2) at chi 16-256 (np.linalg.qr + np.einsum);
     a DMRG environment update L'[b,c,z] = L[x,a,y] A[x,s,b] W[a,c,s,t] conj(A)[y,t,z] at chi
     32-256, MPO bond 5 (numpy: three np.tensordot calls, BLAS throughout; np.einsum's own path
     falls back to its C loops here and takes seconds); and
     the loop `r = s.matmul(a, b)` at 1024^2 against numpy's `r = a @ b`, the previous r alive.
     The ratio column is tenlane over numpy (below 1: tenlane faster).

Rounds of the contestants alternate so that both see the same machine; medians and p99s
are over rounds. The 2x2 rows count the calling thread's CPU time (on a shared machine
the time a process waits for a core is not the call's); the lanes row is wall time, since
its point is two threads at once. --rows prints rows for scripts/run-benches; --quick takes few samples; --chains prints only the
tiny-chain rows (numpy's np.matmul, tenlane's one einsum over the stacks and map_einsum over
views of the stacks and over separate arrays, each against np.matmul and map_einsum against
the one einsum)."""

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


def best_wall(fn, rounds):
    """Best wall time of `rounds` calls of fn, in ns (the first call warms up)."""
    fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - start)
    return min(times), max(times)


def complex_array(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def module_level_rows(quick):
    rounds, calls = (5, 200) if quick else (21, 3000)
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    b = np.array([[0.5, -1.0], [2.0, 0.25]])
    with tenlane.Context(threads=2) as ctx, ctx.session() as s:
        tenlane.einsum("ij,jk->ik", a, b)  # this thread holds the default session
        mod, ses = [], []
        for _ in range(rounds):
            ses.append(per_call(lambda: s.einsum("ij,jk->ik", a, b), calls))
            mod.append(per_call(lambda: tenlane.einsum("ij,jk->ik", a, b), calls))
    over = [m - x for m, x in zip(mod, ses)]
    return [
        ('tenlane.einsum 2x2 f64, module level (thread CPU)', statistics.median(mod), p99(mod),
         "s.einsum (same call)", statistics.median(ses)),
        ("module-level cost over s.einsum (aim <= 0.3 us)", statistics.median(over), p99(over),
         "-", float("nan")),
    ]


def chain_rows(s, quick, rng):
    count, rounds = (2000, 1) if quick else (20000, 3)
    rows = []
    for k in (2, 4, 8):
        stacks = [complex_array(rng, (count, k, k)) for _ in range(10)]

        def numpy_chain():
            r = stacks[0]
            for m in stacks[1:]:
                r = np.matmul(r, m)
            return r

        def tenlane_chain():
            r = stacks[0]
            for m in stacks[1:]:
                r = s.matmul(r, m)
            return r

        letters = "abcdefghijk"
        spec = ",".join("z" + letters[i] + letters[i + 1] for i in range(10)) + "->zak"
        items = [tuple(m[z] for m in stacks) for z in range(count)]
        # the same chains as separate arrays, the way a batch is often built
        separate = [tuple(np.array(m) for m in item) for item in items]
        item_spec = spec.replace("z", "")
        want = numpy_chain()
        got = tenlane_chain()
        if not np.allclose(got, want, rtol=1e-8, atol=1e-8 * np.abs(want).max()):
            raise SystemExit("bench_python: the chains differ from numpy's")
        for z in (0, count - 1):  # map_einsum's bits are single calls'
            one = s.einsum(item_spec, *items[z]).tobytes()
            if (s.map_einsum(item_spec, items[:z + 1])[z].tobytes() != one
                    or s.map_einsum(item_spec, separate)[z].tobytes() != one):
                raise SystemExit("bench_python: map_einsum differs from single calls")
        ref, _ = best_wall(numpy_chain, rounds)
        best = {}
        for label, fn in (("9 s.matmul on stacks", tenlane_chain),
                          ("one einsum over stacks", lambda: s.einsum(spec, *stacks)),
                          ("map_einsum over chains", lambda: s.map_einsum(item_spec, items)),
                          ("map_einsum over separate arrays",
                           lambda: s.map_einsum(item_spec, separate))):
            best[label], worst = best_wall(fn, rounds)
            rows.append(("%d chains of 10 %dx%d c128: %s" % (count, k, k, label), best[label],
                         worst, "np.matmul stacks", ref))
        batched = best["one einsum over stacks"]
        for label in ("map_einsum over chains", "map_einsum over separate arrays"):
            rows.append(("%d chains of 10 %dx%d c128: %s (aim <= 1.2)" % (count, k, k, label),
                         best[label], best[label], "one einsum over stacks", batched))
    return rows


def batched_rows(s, quick, rng):
    """One stacked product a @ b, (N, k, k) @ (N, k, k), N = 20,000: tenlane's einsum
    "bij,bjk->bik" and s.matmul against np.matmul on the stacks, f64 and c128."""
    count, rounds = (2000, 1) if quick else (20000, 5)
    rows = []
    for dtype, name in ((np.float64, "f64"), (np.complex128, "c128")):
        for k in (4, 5, 8, 16):
            a = rng.standard_normal((count, k, k)).astype(dtype)
            b = rng.standard_normal((count, k, k)).astype(dtype)
            if dtype == np.complex128:
                a = a + 1j * rng.standard_normal((count, k, k))
                b = b + 1j * rng.standard_normal((count, k, k))
            want = np.matmul(a, b)
            if not np.allclose(s.einsum("bij,bjk->bik", a, b), want, rtol=1e-10, atol=1e-10):
                raise SystemExit("bench_python: the stacked products differ from numpy's")
            ref, _ = best_wall(lambda: np.matmul(a, b), rounds)
            for label, fn in (("einsum bij,bjk->bik", lambda: s.einsum("bij,bjk->bik", a, b)),
                              ("s.matmul", lambda: s.matmul(a, b))):
                best, worst = best_wall(fn, rounds)
                rows.append(("%d stacked %dx%d %s products: %s" % (count, k, k, name, label), best,
                             worst, "np.matmul stacks", ref))
    return rows


def mps_rows(s, quick, rng):
    rows = []
    sites, d = 8, 2
    for chi in (16, 32, 64, 128, 256):
        cores = [complex_array(rng, (chi, d, chi)) for _ in range(sites)]

        def sweep(qr, contract):
            cs = list(cores)
            for i in range(sites - 1):
                q, r = qr(cs[i].reshape(chi * d, chi))
                cs[i] = q.reshape(chi, d, chi)
                cs[i + 1] = contract("ab,bsc->asc", r, cs[i + 1])
            return cs[-1]

        ref, _ = best_wall(lambda: sweep(np.linalg.qr, np.einsum), 1 if quick else 3)
        best, worst = best_wall(lambda: sweep(s.qr, s.einsum), 1 if quick else 3)
        rows.append(("MPS QR sweep, 8 sites, d 2, chi %d c128" % chi, best, worst,
                     "numpy qr + einsum", ref))
    return rows


def dmrg_rows(s, quick, rng):
    rows = []
    spec, d, bond = "xay,xsb,acst,ytz->bcz", 2, 5
    for chi in (32, 64, 128, 256):
        L = complex_array(rng, (chi, bond, chi))
        A = complex_array(rng, (chi, d, chi))
        W = complex_array(rng, (bond, bond, d, d))
        Ac = A.conj()
        def numpy_update():  # the tensordot order a numpy user writes (BLAS all along)
            t = np.tensordot(L, A, ([0], [0]))  # a y s b
            t = np.tensordot(t, W, ([0, 2], [0, 2]))  # y b c t
            return np.tensordot(t, Ac, ([0, 3], [0, 1]))  # b c z

        want = numpy_update()
        got = s.einsum(spec, L, A, W, Ac)
        if not np.allclose(got, want, rtol=1e-9, atol=1e-9 * np.abs(want).max()):
            raise SystemExit("bench_python: the environment update differs from numpy's")
        ref, _ = best_wall(numpy_update, 2 if quick else 5)
        best, worst = best_wall(lambda: s.einsum(spec, L, A, W, Ac), 2 if quick else 5)
        rows.append(("DMRG environment update chi %d, MPO bond 5, c128" % chi, best, worst,
                     "np.tensordot x3", ref))
    return rows


def matmul_loop_rows(s, quick, rng):
    n, calls = (256, 3) if quick else (1024, 5)
    a, b = complex_array(rng, (n, n)), complex_array(rng, (n, n))

    def loop(f):
        def run():
            r = f(a, b)
            for _ in range(calls - 1):
                r = f(a, b)  # the previous r is alive during the call
            return r
        return run

    ref, _ = best_wall(loop(lambda x, y: x @ y), 3)
    best, worst = best_wall(loop(s.matmul), 3)
    return [("r = s.matmul(a, b) loop %d^2 c128, per call" % n, best / calls, worst / calls,
             "r = a @ b", ref / calls)]


def workload_rows(quick):
    rng = np.random.default_rng(5)
    with tenlane.Context(threads=2) as ctx, ctx.session() as s:
        return (chain_rows(s, quick, rng) + batched_rows(s, quick, rng) + mps_rows(s, quick, rng)
                + dmrg_rows(s, quick, rng) + matmul_loop_rows(s, quick, rng))


def main():
    rows_format = "--rows" in sys.argv
    quick = "--quick" in sys.argv
    if "--chains" in sys.argv:
        with tenlane.Context(threads=2) as ctx, ctx.session() as s:
            rows = chain_rows(s, quick, np.random.default_rng(5))
    else:
        rows = einsum_rows(quick) + lanes_rows(quick) + module_level_rows(quick)
    if "--no-workloads" not in sys.argv and "--chains" not in sys.argv:
        rows += workload_rows(quick)
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
