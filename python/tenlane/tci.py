"""tenlane.tci: adaptive patched tensor cross interpolation of a vectorised Python function.

The same algorithm as the C library in examples/tci (docs/tci.md): quantics grids of 1 to 3
variables (2^R points per variable, R up to 40, interleaved or fused bits), 2-site TCI with a
partial rank-revealing LU (tolerance and maximum bond dimension), global pivot probes, and
patches that split on their next site when they saturate the maximum bond dimension.

``crossinterpolate(f, ...)`` calls ``f`` with a batch of grid index tuples (an int64 array of
shape (n, dims)) and expects n values back; it holds the GIL while f runs. The pivot matrices'
solves run through a tenlane session (``Session.solve``, which releases the GIL) when one is
given, else numpy. Patches run one after another in this process. The result is a
:class:`PatchedTensorTrain`, which evaluates and integrates the interpolant and also loads the
files ``tenlane-tci --save`` writes (``PatchedTensorTrain.load``).
"""

from __future__ import annotations

import math
import struct
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["crossinterpolate", "PatchedTensorTrain", "TCIError"]

_MAGIC = b"TLTCI001"
_PROBES = 1024
_ROUNDS = 4
_GLOBAL_PIVOTS = 4


class TCIError(ValueError):
    """A bad argument, or a function value that is NaN or infinite (the message names it)."""


class PatchedTensorTrain:
    """A patched quantics tensor train: pieces (prefix, cores) sorted by prefix.

    Core k of a piece has shape (rank[k], local_dim, rank[k+1]). Immutable after creation.
    """

    def __init__(self, dims: int, bits: int, layout: str, lo: Sequence[float],
                 hi: Sequence[float], pieces: List[Tuple[Tuple[int, ...], List[np.ndarray]]]):
        self.dims = int(dims)
        self.bits = int(bits)
        self.layout = layout
        self.lo = np.asarray(lo, dtype=np.float64)
        self.hi = np.asarray(hi, dtype=np.float64)
        self.local_dim = 2 ** self.dims if layout == "fused" else 2
        self.sites = self.bits if layout == "fused" else self.bits * self.dims
        self.pieces = sorted(pieces, key=lambda p: p[0])
        self._prefixes = {p[0]: p for p in self.pieces}
        self.evaluations = 0

    # ---- the grid -------------------------------------------------------------------------
    def sites_of(self, index: np.ndarray) -> np.ndarray:
        """Site vectors (n, sites) of grid indices (n, dims)."""
        return _sites_of(np.atleast_2d(np.asarray(index, dtype=np.uint64)), self.dims, self.bits,
                         self.layout)

    def points(self, index: np.ndarray) -> np.ndarray:
        """Coordinates of grid indices: lo + (hi - lo) * i / 2^R."""
        index = np.atleast_2d(np.asarray(index, dtype=np.float64))
        return self.lo + (self.hi - self.lo) * index / 2.0 ** self.bits

    @property
    def max_bond(self) -> int:
        return max((c.shape[2] for _, cores in self.pieces for c in cores), default=1)

    # ---- values ---------------------------------------------------------------------------
    def __call__(self, index: np.ndarray) -> np.ndarray:
        """The interpolant at grid indices, shape (n, dims) (or one tuple)."""
        sites = self.sites_of(index)
        out = np.empty(sites.shape[0])
        for row, s in enumerate(sites):
            out[row] = self._value(s)
        return out

    evaluate = __call__

    def _value(self, s: np.ndarray) -> float:
        for plen in range(self.sites):
            piece = self._prefixes.get(tuple(int(v) for v in s[:plen]))
            if piece is not None:
                v = np.ones(1)
                for k, core in enumerate(piece[1]):
                    v = v @ core[:, int(s[plen + k]), :]
                return float(v[0])
        raise TCIError("no piece covers site vector %s" % list(s))

    def sum(self) -> float:
        """The sum over every grid point."""
        total = 0.0
        for _, cores in self.pieces:
            v = np.ones(1)
            for core in cores:
                v = v @ core.sum(axis=1)
            total += float(v[0])
        return total

    def integral(self) -> float:
        """The integral over the box: the grid's Riemann sum (cell volume times the sum)."""
        cell = float(np.prod((self.hi - self.lo) / 2.0 ** self.bits))
        return self.sum() * cell

    # ---- files (docs/tci.md) --------------------------------------------------------------
    def save(self, path: str) -> None:
        layout = 1 if self.layout == "fused" else 0
        with open(path, "wb") as f:
            f.write(_MAGIC)
            f.write(struct.pack("<6q", self.dims, self.bits, layout, self.sites, self.local_dim,
                                len(self.pieces)))
            f.write(self.lo.astype("<f8").tobytes() + self.hi.astype("<f8").tobytes())
            for prefix, cores in self.pieces:
                ranks = [1] + [c.shape[2] for c in cores]
                f.write(struct.pack("<q", len(prefix)))
                f.write(struct.pack("<%dq" % len(prefix), *prefix))
                f.write(struct.pack("<q", len(cores)))
                f.write(struct.pack("<%dq" % len(ranks), *ranks))
                for c in cores:
                    f.write(np.ascontiguousarray(c, dtype="<f8").tobytes())

    @classmethod
    def load(cls, path: str) -> "PatchedTensorTrain":
        """Load a file written by ``tenlane-tci --save`` or :meth:`save`."""
        with open(path, "rb") as f:
            raw = f.read()
        if raw[:8] != _MAGIC:
            raise TCIError("%r is not a tci file (magic %r)" % (path, raw[:8]))
        at = 8

        def ints(n):
            nonlocal at
            if at + 8 * n > len(raw):
                raise TCIError("%r is truncated at byte %d" % (path, at))
            v = struct.unpack_from("<%dq" % n, raw, at)
            at += 8 * n
            return list(v)

        def floats(n):
            nonlocal at
            if at + 8 * n > len(raw):
                raise TCIError("%r is truncated at byte %d" % (path, at))
            v = np.frombuffer(raw, "<f8", n, at).astype(np.float64)
            at += 8 * n
            return v

        dims, bits, layout, sites, local_dim, count = ints(6)
        lo, hi = floats(dims), floats(dims)
        pieces = []
        for _ in range(count):
            plen = ints(1)[0]
            prefix = tuple(ints(plen))
            n = ints(1)[0]
            rank = ints(n + 1)
            cores = [floats(rank[k] * local_dim * rank[k + 1]).reshape(rank[k], local_dim,
                                                                      rank[k + 1])
                     for k in range(n)]
            pieces.append((prefix, cores))
        tt = cls(dims, bits, "fused" if layout == 1 else "interleaved", lo, hi, pieces)
        if tt.sites != sites or tt.local_dim != local_dim:
            raise TCIError("%r: header sites %d / local_dim %d do not match the grid"
                           % (path, sites, local_dim))
        return tt


