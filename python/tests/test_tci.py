"""tenlane.tci: the Python cross interpolation and its agreement with tenlane-tci's file."""

import os
import subprocess
import tempfile

import numpy as np
import pytest

import tenlane
from tenlane import tci


def test_sum_of_k_exponentials_gives_bond_k():
    for k in (1, 2, 3):
        rates = [1.0, -2.0, 3.5][:k]

        def f(index):
            x = index[:, 0] / 2.0**12
            return sum(np.exp(a * x) for a in rates)

        t = tci.crossinterpolate(f, bits=12, tol=1e-12, patching=False)
        assert t.max_bond == k
        i = np.arange(0, 4096, 7).reshape(-1, 1)
        assert np.max(np.abs(t(i) - f(i))) < 1e-10


def test_patches_split_and_integrate_on_a_tenlane_session():
    def g(index):
        x = index[:, 0] / 256.0
        y = index[:, 1] / 256.0
        return np.tanh((x - 0.5 - 0.2 * np.sin(3 * y)) / 0.05)

    with tenlane.Context(threads=2).session() as s:
        t = tci.crossinterpolate(g, dims=2, bits=8, tol=1e-8, max_bond=12, session=s)
    assert len(t.pieces) > 1
    pts = np.random.default_rng(0).integers(0, 256, size=(2000, 2))
    assert np.max(np.abs(t(pts) - g(pts))) < 1e-6
    full = np.stack(np.meshgrid(np.arange(256), np.arange(256), indexing="ij"), -1).reshape(-1, 2)
    assert abs(t.integral() - g(full).sum() / 256.0**2) < 1e-6


def test_nan_names_the_index():
    def f(index):
        v = np.cos(index[:, 0] / 1024.0)
        v[(index[:, 0] >= 256) & (index[:, 0] < 300)] = np.nan
        return v

    with pytest.raises(tci.TCIError, match=r"returned nan at x = .* \(grid index \(2[5-9][0-9]\)\)"):
        tci.crossinterpolate(f, bits=10)


def test_save_and_load_round_trip():
    t = tci.crossinterpolate(lambda i: np.sin(i[:, 0] / 100.0), bits=10, tol=1e-10)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.tlt")
        t.save(path)
        u = tci.PatchedTensorTrain.load(path)
    i = np.arange(1024).reshape(-1, 1)
    assert np.array_equal(t(i), u(i))


def test_the_c_programs_saved_train_loads_and_agrees():
    program = os.environ.get("TENLANE_TCI_PROGRAM")
    if not program or not os.path.exists(program):
        pytest.skip("tenlane-tci is not built (TENLANE_TCI_PROGRAM unset)")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "gauss.tlt")
        out = subprocess.run([program, "--function", "gauss2d", "--bits", "8", "--threads", "2",
                              "--save", path], check=True, capture_output=True, text=True).stdout
        t = tci.PatchedTensorTrain.load(path)
    # The C program's report line: the integral it printed equals the loaded object's.
    line = next(l for l in out.splitlines() if l.strip().startswith("integral"))
    c_integral = float(line.split()[1])
    assert t.integral() == pytest.approx(c_integral, rel=1e-14, abs=0)
    s = 0.08
    pts = np.random.default_rng(3).integers(0, 256, size=(500, 2))
    x = t.points(pts)
    exact = np.exp(-((x[:, 0] - 0.5) ** 2 + (x[:, 1] - 0.5) ** 2) / s**2)
    assert np.max(np.abs(t(pts) - exact)) < 1e-6


def _ridge(index):
    x = index[:, 0] / 256.0
    y = index[:, 1] / 256.0
    return np.tanh((x - 0.5 - 0.2 * np.sin(3 * y)) / 0.05)


