"""What a second thread earns on large einsum steps, next to what this machine gives anyone.

Issue 29 asks large GEMM, permute and elementwise steps to run at least 1.8x faster on two
threads than on one. Whether a machine allows that is a property of the machine as much as of
tenlane: on a VM whose two vCPUs share a host core's time or its memory bandwidth, no engine
gets 2x. So each step is timed four ways in one process, alternating:

- tenlane on a 1-thread and on a 2-thread context (`s.einsum(spec, a, b, order="K")`; the
  permutations with order="C", so that the axes really move);
- the anchor on one thread and on two:
  - GEMM steps: OpenBLAS's threaded build (libopenblas0-pthread, unpacked by
    scripts/with-openblas-pthread, never installed), `cblas_dgemm` / `cblas_zgemm` with
    `openblas_set_num_threads(1)` and `(2)`. It picks its own kernels for the CPU unless
    TL_BENCH_OPENBLAS_CORETYPE names one, as in the other einsum benchmarks;
  - memory-bound steps (Hadamard, outer product): numpy's own loop over the whole output
    on the calling thread, and over its two halves (rows of the output) on the calling
    thread and one helper thread at once (numpy releases the GIL in these loops, so the
    halves run in parallel: the split a user could write by hand). For the permutation the
    anchor is a plain copy of the same bytes, the bound any permutation approaches (numpy's
    own transposed copy reaches less of it on one thread and gains nothing from a second).
    numpy writes into one output array made once, so neither side pays page faults:
    tenlane's result memory comes back from its cache of freed blocks (python/src/reuse.c),
    while a fresh numpy array above glibc's mmap threshold (32 MiB) is new pages at every
    call, which would make the anchor measure the kernel's page faults, not the loop.

It prints each engine's median time at 1 and 2 threads and its speedup (1T / 2T); tenlane's
speedup against the anchor's tells how much of the gap to 2x is tenlane's. Each result is
checked against numpy's before timing.

Usage: scripts/with-openblas-pthread BUILD /usr/bin/python3 benches/einsum_threads.py BUILD
[--quick] (`make bench-einsum-threads`; --quick: one round of one call, to check it runs)."""

import ctypes
import os
import sys
from concurrent.futures import ThreadPoolExecutor

build = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else "build"
sys.path.insert(0, os.path.abspath(os.path.join(build, "python")))  # the built package

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench_timing

import bench_timing  # noqa: E402
import numpy as np  # noqa: E402
import tenlane  # noqa: E402

QUICK = "--quick" in sys.argv
ROUNDS = 1 if QUICK else 7   # alternating rounds
BUDGET_S = 0.0 if QUICK else 0.25  # per engine and round: calls until this much time is spent
CBLAS_ROW_MAJOR, CBLAS_NO_TRANS = 101, 111


def openblas():
    """The threaded OpenBLAS named by TL_BENCH_OPENBLAS_PTHREAD (scripts/with-openblas-pthread),
    or None. Loaded RTLD_LOCAL, so numpy's BLAS and this one do not see each other."""
    path = os.environ.get("TL_BENCH_OPENBLAS_PTHREAD", "")
    if not path or not os.path.exists(path):
        return None
    lib = ctypes.CDLL(path, mode=os.RTLD_LOCAL)
    lib.openblas_get_corename.restype = ctypes.c_char_p
    lib.openblas_set_num_threads.argtypes = [ctypes.c_int]
    return lib


def blas_gemm(lib, threads):
    """C = A B, row-major square matrices, through lib's cblas on `threads` threads."""
    def call(a, b, c):
        lib.openblas_set_num_threads(threads)
        n, ptr = a.shape[0], (lambda x: ctypes.c_void_p(x.ctypes.data))
        if a.dtype == np.float64:
            lib.cblas_dgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, n, n, n,
                            ctypes.c_double(1.0), ptr(a), n, ptr(b), n, ctypes.c_double(0.0),
                            ptr(c), n)
        else:
            one, zero = np.ones(1, np.complex128), np.zeros(1, np.complex128)
            lib.cblas_zgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, n, n, n, ptr(one),
                            ptr(a), n, ptr(b), n, ptr(zero), ptr(c), n)
    return call