def _sites_of(index: np.ndarray, dims: int, bits: int, layout: str) -> np.ndarray:
    n = index.shape[0]
    if layout == "fused":
        out = np.zeros((n, bits), dtype=np.int64)
        for b in range(bits):
            shift = np.uint64(bits - 1 - b)
            for v in range(dims):
                out[:, b] |= (((index[:, v] >> shift) & np.uint64(1)).astype(np.int64) << v)
        return out
    out = np.zeros((n, bits * dims), dtype=np.int64)
    for b in range(bits):
        shift = np.uint64(bits - 1 - b)
        for v in range(dims):
            out[:, b * dims + v] = ((index[:, v] >> shift) & np.uint64(1)).astype(np.int64)
    return out


def _index_of(sites: np.ndarray, dims: int, bits: int, layout: str) -> np.ndarray:
    n = sites.shape[0]
    index = np.zeros((n, dims), dtype=np.uint64)
    for b in range(bits):
        for v in range(dims):
            bit = (sites[:, b] >> v) & 1 if layout == "fused" else sites[:, b * dims + v]
            index[:, v] = (index[:, v] << np.uint64(1)) | bit.astype(np.uint64)
    return index


def _prrlu(a: np.ndarray, max_rank: int, tol_abs: float):
    """Partial rank-revealing LU with full search: the pivot rows and columns, and the
    largest residual entry left."""
    r = np.array(a, dtype=np.float64, copy=True)
    m, n = r.shape
    cap = min(m, n, max_rank)
    rows: List[int] = []
    cols: List[int] = []
    while True:
        flat = int(np.argmax(np.abs(r)))
        i, j = divmod(flat, n)
        big = abs(r[i, j])
        if len(rows) >= cap or (rows and big <= tol_abs) or (rows and big == 0.0):
            break
        rows.append(i)
        cols.append(j)
        if big == 0.0:
            big = 0.0
            break
        r -= np.outer(r[:, j], r[i, :]) / r[i, j]
        r[i, :] = 0.0
        r[:, j] = 0.0
    left = 0.0 if len(rows) >= min(m, n) else float(np.max(np.abs(r)))
    return rows, cols, left


