"""python/examples/mpi_patches.py under `mpirun -np 2` (and -np 1 for the reference): the
gathered results are bit-identical to one rank's, and with failing items on both ranks the
lowest one is reported after every rank drained. Skipped where mpirun or mpi4py is missing."""

import os
import shutil
import subprocess
import sys

import pytest

import tenlane

ROOT = os.environ.get("TENLANE_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
EXAMPLE = os.path.join(ROOT, "python", "examples", "mpi_patches.py")
MPIRUN = shutil.which("mpirun") or shutil.which("mpiexec")


def have_mpi4py():
    return subprocess.call([sys.executable, "-c", "import mpi4py"], stderr=subprocess.DEVNULL) == 0


pytestmark = [
    pytest.mark.skipif(MPIRUN is None, reason="mpirun is not installed (openmpi-bin)"),
    pytest.mark.skipif(not have_mpi4py(), reason="mpi4py is not installed (python3-mpi4py)"),
    pytest.mark.skipif("asan" in os.environ.get("LD_PRELOAD", ""),
                       reason="mpirun does not run with the ASan runtime preloaded"),
]


def run(ranks, *args):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl="self,vader",
               PYTHONPATH=os.pathsep.join(
                   [os.path.dirname(os.path.dirname(tenlane.__file__)),
                    os.environ.get("PYTHONPATH", "")]))
    cmd = [MPIRUN, "--timeout", "100", "--oversubscribe", "--bind-to", "none", "-np", str(ranks),
           sys.executable, EXAMPLE, "--patches", "300", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=150)


def test_two_ranks_give_one_ranks_bits():
    one, two = run(1), run(2, "--threads", "2")
    assert one.returncode == 0 and two.returncode == 0, one.stdout + one.stderr + two.stderr
    digest = [line.split("sha256 ")[1] for line in (one.stdout + two.stdout).splitlines()
              if "sha256" in line]
    assert len(digest) == 2 and digest[0] == digest[1], one.stdout + two.stdout
    assert "2 ranks, 300 items" in two.stdout


def test_lowest_failing_item_after_every_rank_drains():
    # rank 0 takes items 0-149, rank 1 items 150-299: failures on both, the lowest reported
    r = run(2, "--bad", "280,170,120")
    assert r.returncode != 0
    assert "lowest failing item 120:" in r.stdout and "NonfiniteError" in r.stdout, r.stdout
    r = run(2, "--bad", "280,170")  # both on rank 1: its lowest
    assert "lowest failing item 170:" in r.stdout, r.stdout
