"""tenlane.tci: adaptive patched tensor cross interpolation of a vectorised Python function.

``crossinterpolate(f, ...)`` runs the C library of examples/tci (docs/tci.md), the one
``tenlane-tci`` runs: quantics grids of 1 to 3 variables (2^R points per variable, R up to 40,
interleaved or fused bits), 2-site TCI with a partial rank-revealing LU (tolerance and maximum
bond dimension), global pivot probes, and patches that split on their next site when they
saturate the maximum bond dimension. The patches fan out over the lanes of a tenlane session;
the linear algebra runs without the GIL, and a lane takes the GIL only to call ``f`` on a batch
of grid index tuples (an int64 array of shape (n, dims)), which returns n values. The train is
the same bits for any number of lanes. The result is a :class:`PatchedTensorTrain`, which
evaluates and integrates the interpolant and also loads the files ``tenlane-tci --save``
writes (``PatchedTensorTrain.load``).
"""

from __future__ import annotations

import struct
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["crossinterpolate", "PatchedTensorTrain", "TCIError"]

_MAGIC = b"TLTCI001"


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
        self.evaluations = 0
        self.stats: Dict[str, Any] = {}  # the run's counts, for a train crossinterpolate made

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
        n = sites.shape[0]
        owner = self._owners(sites)
        out = np.empty(n)
        order = np.argsort(owner, kind="stable")
        bounds = np.searchsorted(owner[order], np.arange(len(self.pieces) + 1))
        for p, (prefix, cores) in enumerate(self.pieces):
            rows = order[bounds[p]:bounds[p + 1]]
            if rows.size == 0:
                continue
            plen = len(prefix)
            # Every row of the piece at once: v (rows, bond) through core k's slices.
            v = np.ones((rows.size, 1))
            for k, core in enumerate(cores):
                local = sites[rows, plen + k]
                nxt = np.empty((rows.size, core.shape[2]))
                for value in range(self.local_dim):
                    pick = local == value
                    if pick.any():
                        nxt[pick] = v[pick] @ core[:, value, :]
                v = nxt
            out[rows] = v[:, 0]
        return out

    def _owners(self, sites: np.ndarray) -> np.ndarray:
        """The piece covering each site vector (its index in self.pieces)."""
        n = sites.shape[0]
        owner = np.full(n, -1, dtype=np.int64)
        by_length: Dict[int, Tuple[np.ndarray, np.ndarray]] = {}
        for p, (prefix, _) in enumerate(self.pieces):
            by_length.setdefault(len(prefix), ([], []))
            code = 0
            for v in prefix:
                code = code * self.local_dim + int(v)
            by_length[len(prefix)][0].append(code)
            by_length[len(prefix)][1].append(p)
        code = np.zeros(n, dtype=np.int64)
        for plen in range(0, max(by_length, default=0) + 1):
            if plen:
                code = code * self.local_dim + sites[:, plen - 1]
            if plen not in by_length:
                continue
            codes = np.asarray(by_length[plen][0], dtype=np.int64)
            pieces = np.asarray(by_length[plen][1], dtype=np.int64)
            sort = np.argsort(codes)
            codes, pieces = codes[sort], pieces[sort]
            at = np.minimum(np.searchsorted(codes, code), codes.size - 1)
            hit = (codes[at] == code) & (owner < 0)
            owner[hit] = pieces[at[hit]]
        if (owner < 0).any():
            missing = int(np.argmax(owner < 0))
            raise TCIError("no piece covers site vector %s" % list(sites[missing]))
        return owner

    evaluate = __call__

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


def crossinterpolate(f: Callable[[np.ndarray], np.ndarray], dims: int = 1, bits: int = 10,
                     lo: Optional[Sequence[float]] = None, hi: Optional[Sequence[float]] = None,
                     layout: str = "interleaved", tol: float = 1e-8, max_bond: int = 32,
                     max_sweeps: int = 20, patching: bool = True, min_free_sites: int = 4,
                     seed: int = 1, session=None, max_lanes: int = 1) -> PatchedTensorTrain:
    """Interpolate f on a quantics grid of 2^bits points per variable.

    f(index) gets an int64 array (n, dims) of grid indices and returns n real values; it is
    called from the session's lane threads, one call at a time (each holds the GIL), so it
    may use any Python state but must not rely on running on the calling thread. lo and hi
    (default 0 and 1 per variable) set the box the result's points() and integral() use.
    ``session``: a held ``tenlane.Session`` whose lanes run the patches; without one the run
    makes a context for its length with as many threads as it uses (``max_lanes``, at most
    ``tenlane.get_threads()``). ``max_lanes`` caps the lanes that take patches (0: all the
    session's); the result is the same bits for any number. The default is 1: every call of f holds the GIL, and handing it between lanes
    costs more than a second lane saves unless the pivot updates dominate (a 2-D ridge with
    11,575 calls of f took 0.21 s on one lane and 0.84 s on two, quiet machine). Raises TCIError for
    bad arguments and for NaN or infinity from f (the message names the grid index), f's own
    exception unchanged if f raises, and KeyboardInterrupt on Ctrl-C (every lane stopped and
    joined). The result's ``stats`` holds the run's counts (evaluations, lookups, patches_run,
    splits, seconds, lanes, busy_seconds, chain_seconds: docs/tci.md).
    """
    if not 1 <= dims <= 3:
        raise TCIError("dims must be 1..3, not %r" % (dims,))
    if layout not in ("interleaved", "fused"):
        raise TCIError("layout must be 'interleaved' or 'fused', not %r" % (layout,))
    if not callable(f):
        raise TCIError("f must be callable, not %r" % (type(f).__name__,))
    lo = [0.0] * dims if lo is None else [float(v) for v in lo]
    hi = [1.0] * dims if hi is None else [float(v) for v in hi]
    if session is None:
        # A context for the length of the run, of no more threads than the run uses.
        from . import Context, get_threads
        budget = get_threads()
        threads = budget if max_lanes <= 0 else min(max_lanes, budget)
        with Context(threads=threads).session() as own:
            return _run(own, f, dims, bits, layout, lo, hi, tol, max_bond, max_sweeps,
                        patching, min_free_sites, seed, max_lanes)
    return _run(session, f, dims, bits, layout, lo, hi, tol, max_bond, max_sweeps, patching,
                min_free_sites, seed, max_lanes)


def _run(session, f, dims, bits, layout, lo, hi, tol, max_bond, max_sweeps, patching,
         min_free_sites, seed, max_lanes) -> PatchedTensorTrain:
    from . import _core
    try:
        code, why, pieces, stats = _core._tci_run(
            session, f, int(dims), int(bits), layout == "fused", lo, hi, float(tol),
            int(max_bond), int(max_sweeps), bool(patching), int(min_free_sites), int(seed),
            int(max_lanes))
    except OverflowError as e:
        raise TCIError("an argument is out of range: %s" % (e,)) from None
    if code:
        raise TCIError(why)
    tt = PatchedTensorTrain(dims, bits, layout, lo, hi, pieces)
    tt.evaluations = stats["evaluations"]
    tt.stats = stats
    return tt
