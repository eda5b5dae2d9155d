"""Single einsum terms, class by class, through tenlane and numpy on the same operands.

The network benchmark (einsum_networks.py) times whole networks and four diagnostic terms in
f64 and c128; this one covers each term class of issue 29 (Hadamard products in three axis
orders, outer products and broadcasts, batched products, traces, diagonals and reductions)
in all four dtypes, on a square size that stays in the last-level cache (256) and one that
does not fit the second level (1024), then batched dots and row sums over short rows (4 to 32
elements, 1024 and 65536 of them), then the edge shapes of edge_terms(), as a user calls them: `s.einsum(spec, *ops, order="K")`
on a 1-thread context against `np.einsum(spec, *ops)` (numpy's defaults: no path search and
order="K"; every term here is one step). Operands are C-ordered arrays as numpy makes them (large ones start 16
bytes past a 64-byte line).

Each row alternates the two engines in five rounds of ten calls after one untimed call each,
and prints each engine's median over its calls and tenlane / numpy. Rows marked "view":
numpy returns a view of its operand there (a diagonal, a transpose), without computing, while
tenlane writes a new array; the ratio is printed for completeness and measures different work.
float32 and complex64 sums differ in kind too: numpy's einsum adds them in float throughout,
tenlane adds runs of at most sixteen in float and those partial sums in double, and rows of at
most 32 elements in double throughout (ops.h, tl_reduce_into), so its error does not grow with
the length of the sum.

Usage: scripts/with-openblas BUILD /usr/bin/python3 benches/einsum_terms.py BUILD [--quick]
(`make bench-einsum-terms`; --quick: one round of two calls, to check the script runs)."""

import os
import sys
import time

build = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else "build"
sys.path.insert(0, os.path.abspath(os.path.join(build, "python")))  # the built package

import numpy as np  # noqa: E402
import tenlane  # noqa: E402

QUICK = "--quick" in sys.argv
ROUNDS, CALLS = (1, 2) if QUICK else (5, 10)
DTYPES = ("float32", "float64", "complex64", "complex128")


def terms(n):
    """(class, spec, operand shapes, numpy returns a view) at size n."""
    b, m = max(4, n // 16), 32
    return [
        ("hadamard", "ij,ij->ij", [(n, n), (n, n)], False),
        ("hadamard", "ij,ji->ij", [(n, n), (n, n)], False),
        ("hadamard", "ij,ij->ji", [(n, n), (n, n)], False),
        ("outer", "i,j->ij", [(n,), (n,)], False),
        ("broadcast", "ij,j->ij", [(n, n), (n,)], False),
        ("batched", "bij,bjk->bik", [(b, m, m), (b, m, m)], False),
        ("batched", "bi,bi->b", [(n, n), (n, n)], False),
        ("trace", "ii->", [(n, n)], False),
        ("trace", "ab,ba->", [(n, n), (n, n)], False),
        ("diagonal", "ii->i", [(n, n)], True),
        ("diagonal", "ab,ba->a", [(n, n), (n, n)], False),
        ("reduction", "ij->i", [(n, n)], False),
        ("reduction", "ij->j", [(n, n)], False),
        ("reduction", "ij->", [(n, n)], False),
    ]


def tall_terms():
    """Short rows: batched dots and row sums over a few to 32 elements, the lengths where a
    sum's setup and lane totals cost more than its additions (issue 29's short-k rows)."""
    rows = []
    for count, k in ((65536, 4), (65536, 16), (65536, 32), (1024, 4), (1024, 16)):
        rows.append((f"{count}x{k}", "batched", "bi,bi->b", [(count, k), (count, k)], False))
        rows.append((f"{count}x{k}", "reduction", "ij->i", [(count, k)], False))
    return rows


def edge_terms():
    """Shapes a random sweep of specs found slow on 2026-12-07 (each fixed that day): a batch
    label that is every operand's fastest axis (einsum sums across it), a chain of two
    Hadamard products (one pass), a complex broadcast with rows of odd length, and an MPS
    gate on the physical leg (ajb,jk->akb at bond 200, physical 2). The gate's numpy side is
    np.einsum(optimize=True), its fastest form (tensordot on the BLAS); the others are single
    loops in numpy, whose default einsum is already its fastest."""
    return [
        ("1024^2", "batchfast", "ij,ij->j", [(1024, 1024), (1024, 1024)], False, False),
        ("10000x16", "batchfast", "ij,ij->j", [(10000, 16), (10000, 16)], False, False),
        ("300x50x400", "batchfast", "aib,ab->ib", [(300, 50, 400), (300, 400)], False, False),
        ("1024^2", "hadamard3", "ij,ij,ij->ij", [(1024, 1024)] * 3, False, False),
        ("200x100x7", "broadcast", "abc,c->abc", [(200, 100, 7), (7,)], False, False),
        ("200x2x200", "gate", "ajb,jk->akb", [(200, 2, 200), (2, 2)], False, True),
    ]


def operand(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def medians(fns):
    samples = [[] for _ in fns]
    for _ in range(ROUNDS):
        for fn, times in zip(fns, samples):
            fn()
            for _ in range(CALLS):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
    return [sorted(times)[len(times) // 2] for times in samples]


def main():
    rng = np.random.default_rng(29)
    ctx = tenlane.Context(threads=1)
    print(f"# einsum terms: tenlane (1 thread) vs numpy {np.__version__} np.einsum, medians of "
          f"{ROUNDS} alternating rounds of {CALLS} calls")
    print(f"{'class':10} {'spec':13} {'n':>10} {'dtype':10} {'numpy us':>10} {'tl us':>10} "
          f"{'tl/np':>6}")
    ratios = []
    rows = [(str(n),) + term + (False,) for n in (256, 1024) for term in terms(n)]
    rows += [row + (False,) for row in tall_terms()] + edge_terms()
    with ctx.session() as s:
        for n, cls, spec, shapes, view, optimize in rows:
            for dtype in DTYPES:
                ops = [operand(rng, shape, dtype) for shape in shapes]
                got = s.einsum(spec, *ops, order="K")
                want = np.einsum(spec, *ops, optimize=optimize)
                scale = max(1.0, float(np.abs(want).max()))
                tol = 1e-3 if dtype in ("float32", "complex64") else 1e-10
                if not float(np.abs(got - want).max()) <= tol * scale * max(shapes[0]):
                    print(f"{spec} {dtype} n {n}: tenlane and numpy differ")
                    sys.exit(1)
                t_np, t_tl = medians([lambda: np.einsum(spec, *ops, optimize=optimize),
                                      lambda: s.einsum(spec, *ops, order="K")])
                if not view:
                    ratios.append(t_tl / t_np)
                print(f"{cls:10} {spec:13} {n:>10} {dtype:10} {t_np * 1e6:10.1f} "
                      f"{t_tl * 1e6:10.1f} {t_tl / t_np:6.2f}" + ("  view" if view else ""),
                      flush=True)
    worst = max(ratios)
    over = sum(r > 1.0 for r in ratios)
    print(f"# rows other than views: {len(ratios)}, above 1.0: {over}, worst {worst:.2f}, "
          f"geometric mean {float(np.exp(np.mean(np.log(ratios)))):.2f}")


if __name__ == "__main__":
    main()
