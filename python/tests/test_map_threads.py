"""Module-level map_* calls from any Python thread: the thread holding the default session
runs them on the default context's lanes, every other thread on the lanes context (a
session opened per call). Each thread's results must equal the holder's, bit for bit, and
every thread must finish: joins time out (the test then fails) instead of hanging."""

import subprocess
import sys
import textwrap
import threading

import numpy as np

import tenlane

JOIN_S = 120


def run_threads(target, count):
    errors = []

    def guarded(k):
        try:
            target(k)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(k,), daemon=True) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=JOIN_S)
        assert not t.is_alive(), "a thread did not finish within %d s" % JOIN_S
    assert not errors, errors


def test_map_calls_from_several_threads(rng):
    a = rng.standard_normal((5, 5)) + 1j * rng.standard_normal((5, 5))
    items = [(a * k, a) for k in range(40)]
    tenlane.einsum("ij,jk->ik", a, a)  # this thread holds the default session
    want_einsum = [r.tobytes() for r in tenlane.map_einsum("ij,jk->ik", items)]
    want_svd = [t[1].tobytes() for t in tenlane.map_svd([x for x, _ in items], max_rank=3)]
    want_qrcp = [t[2].tobytes() for t in tenlane.map_qrcp([x for x, _ in items[1:]], tol=1e-12)]
    got = {}

    def work(k):
        for _ in range(5):
            e = tenlane.map_einsum("ij,jk->ik", items)
            sv = tenlane.map_svd([x for x, _ in items], max_rank=3)
            q = tenlane.map_qrcp([x for x, _ in items[1:]], tol=1e-12)
            squares = tenlane.map(lambda i: i * i, 6)
        got[k] = ([r.tobytes() for r in e], [t[1].tobytes() for t in sv],
                  [t[2].tobytes() for t in q], squares)

    run_threads(work, 4)
    for k in range(4):
        assert got[k][0] == want_einsum
        assert got[k][1] == want_svd
        assert got[k][2] == want_qrcp
        assert list(got[k][3]) == [i * i for i in range(6)]


def test_map_errors_from_another_thread_name_the_item(rng):
    a = rng.standard_normal((3, 3))
    tenlane.einsum("ij,jk->ik", a, a)
    caught = []

    def work(k):
        try:
            tenlane.map_einsum("ij,jk->ik", [(a, a)] * 3 + [(a, np.ones((4, 4)))] + [(a, a)])
        except tenlane.Error as e:
            caught.append(e.item)

    run_threads(work, 2)
    assert caught == [3, 3]


def test_map_from_a_thread_while_the_holder_computes():
    """The holder computes single calls while other threads run maps: neither waits for the
    other's end (a fresh interpreter, so the default context is this test's own)."""
    script = textwrap.dedent("""
        import threading, numpy as np, tenlane
        a = np.eye(4) * 2.0
        tenlane.einsum("ij,jk->ik", a, a)       # the main thread holds the default session
        done = []
        def work():
            for _ in range(20):
                r = tenlane.map_einsum("ij,jk->ik", [(a, a)] * 50)
            done.append(r[49][0, 0])
        ts = [threading.Thread(target=work, daemon=True) for _ in range(3)]
        for t in ts: t.start()
        for _ in range(200):
            assert tenlane.einsum("ij,jk->ik", a, a)[1, 1] == 4.0
        for t in ts:
            t.join(timeout=100)
            assert not t.is_alive()
        assert done == [4.0, 4.0, 4.0]
        tenlane.set_threads(1)                  # closes both contexts; the next call remakes
        assert tenlane.map_einsum("ij,jk->ik", [(a, a)] * 2)[1][3, 3] == 4.0
        print("ok")
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=200)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr
