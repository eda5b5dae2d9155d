#!/usr/bin/env python3
"""make bench-einsum: einsum networks of the einsum benchmark's categories, generated here
(fixed seeds, sizes and contraction paths), run through tenlane and through numpy following
the same path, in one run.

Categories: language model (batched HMM likelihood), graphical model (a grid of pairwise
factors summed out), MPS (an inner product), MERA (a norm of a binary tree with
disentanglers), matrix chain, tensor-network permutation (rank-19 intermediates), two
networks above 10^9 flops (a large matrix chain, a language model of hidden size 512), and the
diagnostic binary terms (ij,ij->ij; ij,ij->ji; ij,ji->ij; i,j->ij; bij,bjk->bik; the batched dot bi,bi->b;
the full contraction ij,ij->; the vector-matrix product i,ij->j).

Each network is one tenlane call (integer labels, the path passed in opt_einsum's linear
format, order="K": the result in the layout its last step gives, as numpy's einsum returns
it by default), on a context of 1 and of 2 threads; numpy runs the same pairwise steps with
np.einsum(..., optimize=True) (BLAS through tensordot where it applies). `make bench-einsum`
runs this script under scripts/with-openblas, so numpy's BLAS is OpenBLAS serial (one thread,
its own kernels for this CPU); the header line names the library numpy actually loaded. The path is this script's greedy one (the pair
whose result shrinks memory most, ties by cost), the same for both engines.

Printed per network and dtype (f64, c128): real flops of the path, numpy's time, tenlane's
time at 1 and 2 threads (medians over five alternating rounds), tenlane 1T / numpy, tenlane 2T / tenlane 1T, and the peak
resident memory each engine added during one call (VmHWM after /proc/self/clear_refs, less
the resident memory before the call), with the geometric mean of the 1-thread ratio. Each
peak is taken in a fresh process (this script again, --peak-child) that loads the operands
and makes the one call: in the measuring process tenlane's scratch arena and its kept result
blocks were already resident from the earlier calls, so the column read 0; in a fresh one
the arena's growth, the result and every temporary of the call count, as numpy's do. Usage: einsum_networks.py BUILD_DIR
[--quick] [--only NAME]."""

import json
import math
import os
import subprocess
import sys
import tempfile

build = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else "build"
sys.path.insert(0, os.path.abspath(os.path.join(build, "python")))  # the built package

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench_timing

import bench_timing  # noqa: E402
import numpy as np  # noqa: E402
import tenlane  # noqa: E402

QUICK = "--quick" in sys.argv
ONLY = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
BUDGET_S = 0.25 if not QUICK else 0.02  # time per (network, engine) measurement
ROUNDS = 5 if not QUICK else 1  # alternating rounds per measurement (median_times)


# ---- networks: (name, [label lists], output labels, {label: extent}) ------------------------

def language_model(steps, batch, hidden):
    # v0[b,h0] W1[h0,h1] E1[b,h1] W2[h1,h2] E2[b,h2] ... -> [b]
    b = 0
    terms, ext = [[b, 1]], {b: batch, 1: hidden}
    for t in range(1, steps + 1):
        ext[t + 1] = hidden
        terms += [[t, t + 1], [b, t + 1]]
    return terms, [b], ext


def graphical_model(rows, cols, domain):
    var = lambda r, c: r * cols + c  # noqa: E731
    terms, ext = [], {}
    for r in range(rows):
        for c in range(cols):
            ext[var(r, c)] = domain
            terms.append([var(r, c)])
            if c + 1 < cols:
                terms.append([var(r, c), var(r, c + 1)])
            if r + 1 < rows:
                terms.append([var(r, c), var(r + 1, c)])
    return terms, [], ext


def mps_inner(sites, bond, phys):
    # A_k[l_k, s_k, l_{k+1}] and B_k[m_k, s_k, m_{k+1}], open ends of extent 1
    terms, ext = [], {}
    L, M, S = 0, 1000, 2000
    for k in range(sites):
        left = 1 if k == 0 else bond
        right = 1 if k == sites - 1 else bond
        ext.update({L + k: left, L + k + 1: right, M + k: left, M + k + 1: right, S + k: phys})
        terms += [[L + k, S + k, L + k + 1], [M + k, S + k, M + k + 1]]
    return terms, [], ext