def operand(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if dtype == "complex128":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def numpy_rows(kind, ops, out):
    """numpy's loop for `kind` writing out[lo:hi] (rows of the output), GIL released."""
    def rows(lo, hi):
        if kind == "hadamard":
            np.multiply(ops[0][lo:hi], ops[1][lo:hi], out=out[lo:hi])
        elif kind == "outer":
            np.multiply(ops[0][lo:hi, None], ops[1][None, :], out=out[lo:hi])
        else:  # copy: the permutation's bytes copied in place order (no permutation)
            np.copyto(out[lo:hi], ops[0][lo:hi])
    return rows


def numpy_call(kind, ops, want, halves):
    """numpy's loop into one output array made once, on the calling thread, or in two halves
    on it and the helper thread at once."""
    out = np.empty(want.shape, want.dtype)  # C order (want may be a transposed view)
    rows = numpy_rows(kind, ops, out)

    def call():
        if halves is None:
            rows(0, out.shape[0])
        else:
            h = out.shape[0] // 2
            other = halves.submit(rows, h, out.shape[0])
            rows(0, h)
            other.result()
        return out
    return call


def steps(rng):
    """(name, spec, operands, anchor kind) of each measured step."""
    out = []
    for n, dtype in ((1536, "float64"), (1024, "complex128")):
        out.append((f"gemm {n}", "ab,bc->ac",
                    [operand(rng, (n, n), dtype), operand(rng, (n, n), dtype)], "gemm"))
    for dtype in ("float64", "complex128"):
        out.append(("hadamard 2048", "ij,ij->ij",
                    [operand(rng, (2048, 2048), dtype), operand(rng, (2048, 2048), dtype)],
                    "hadamard"))
        out.append(("outer 4096", "i,j->ij",
                    [operand(rng, (4096,), dtype), operand(rng, (4096,), dtype)], "outer"))
        out.append(("permute 48^4", "abcd->dcba", [operand(rng, (48, 48, 48, 48), dtype)],
                    "copy"))
        out.append(("permute 16^6", "abcdef->fedcba", [operand(rng, (16,) * 6, dtype)],
                    "copy"))  # 128 or 256 MiB: past what this VM's caches hold
    return out


def median_times(fns):
    """bench_timing.median_times with this benchmark's rounds and budget."""
    return bench_timing.median_times(fns, ROUNDS, BUDGET_S)


def main():
    rng = np.random.default_rng(29)
    lib = openblas()
    helper = ThreadPoolExecutor(max_workers=1)
    c1, c2 = tenlane.Context(threads=1), tenlane.Context(threads=2)
    core = "not loaded"
    if lib:
        lib.openblas_set_num_threads(2)
        core = f"{lib.openblas_get_corename().decode()}, {lib.openblas_get_num_threads()} threads"
    print(f"# einsum steps at 1 and 2 threads: tenlane against OpenBLAS's threaded GEMM "
          f"({os.environ.get('TL_BENCH_OPENBLAS_PTHREAD', 'unset')}, kernels: {core}) and "
          f"numpy {np.__version__}'s loops split in two by hand; medians of {ROUNDS} "
          f"alternating rounds; speedup = 1T / 2T")
    print(f"{'step':14} {'dtype':10} {'tl 1T ms':>9} {'tl 2T ms':>9} {'tl x':>5}   "
          f"{'anchor':17} {'1T ms':>9} {'2T ms':>9} {'x':>5}")
    with c1.session() as s1, c2.session() as s2:
        for name, spec, ops, kind in steps(rng):
            dtype = ops[0].dtype
            want = np.einsum(spec, *ops)
            got1, got2 = s1.einsum(spec, *ops), s2.einsum(spec, *ops)
            scale = max(1.0, float(np.abs(want).max()))
            for got in (got1, got2):
                if not float(np.abs(np.asarray(got) - want).max()) <= 1e-10 * scale * 2048:
                    print(f"{name} {dtype}: tenlane and numpy differ")
                    sys.exit(1)
            # A permutation is computed in the order it names (order="C"): with order="K"
            # tenlane copies in the operand's layout, as numpy returns a view, and no axis moves.
            order = "C" if kind == "copy" else "K"
            tl1 = lambda: s1.einsum(spec, *ops, order=order)  # noqa: E731
            tl2 = lambda: s2.einsum(spec, *ops, order=order)  # noqa: E731
            if kind == "gemm":
                if lib is None:
                    print(f"{name:14} {str(dtype):10} skipped: no threaded OpenBLAS (set "
                          f"TL_BENCH_OPENBLAS_PTHREAD or use scripts/with-openblas-pthread)")
                    continue
                out = np.empty_like(want)
                one, two = blas_gemm(lib, 1), blas_gemm(lib, 2)
                an1 = lambda: one(ops[0], ops[1], out)  # noqa: E731
                an2 = lambda: two(ops[0], ops[1], out)  # noqa: E731
                label = "OpenBLAS threads"
                an2()
            else:
                an1 = numpy_call(kind, ops, want, None)
                an2 = numpy_call(kind, ops, want, helper)
                label = "numpy copy halves" if kind == "copy" else "numpy halves"
                out = an2()
            expect = ops[0] if kind == "copy" else want
            if not float(np.abs(out - expect).max()) <= 1e-10 * scale * 2048:
                print(f"{name} {dtype}: the anchor's result differs from numpy's einsum")
                sys.exit(1)
            t1, t2, a1, a2 = median_times([tl1, tl2, an1, an2])
            print(f"{name:14} {str(dtype):10} {t1 * 1e3:9.2f} {t2 * 1e3:9.2f} {t1 / t2:5.2f}   "
                  f"{label:17} {a1 * 1e3:9.2f} {a2 * 1e3:9.2f} {a1 / a2:5.2f}", flush=True)
    helper.shutdown()


if __name__ == "__main__":
    main()