def test_lanes_give_the_same_bits_as_one_lane():
    trains = []
    for threads in (1, 2):
        with tenlane.Context(threads=threads).session() as s:
            t = tci.crossinterpolate(_ridge, dims=2, bits=8, tol=1e-8, max_bond=12, session=s,
                max_lanes=0)
        assert t.stats["lanes"] == threads
        trains.append(t)
    with tenlane.Context(threads=2).session() as s:
        one = tci.crossinterpolate(_ridge, dims=2, bits=8, tol=1e-8, max_bond=12, session=s,
                                   max_lanes=1)
    assert one.stats["lanes"] == 1
    a, b = trains
    for (pa, ca), (po, co) in zip(a.pieces, one.pieces):
        assert pa == po and all(np.array_equal(x, y) for x, y in zip(ca, co))
    assert len(a.pieces) > 1
    assert [p for p, _ in a.pieces] == [p for p, _ in b.pieces]
    for (_, ca), (_, cb) in zip(a.pieces, b.pieces):
        assert all(np.array_equal(x, y) for x, y in zip(ca, cb))
    assert a.stats["evaluations"] == b.stats["evaluations"]
    assert 0 < b.stats["chain_seconds"] <= b.stats["busy_seconds"] + 1e-9


def test_f_runs_on_lane_threads_and_its_own_exception_comes_back():
    class Boom(RuntimeError):
        pass

    calls = []

    def f(index):
        calls.append(index.shape)
        if len(calls) == 5:
            raise Boom("fifth batch")
        return _ridge(index)

    with tenlane.Context(threads=2).session() as s:
        with pytest.raises(Boom, match="fifth batch"):
            tci.crossinterpolate(f, dims=2, bits=8, tol=1e-8, max_bond=12, session=s, max_lanes=0)
        # the session is usable afterwards
        t = tci.crossinterpolate(_ridge, dims=2, bits=6, tol=1e-6, max_bond=12, session=s)
        assert t.max_bond <= 12


def test_bad_values_from_f_are_clear_errors():
    with pytest.raises(ValueError, match=r"returned 1 values for a batch of \d+ indices"):
        tci.crossinterpolate(lambda i: np.zeros(1), bits=8)
    with pytest.raises(TypeError, match="real numbers"):
        tci.crossinterpolate(lambda i: np.ones(i.shape[0], complex), bits=8)
    with pytest.raises(tci.TCIError, match="tolerance"):
        tci.crossinterpolate(lambda i: np.ones(i.shape[0]), bits=8, tol=0.0)
    with pytest.raises(tci.TCIError, match="max_lanes"):
        tci.crossinterpolate(lambda i: np.ones(i.shape[0]), bits=8, max_lanes=-1)
    with pytest.raises(tci.TCIError, match="bits"):
        tci.crossinterpolate(lambda i: np.ones(i.shape[0]), bits=41)


def test_ctrl_c_stops_the_lanes_and_leaves_the_session_usable():
    import signal
    import threading
    import time

    def slow(index):
        time.sleep(0.01)
        return _ridge(index)

    sent = []

    def fire():
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    with tenlane.Context(threads=2).session() as s:
        timer = threading.Timer(0.3, fire)
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                tci.crossinterpolate(slow, dims=2, bits=10, tol=1e-10, max_bond=24, session=s,
                    max_lanes=0)
            caught = time.monotonic()
        finally:
            timer.cancel()
            timer.join()
        assert sent and caught - sent[0] < 2.0, "KeyboardInterrupt came late"
        t = tci.crossinterpolate(_ridge, dims=2, bits=6, tol=1e-6, max_bond=12, session=s)
        assert len(t.pieces) >= 1


def _one_point(t, s):
    """The interpolant at one site vector, the plain way: find the piece, multiply through."""
    for prefix, cores in t.pieces:
        if tuple(int(v) for v in s[:len(prefix)]) == prefix:
            v = np.ones(1)
            for k, core in enumerate(cores):
                v = v @ core[:, int(s[len(prefix) + k]), :]
            return v[0]
    raise AssertionError("no piece covers %s" % list(s))


@pytest.mark.parametrize("layout", ["interleaved", "fused"])
def test_batched_evaluation_matches_the_plain_product(layout):
    t = tci.crossinterpolate(_ridge, dims=2, bits=8, tol=1e-8, max_bond=10, layout=layout)
    assert len(t.pieces) > 4
    pts = np.random.default_rng(5).integers(0, 256, size=(300, 2))
    want = np.array([_one_point(t, s) for s in t.sites_of(pts)])
    assert np.allclose(t(pts), want, rtol=1e-13, atol=1e-13)
    assert t((7, 9)).shape == (1,)
    # A train missing a piece says which site vector nothing covers.
    broken = tci.PatchedTensorTrain(t.dims, t.bits, t.layout, t.lo, t.hi, t.pieces[1:])
    with pytest.raises(tci.TCIError, match="no piece covers"):
        broken(pts)