def mera_norm(chi):
    # 8 physical legs (0..7); disentanglers u[1,2,11,12], u[3,4,13,14], u[5,6,15,16];
    # isometries w[20;0,11], w[21;12,13], w[22;14,15], w[23;16,7]; then v[30;20,21],
    # v[31;22,23] and a top t[30,31]; contracted with its mirror image (inner labels + 500).
    half = [[1, 2, 11, 12], [3, 4, 13, 14], [5, 6, 15, 16],
            [20, 0, 11], [21, 12, 13], [22, 14, 15], [23, 16, 7],
            [30, 20, 21], [31, 22, 23], [30, 31]]
    mirror = [[x if x < 8 else x + 500 for x in term] for term in half]
    ext = {x: chi for term in half + mirror for x in term}
    return half + mirror, [], ext


def matrix_chain(dims):
    terms = [[k, k + 1] for k in range(len(dims) - 1)]
    return terms, [0, len(dims) - 1], {k: d for k, d in enumerate(dims)}


def permutation_network(legs):
    # A[0..legs-1, legs] B[legs, legs+1] C[legs+1, legs+2] -> [reversed legs, legs+2]
    ext = {k: 2 for k in range(legs)}
    ext.update({legs: 4, legs + 1: 4, legs + 2: 3})
    terms = [list(range(legs)) + [legs], [legs, legs + 1], [legs + 1, legs + 2]]
    return terms, list(range(legs - 1, -1, -1)) + [legs + 2], ext


NETWORKS = [
    ("language_model_b64_h64_t8", *language_model(8, 64, 64)),
    ("language_model_b256_h128_t4", *language_model(4, 256, 128)),
    ("graphical_model_grid3x4_d24", *graphical_model(3, 4, 24)),
    ("mps_inner_L12_chi64", *mps_inner(12, 64, 2)),
    ("mera_norm_chi8", *mera_norm(8)),
    ("matrix_chain_10", *matrix_chain([120, 300, 80, 250, 150, 400, 90, 200, 160, 310, 140])),
    ("permutation_rank19", *permutation_network(18)),
    # Two networks above 10^9 flops, where 2 threads should take at most 0.6x of one.
    ("matrix_chain_large", *matrix_chain([800, 1200, 600, 1000, 700])),
    ("language_model_b512_h512_t8", *language_model(8, 512, 512)),
    ("hadamard_ij,ij->ij_2048", [[0, 1], [0, 1]], [0, 1], {0: 2048, 1: 2048}),
    ("hadamard_ij,ij->ji_1024", [[0, 1], [0, 1]], [1, 0], {0: 1024, 1: 1024}),
    ("hadamard_ij,ji->ij_1024", [[0, 1], [1, 0]], [0, 1], {0: 1024, 1: 1024}),
    ("outer_i,j->ij_4096", [[0], [1]], [0, 1], {0: 4096, 1: 4096}),
    ("batched_bij,bjk->bik_32x64", [[0, 1, 2], [0, 2, 3]], [0, 1, 3], {0: 32, 1: 64, 2: 64, 3: 64}),
    ("batched_dot_bi,bi->b_4096x256", [[0, 1], [0, 1]], [0], {0: 4096, 1: 256}),
    ("full_ij,ij->_2048", [[0, 1], [0, 1]], [], {0: 2048, 1: 2048}),
    ("vecmat_i,ij->j_4096", [[0], [0, 1]], [1], {0: 4096, 1: 4096}),
    # A tall product with a B of a few elements, and its one-column form.
    ("tall_ik,kj->ij_65536x4x3", [[0, 1], [1, 2]], [0, 2], {0: 65536, 1: 4, 2: 3}),
    ("tall_matvec_ik,k->i_65536x4", [[0, 1], [1]], [0], {0: 65536, 1: 4}),
]


# ---- the path (greedy, linear format) and its cost -----------------------------------------

def size(labels, ext):
    return math.prod(ext[x] for x in labels)


def greedy_path(terms, output, ext):
    left = [set(t) for t in terms]
    path, flops = [], 0.0
    while len(left) > 1:
        best = None
        for i in range(len(left)):
            for j in range(i + 1, len(left)):
                shared = left[i] & left[j]
                others = set(output).union(*(left[k] for k in range(len(left)) if k not in (i, j)))
                result = (left[i] | left[j]) & others
                score = (0 if shared else 1, size(result, ext) - size(left[i], ext) - size(left[j], ext),
                         size(left[i] | left[j], ext))
                if best is None or score < best[0]:
                    best = (score, i, j, result)
        _, i, j, result = best
        flops += 2.0 * size(left[i] | left[j], ext)
        path.append((i, j))
        left = [t for k, t in enumerate(left) if k not in (i, j)] + [result]
    return path, flops


