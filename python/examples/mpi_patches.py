#!/usr/bin/env python3
"""mpi_patches.py: a batch of patches spread over MPI ranks with mpi4py, each rank running
tenlane's map_qrcp on its lanes, results gathered on rank 0 in item order.

    mpirun -np 2 python3 python/examples/mpi_patches.py --patches 2000 --threads 1

Every rank makes the same patches from the seed (patch i from seed + i, so the split does not
change them) and takes a contiguous block of items. A rank's map stops at its lowest failing
item; every rank still drains its map, then the ranks agree on the lowest failing item of the
whole batch (an allreduce), and rank 0 reports it with its message and exits 1, as
tenlane-fanout-mpi does. On success rank 0 prints a SHA-256 over every result's bytes in item
order: the same digest for any number of ranks (a patch's factorization does not depend on
which rank or lane ran it). --bad i,j,... plants a NaN in those patches (to see the failure
rule)."""

import argparse
import hashlib
import sys

import numpy as np
from mpi4py import MPI

import tenlane


def patch(seed, i, m, n, rank):
    """Patch i: a rank-`rank` m x n matrix plus a 1e-10 perturbation, from seed + i alone."""
    rng = np.random.default_rng(seed + i)
    x = rng.standard_normal((m, rank)) @ rng.standard_normal((rank, n))
    return x + 1e-10 * rng.standard_normal((m, n))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--patches", type=int, default=2000)
    ap.add_argument("--rows", type=int, default=24)
    ap.add_argument("--cols", type=int, default=16)
    ap.add_argument("--rank", type=int, default=4, help="the patches' numerical rank")
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1, help="lanes per rank (0: one per CPU)")
    ap.add_argument("--bad", default="", help="comma-separated items to plant a NaN in")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    me, size = comm.Get_rank(), comm.Get_size()
    bad = {int(x) for x in args.bad.split(",") if x}

    lo = args.patches * me // size  # this rank's contiguous block [lo, hi)
    hi = args.patches * (me + 1) // size
    items = []
    for i in range(lo, hi):
        a = patch(args.seed, i, args.rows, args.cols, args.rank)
        if i in bad:
            a[0, 0] = np.nan
        items.append(a)

    failed, message, results = args.patches, "", []  # `patches` means: none failed here
    with tenlane.Context(threads=args.threads) as ctx, ctx.session() as s:
        try:
            results = s.map_qrcp(items, tol=args.tol)
        except tenlane.Error as e:  # the map drained: items below e.item all finished
            failed = lo + (e.item if e.item is not None else 0)
            message = "%s: %s" % (type(e).__name__, e.message)

    lowest = comm.allreduce(failed, op=MPI.MIN)  # after every rank drained its map
    owner = comm.allreduce(me if failed == lowest and lowest < args.patches else size, op=MPI.MIN)
    if lowest < args.patches:
        message = comm.bcast(message if me == owner else None, root=owner)
        if me == 0:
            print("mpi_patches: %d ranks; lowest failing item %d: %s" % (size, lowest, message))
        return 1

    # (q, r, perm, discarded) per item, in item order on rank 0
    mine = [(q, r, perm, discarded) for q, r, perm, discarded in results]
    gathered = comm.gather(mine, root=0)
    if me == 0:
        digest = hashlib.sha256()
        ranks, total = 0, 0.0
        for block in gathered:
            for q, r, perm, discarded in block:
                for x in (q, r, perm, np.float64(discarded)):
                    digest.update(np.ascontiguousarray(x).tobytes())
                ranks += r.shape[0]
                total += discarded
        count = sum(len(block) for block in gathered)
        assert count == args.patches
        print("mpi_patches: %d ranks, %d items, mean rank %.2f, discarded %.3e, sha256 %s"
              % (size, count, ranks / count, total, digest.hexdigest()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