class _Patch:
    def __init__(self, f, grid, prefix, opts, scale, solve):
        self.f, self.grid, self.prefix, self.o, self.scale = f, grid, prefix, opts, scale
        self.solve = solve
        self.n = grid["sites"] - len(prefix)
        self.d = grid["local_dim"]
        self.evaluations = 0
        self.max_abs = 0.0

    def values(self, local: np.ndarray) -> np.ndarray:
        g = self.grid
        full = np.concatenate([np.tile(np.array(self.prefix, dtype=np.int64),
                                       (local.shape[0], 1)), local], axis=1)
        index = _index_of(full, g["dims"], g["bits"], g["layout"])
        y = np.asarray(self.f(index.astype(np.int64)), dtype=np.float64).reshape(-1)
        self.evaluations += local.shape[0]
        if y.shape[0] != local.shape[0]:
            raise TCIError("f returned %d values for %d points" % (y.shape[0], local.shape[0]))
        bad = ~np.isfinite(y)
        if bad.any():
            k = int(np.argmax(bad))
            raise TCIError("f returned %r at grid index %s" % (float(y[k]),
                                                              tuple(int(v) for v in index[k])))
        if y.size:
            self.max_abs = max(self.max_abs, float(np.max(np.abs(y))))
        return y

    def tol(self) -> float:
        return self.o["tol"] * max(self.scale, self.max_abs)

    def cross(self, left, mids, right):
        """Values on left x (mids sites) x right, shape (len(left), d^mids, len(right))."""
        d = self.d
        if mids == 0:
            mid = np.zeros((1, 0), dtype=np.int64)
        else:
            mid = np.array(np.unravel_index(np.arange(d ** mids), (d,) * mids),
                           dtype=np.int64).T.reshape(d ** mids, mids)
        nl, nm, nr = len(left), d ** mids, len(right)
        llen, rlen = len(left[0]), len(right[0])
        L = np.repeat(np.asarray(left, dtype=np.int64).reshape(nl, llen), nm * nr, axis=0)
        M = np.tile(np.repeat(mid, nr, axis=0), (nl, 1))
        R = np.tile(np.asarray(right, dtype=np.int64).reshape(nr, rlen), (nl * nm, 1))
        local = np.concatenate([L, M, R], axis=1)
        return self.values(local).reshape(nl, nm, nr)

    def run(self, rng_seed):
        n, d, o = self.n, self.d, self.o
        rng = np.random.default_rng(rng_seed)
        cand = rng.integers(0, d, size=(16, n))
        cand[0] = 0
        y = self.values(cand)
        piv = cand[int(np.argmax(np.abs(y)))]
        self.I = [[tuple(piv[:b])] for b in range(n + 1)]
        self.J = [[tuple(piv[b:])] for b in range(n + 1)]
        for rnd in range(_ROUNDS + 1):
            state = self.sweeps()
            if state == "split":
                return None
            cores = self.cores()
            if rnd == _ROUNDS or n <= 1:
                return cores
            probes = rng.integers(0, d, size=(_PROBES, n))
            err = np.abs(self.values(probes) - _eval_cores(cores, probes))
            worst = [k for k in np.argsort(-err, kind="stable")[:_GLOBAL_PIVOTS]
                     if err[k] > self.tol()]
            if not worst:
                return cores
            for k in worst:
                p = probes[k]
                for b in range(1, n):
                    if len(self.I[b]) < o["max_bond"]:
                        self.I[b].append(tuple(p[:b]))
                        self.J[b].append(tuple(p[b:]))
        return cores

    def update(self, b):
        d = self.d
        pi = self.cross(self.I[b - 1], 2, self.J[b + 1])
        nl, nr = len(self.I[b - 1]), len(self.J[b + 1])
        mat = pi.reshape(nl * d, d * nr)
        rows, cols, err = _prrlu(mat, self.o["max_bond"], self.tol())
        self.I[b] = [tuple(self.I[b - 1][r // d]) + (r % d,) for r in rows]
        self.J[b] = [(c // nr,) + tuple(self.J[b + 1][c % nr]) for c in cols]
        return err

    def sweeps(self):
        n, o = self.n, self.o
        sat_sweeps, previous = 0, math.inf
        for _ in range(o["max_sweeps"]):
            if n <= 1:
                return "done"
            before = [len(x) for x in self.I]
            error = 0.0
            for b in range(1, n):
                self.update(b)
            for b in range(n - 1, 0, -1):
                error = max(error, self.update(b))
            changed = before != [len(x) for x in self.I]
            top = max(len(self.I[b]) for b in range(1, n))
            saturated = top >= o["max_bond"] and error > self.tol()
            if error <= self.tol() and not changed:
                return "done"
            sat_sweeps = sat_sweeps + 1 if saturated else 0
            if o["patching"] and n > o["min_free_sites"] and sat_sweeps >= 2:
                return "split"
            if not changed and error >= previous:
                return "done"
            previous = error
        return "done"

    def cores(self):
        n = self.n
        out = []
        for k in range(n):
            t = self.cross(self.I[k], 1, self.J[k + 1])
            if k == n - 1:
                out.append(np.ascontiguousarray(t))
                continue
            p = self.cross(self.I[k + 1], 0, self.J[k + 1])[:, 0, :]
            r0, d, r1 = t.shape
            if not p.any():
                out.append(np.zeros_like(t))
                continue
            # core = t p^{-1}: solve p^T x^T = t^T
            xt = self.solve(np.ascontiguousarray(p.T), np.ascontiguousarray(t.reshape(r0 * d, r1).T))
            out.append(np.ascontiguousarray(np.asarray(xt).T).reshape(r0, d, r1))
        return out


def _eval_cores(cores, local):
    out = np.empty(local.shape[0])
    for row, s in enumerate(local):
        v = np.ones(1)
        for k, core in enumerate(cores):
            v = v @ core[:, int(s[k]), :]
        out[row] = v[0]
    return out


def crossinterpolate(f: Callable[[np.ndarray], np.ndarray], dims: int = 1, bits: int = 10,
                     lo: Optional[Sequence[float]] = None, hi: Optional[Sequence[float]] = None,
                     layout: str = "interleaved", tol: float = 1e-8, max_bond: int = 32,
                     max_sweeps: int = 20, patching: bool = True, min_free_sites: int = 4,
                     seed: int = 1, session=None) -> PatchedTensorTrain:
    """Interpolate f on a quantics grid of 2^bits points per variable.

    f(index) gets an int64 array (n, dims) of grid indices and returns n values. lo and hi
    (default 0 and 1 per variable) set the box the result's points() and integral() use.
    ``session`` (a held ``tenlane.Session``) runs the pivot solves with the GIL released.
    Raises TCIError for bad arguments and for NaN or infinity from f (naming the index).
    """
    if not 1 <= dims <= 3:
        raise TCIError("dims must be 1..3, not %r" % (dims,))
    if not 1 <= bits <= 40:
        raise TCIError("bits must be 1..40, not %r" % (bits,))
    if layout not in ("interleaved", "fused"):
        raise TCIError("layout must be 'interleaved' or 'fused', not %r" % (layout,))
    if not 0.0 < tol < 1.0:
        raise TCIError("tol must be in (0, 1), not %r" % (tol,))
    if not 1 <= max_bond <= 512:
        raise TCIError("max_bond must be 1..512, not %r" % (max_bond,))
    if min_free_sites < 2:
        raise TCIError("min_free_sites must be >= 2, not %r" % (min_free_sites,))
    lo = [0.0] * dims if lo is None else list(lo)
    hi = [1.0] * dims if hi is None else list(hi)
    grid = dict(dims=dims, bits=bits, layout=layout,
                sites=bits if layout == "fused" else bits * dims,
                local_dim=2 ** dims if layout == "fused" else 2)
    opts = dict(tol=tol, max_bond=max_bond, max_sweeps=max_sweeps, patching=patching,
                min_free_sites=min_free_sites)
    if session is not None:
        solve = session.solve
    else:
        solve = np.linalg.solve
    scale_probe = _Patch(f, grid, (), opts, 0.0, solve)
    rng = np.random.default_rng(seed)
    sample = rng.integers(0, grid["local_dim"], size=(64, grid["sites"]))
    sample[0] = 0
    scale_probe.values(sample)
    scale = scale_probe.max_abs
    evaluations = scale_probe.evaluations
    queue: List[Tuple[int, ...]] = [()]
    pieces = []
    while queue:
        prefix = queue.pop()
        patch = _Patch(f, grid, prefix, opts, scale, solve)
        cores = patch.run([seed] + list(prefix) + [len(prefix)])
        evaluations += patch.evaluations
        if cores is None:
            queue.extend(prefix + (s,) for s in reversed(range(grid["local_dim"])))
        else:
            pieces.append((prefix, cores))
    tt = PatchedTensorTrain(dims, bits, layout, lo, hi, pieces)
    tt.evaluations = evaluations
    return tt