def spec_of(terms, output):
    text = lambda t: "".join("{%d}" % x for x in t)  # noqa: E731
    return ",".join(text(t) for t in terms) + "->" + text(output)


LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def numpy_steps(terms, output, path):
    """The numpy einsum spec of each pairwise step (letters renamed per step)."""
    left = [list(t) for t in terms]
    steps = []
    for i, j in path:
        others = set(output).union(*(set(left[k]) for k in range(len(left)) if k not in (i, j)))
        last = len(left) == 2
        result = list(output) if last else [x for x in dict.fromkeys(left[i] + left[j]) if x in others]
        names = {x: LETTERS[n] for n, x in enumerate(dict.fromkeys(left[i] + left[j]))}
        spec = "".join(names[x] for x in left[i]) + "," + "".join(names[x] for x in left[j]) + "->" + \
            "".join(names[x] for x in result)
        steps.append((i, j, spec))
        left = [t for k, t in enumerate(left) if k not in (i, j)] + [result]
    return steps


def run_numpy(ops, steps):
    left = list(ops)
    for i, j, spec in steps:
        r = np.einsum(spec, left[i], left[j], optimize=True)
        left = [t for k, t in enumerate(left) if k not in (i, j)] + [r]
    return left[0]


# ---- measurement ---------------------------------------------------------------------------

def rss_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return 0


