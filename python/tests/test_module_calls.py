"""Module-level calls (tenlane.einsum, svd, ...) on the default context: the same results as
the session methods, from the main thread and from several Python threads at once, and
set_threads."""

import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import tenlane

NAMES = ["einsum", "tensordot", "matmul", "transpose", "reshape", "sum", "norm", "qr", "qrcp",
         "svd", "lu", "solve", "eigh", "map_einsum", "map_svd", "map_qrcp", "map"]


def test_every_session_method_has_a_module_level_call():
    for name in NAMES:
        assert callable(getattr(tenlane, name)), name
        assert getattr(tenlane, name).__doc__ == getattr(tenlane.Session, name).__doc__


def test_module_calls_equal_session_calls(s, rng):
    a = rng.standard_normal((5, 4))
    b = rng.standard_normal((4, 3))
    sq = a[:4] @ a[:4].T + 4 * np.eye(4)
    pairs = [
        (lambda m: m.einsum("ij,jk->ik", a, b)),
        (lambda m: m.tensordot(a, b, axes=1)),
        (lambda m: m.matmul(a, b)),
        (lambda m: m.transpose(a, (1, 0))),
        (lambda m: m.sum(a, axis=0)),
        (lambda m: m.qr(a)[1]),
        (lambda m: m.svd(a)[1]),
        (lambda m: m.qrcp(a)[1]),
        (lambda m: m.solve(sq, b[:, 0])),
        (lambda m: m.eigh(sq)[0]),
        (lambda m: m.lu(sq)[0]),
        (lambda m: m.map_einsum("ij,jk->ik", [(a, b)] * 5)[4]),
        (lambda m: m.map_svd([a] * 3)[2][1]),
    ]
    for f in pairs:
        assert f(tenlane).tobytes() == f(s).tobytes()


def test_module_calls_from_several_threads(rng):
    a = rng.standard_normal((6, 6))
    expected = [np.einsum("ij,jk->ik", a * t, a) for t in range(4)]
    tenlane.einsum("ij,jk->ik", a, a)  # this thread holds the default session
    results, errors = {}, []

    def work(t):
        try:
            for _ in range(200):
                r = tenlane.einsum("ij,jk->ik", a * t, a)
            u, sv, vt, _ = tenlane.svd(a * t)
            results[t] = (r, sv)
            # not the holder: the map runs on the lanes context (test_map_threads.py)
            assert tenlane.map_einsum("ij,jk->ik", [(a, a)] * 4)[3].shape == (6, 6)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive()
    assert not errors, errors
    for t in range(4):
        np.testing.assert_allclose(results[t][0], expected[t], atol=1e-12)
        np.testing.assert_allclose(results[t][1], np.linalg.svd(a * t, compute_uv=False),
                                   atol=1e-10)


def test_holder_thread_ends_and_another_takes_over():
    script = textwrap.dedent("""
        import threading, numpy as np, tenlane
        a = np.eye(3)
        t = threading.Thread(target=lambda: tenlane.einsum("ij,jk->ik", a, a))
        t.start(); t.join()           # that thread held the default session, then ended
        assert tenlane.map_einsum("ij,jk->ik", [(a, a)] * 3)[2].tobytes() == a.tobytes()
        tenlane.set_threads(1)
        assert tenlane.get_threads() == 1
        assert tenlane.einsum("ii->", 2 * a) == 6.0
        print("ok")
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr


def test_set_threads():
    tenlane.einsum("ij->ji", np.eye(2))
    tenlane.set_threads(2)
    assert tenlane.get_threads() == 2
    assert tenlane.default_context().threads == 2
    kept = tenlane.einsum("ij->ji", np.arange(4.0).reshape(2, 2))
    tenlane.set_threads(1)  # results made on the old default context stay valid
    assert tenlane.get_threads() == 1
    assert kept[1, 0] == 1.0
    with pytest.raises(tenlane.InvalidError):
        tenlane.set_threads(-1)
    errors = []

    def other():
        try:
            tenlane.set_threads(3)
        except tenlane.BusyError:
            errors.append("busy")

    tenlane.einsum("ij->ji", np.eye(2))
    t = threading.Thread(target=other)
    t.start()
    t.join(timeout=60)
    assert errors == ["busy"]
    tenlane.set_threads(0)
