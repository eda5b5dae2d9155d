"""The package around the extension: its names, version, stubs, the private test hooks, and
Context's configuration keywords."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import tenlane


def test_version_is_the_librarys():
    version_h = os.path.join(os.environ.get("TENLANE_SOURCE_DIR", ""), "include", "tenlane",
                             "version.h")
    assert tenlane.__version__ == tenlane._core.__version__
    if os.path.exists(version_h):
        with open(version_h) as f:
            assert '"%s"' % tenlane.__version__ in f.read()


def test_test_hooks_are_private():
    from tenlane import _testing

    for name in ("allocation_count", "live_buffers", "_time_c_einsum", "time_c_einsum"):
        assert not hasattr(tenlane, name), name
    assert _testing.allocation_count() >= 0 and _testing.live_buffers() >= 0


def test_every_public_name_has_a_stub():
    here = os.path.dirname(tenlane.__file__)
    assert os.path.exists(os.path.join(here, "py.typed"))
    with open(os.path.join(here, "__init__.pyi")) as f:
        stub = f.read()
    for name in tenlane.__all__:
        assert ("def %s(" % name) in stub or ("class %s" % name) in stub or (
            "%s:" % name) in stub, name


def test_context_takes_the_config_fields():
    with tenlane.Context(threads=2, pin=True, cpus=[0], scratch_limit=1 << 20, spin_us=0) as c:
        assert c.threads == 2
        with c.session() as s:
            a = np.ones((3, 3))
            np.testing.assert_array_equal(s.einsum("ij,jk->ik", a, a), a @ a)
            with pytest.raises(tenlane.ScratchLimitError):  # 8 MB of scratch under a 1 MiB cap
                big = np.ones((1024, 1024))
                s.einsum("ij,jk,kl->il", big, big, big, path="greedy")
    with pytest.raises(tenlane.InvalidError, match="spin_us"):
        tenlane.Context(spin_us=10**6)
    with pytest.raises(tenlane.InvalidError, match="99999"):
        tenlane.Context(cpus=[99999])
    with pytest.raises(TypeError):
        tenlane.Context(cpus=["x"])


def test_optimize_is_path(s):
    a = np.arange(6.0).reshape(2, 3)
    for value in (True, False, "greedy", "optimal", None):
        np.testing.assert_allclose(s.einsum("ij,kj->ik", a, a, optimize=value), a @ a.T)
    with pytest.raises(tenlane.InvalidError, match="optimize"):
        s.einsum("ij,kj->ik", a, a, optimize="fast")


def test_stubs_pass_mypy_strict(tmp_path):
    if shutil.which("mypy") is None and subprocess.call(
            [sys.executable, "-c", "import mypy"], stderr=subprocess.DEVNULL) != 0:
        pytest.skip("mypy is not installed (Debian: mypy)")
    example = tmp_path / "typed_example.py"
    example.write_text(
        "import numpy as np\nimport numpy.typing as npt\nimport tenlane\n\n\n"
        "def norm2(a: npt.NDArray[np.float64]) -> float:\n"
        "    ctx = tenlane.Context(threads=1, scratch_limit=1 << 20)\n"
        "    with ctx.session() as s:\n"
        "        u, sv, vt, discarded = s.svd(a, max_rank=2)\n"
        "        c = s.einsum('ij,jk->ik', a, a, optimize='greedy')\n"
        "        only: npt.NDArray[np.float64] = s.svd(a, compute_uv=False)\n"
        "    ctx.close()\n"
        "    out = np.empty((a.shape[0], a.shape[0]))\n"
        "    g = tenlane.matmul(a, a.T, out=out)\n"
        "    uf, sf, vtf, _ = tenlane.svd(a, True)\n"
        "    q, r = tenlane.qr(a, out=(np.empty(a.shape), np.empty((a.shape[1],) * 2)))\n"
        "    return float(sv[0]) + discarded + float(c[0, 0]) + float(only[0]) + float(g[0, 0])\n")
    env = dict(os.environ)
    where = os.path.dirname(os.path.dirname(tenlane.__file__))
    if os.path.basename(where) != "site-packages":  # a build tree; installed, py.typed says it
        env["MYPYPATH"] = where
    mypy = [sys.executable, "-m", "mypy"] if subprocess.call(
        [sys.executable, "-c", "import mypy"], stderr=subprocess.DEVNULL) == 0 else ["mypy"]
    run = subprocess.run(mypy + ["--strict", "--no-incremental", "--cache-dir", str(tmp_path),
                                 str(example)], capture_output=True, text=True, env=env,
                         timeout=240)
    assert run.returncode == 0, run.stdout + run.stderr