def peak_mib(fn):
    """Resident memory the call added at its peak, in MiB (None where Linux cannot reset it)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        fn()
        return None
    base = rss_kib("VmRSS:")
    result = fn()
    peak = rss_kib("VmHWM:") - base
    del result
    return max(peak, 0) / 1024.0


def fresh_peak_mib(kind, ops, spec, path, steps):
    """peak_mib of one call (kind "numpy" or "tenlane") in a fresh process."""
    with tempfile.TemporaryDirectory() as tmp:
        npz = os.path.join(tmp, "ops.npz")
        np.savez(npz, *ops)
        job = {"kind": kind, "npz": npz, "count": len(ops), "spec": spec,
               "path": [list(p) for p in path], "steps": [list(s) for s in steps]}
        with open(os.path.join(tmp, "job.json"), "w") as f:
            json.dump(job, f)
        out = subprocess.run([sys.executable, os.path.abspath(__file__), build, "--peak-child",
                              os.path.join(tmp, "job.json")], capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"peak child failed: {out.stderr.strip()}")
        value = out.stdout.strip().splitlines()[-1]
        return None if value == "None" else float(value)


def peak_child(job_file):
    with open(job_file) as f:
        job = json.load(f)
    data = np.load(job["npz"])
    ops = [np.ascontiguousarray(data[f"arr_{i}"]) for i in range(job["count"])]
    del data
    if job["kind"] == "numpy":
        steps = [tuple(s) for s in job["steps"]]
        print(peak_mib(lambda: run_numpy(ops, steps)))
        return
    path = [tuple(p) for p in job["path"]]
    ctx = tenlane.Context(threads=1)
    with ctx.session() as s:
        print(peak_mib(lambda: s.einsum(job["spec"], *ops, path=path, order="K")))
    ctx.close()


def median_times(fns):
    """bench_timing.median_times with this benchmark's rounds and budget."""
    return bench_timing.median_times(fns, ROUNDS, BUDGET_S / ROUNDS, 50 // ROUNDS, 2)


def numpy_blas():
    """The BLAS/LAPACK libraries mapped into this process (numpy's; tenlane links its own)."""
    np.dot(np.ones((2, 2)), np.ones((2, 2)))  # make sure the BLAS is loaded
    found = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            name = os.path.basename(path)
            if any(key in name for key in ("blas", "blis", "lapack", "mkl")):
                found.add(path)
    return ", ".join(sorted(found)) or "none found"


def openblas_core():
    """The kernels the loaded OpenBLAS runs (openblas_get_corename), or None without OpenBLAS.
    An OpenBLAS older than the CPU does not know it and runs its generic kernels (Prescott:
    SSE3); scripts/with-openblas passes TL_BENCH_OPENBLAS_CORETYPE on as OPENBLAS_CORETYPE to
    force a core for a second anchor."""
    import ctypes
    for path in numpy_blas().split(", "):
        if "libopenblas" in os.path.basename(path):
            get = ctypes.CDLL(path).openblas_get_corename
            get.restype = ctypes.c_char_p
            return get().decode()
    return None


def main():
    rng = np.random.default_rng(2026)
    ctx1, ctx2 = tenlane.Context(threads=1), tenlane.Context(threads=2)
    s1, s2 = ctx1.session(), ctx2.session()
    s1.__enter__()
    s2.__enter__()
    print(f"# make bench-einsum: tenlane vs numpy {np.__version__} following the same greedy path; "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    print(f"# numpy's BLAS (loaded in this process): {numpy_blas()}")
    core = openblas_core()
    if core is not None:
        forced = os.environ.get("OPENBLAS_CORETYPE")
        how = f"forced by OPENBLAS_CORETYPE={forced}" if forced else "its own CPU detection"
        print(f"# OpenBLAS kernels: {core} ({how})"
              + ("; generic SSE3 kernels: this OpenBLAS does not know this CPU, so the anchor is "
                 "weaker than the machine (TL_BENCH_OPENBLAS_CORETYPE=NAME forces a core)"
                 if core.lower() == "prescott" else ""))
    print("# what each side returns: numpy's einsum hands back each step's result in the layout it "
          "computed it (a strided view where the requested axis order differs, e.g. the "
          "permutation network's last step and ij,ij->ji); tenlane is called with order=\"K\", "
          "which does the same (its default, order=\"C\", writes the requested order)")
    print(f"{'network':34} {'dtype':5} {'Gflop':>8} {'numpy ms':>9} {'tl 1T ms':>9} {'tl 2T ms':>9} "
          f"{'1T/np':>6} {'2T/1T':>6} {'np MiB':>7} {'tl MiB':>7}")
    ratios = []
    for name, terms, output, ext in NETWORKS:
        if ONLY and ONLY not in name:
            continue
        path, flops = greedy_path(terms, output, ext)
        spec = spec_of(terms, output)
        steps = numpy_steps(terms, output, path)
        for dtype in (np.float64, np.complex128):
            scale = 1.0
            ops = []
            for t in terms:
                shape = tuple(ext[x] for x in t)
                x = rng.standard_normal(shape)
                if dtype == np.complex128:
                    x = x + 1j * rng.standard_normal(shape)
                # keep long products finite: scale each factor towards unit norm per contracted axis
                scale = 1.0 / math.sqrt(max(1, max(shape))) if len(terms) > 4 else 1.0
                ops.append((x * scale).astype(dtype))
            want = run_numpy(ops, steps)
            got = s1.einsum(spec, *ops, path=path, order="K")
            err = np.abs(got - want).max() / max(1e-300, np.abs(want).max())
            if not err < 1e-8:
                print(f"{name}: tenlane and numpy differ (relative {err:.2e})")
                sys.exit(1)
            del got
            np_peak = fresh_peak_mib("numpy", ops, spec, path, steps)
            tl_peak = fresh_peak_mib("tenlane", ops, spec, path, steps)
            t_np, t1, t2 = median_times([lambda: run_numpy(ops, steps),
                                         lambda: s1.einsum(spec, *ops, path=path, order="K"),
                                         lambda: s2.einsum(spec, *ops, path=path, order="K")])
            real = flops * (4 if dtype == np.complex128 else 1)
            ratios.append(t1 / t_np)
            fmt = lambda v: "n/a" if v is None else f"{v:.1f}"  # noqa: E731
            print(f"{name:34} {np.dtype(dtype).name[:5]:5} {real / 1e9:8.3f} {t_np * 1e3:9.3f} "
                  f"{t1 * 1e3:9.3f} {t2 * 1e3:9.3f} {t1 / t_np:6.2f} {t2 / t1:6.2f} "
                  f"{fmt(np_peak):>7} {fmt(tl_peak):>7}", flush=True)
    if ratios:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"# geometric mean of tenlane 1T / numpy over {len(ratios)} runs: {geo:.2f}")
    s1.__exit__(None, None, None)
    s2.__exit__(None, None, None)
    ctx1.close()
    ctx2.close()


if __name__ == "__main__":
    if "--peak-child" in sys.argv:
        peak_child(sys.argv[sys.argv.index("--peak-child") + 1])
    else:
        main()
