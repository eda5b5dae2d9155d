"""Ctrl-C (issue 28, item 6): SIGINT sent while a long call runs raises KeyboardInterrupt
soon after, not when the call would have ended: map_einsum, map_svd, map_qrcp, map(fn, n)
and ctx.session() waiting for a context another thread holds. The lanes are stopped and
joined, nothing is published, and the session works afterwards.

Each call is sized to take several seconds (measured on a small batch first); the signal is
sent 0.3 s in, and the bound on its arrival is generous (2 s), so that a loaded machine
does not fail the test while a call that ignores the signal to its end still does. A
watchdog ends the process (with tracebacks) if a test hangs."""

import faulthandler
import os
import signal
import threading
import time

import numpy as np
import pytest

import tenlane
import tenlane._testing

BOUND = 2.0  # seconds from the signal to KeyboardInterrupt
TARGET = 6.0  # seconds the uninterrupted call would take (at least)


@pytest.fixture(autouse=True)
def watchdog():
    faulthandler.dump_traceback_later(120, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


class Interrupter:
    """Sends SIGINT to the process `after` seconds from start(); records when."""

    def __init__(self, after=0.3):
        self.after = after
        self.sent = None
        self.timer = None

    def _fire(self):
        self.sent = time.monotonic()
        os.kill(os.getpid(), signal.SIGINT)

    def __enter__(self):
        self.timer = threading.Timer(self.after, self._fire)
        self.timer.start()
        return self

    def __exit__(self, *exc):
        self.timer.cancel()
        self.timer.join()
        return False


def interrupted(call):
    """Run call() with SIGINT 0.3 s in; assert it raised KeyboardInterrupt within BOUND of
    the signal; returns the delay."""
    with Interrupter() as irq:
        with pytest.raises(KeyboardInterrupt):
            call()
        caught = time.monotonic()
    assert irq.sent is not None, "the call ended before the signal was sent"
    delay = caught - irq.sent
    assert delay < BOUND, f"KeyboardInterrupt came {delay:.2f} s after SIGINT"
    return delay


def sized(per_item_call, make_items, target=TARGET):
    """Items enough for `target` seconds, from the time of a batch of 64."""
    per_item_call(make_items(8))  # first calls (plans, pages) out of the way
    probe = make_items(128)
    start = time.monotonic()
    per_item_call(probe)
    per = (time.monotonic() - start) / 128
    return make_items(max(256, min(400_000, int(target / max(per, 1e-6)))))


def session_works(s):
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(s.einsum("ij->ji", a), a.T)
    r = s.map_einsum("ij,jk->ik", [(a, a.T)] * 5)
    for x in r:
        np.testing.assert_allclose(x, a @ a.T)
    assert s.map(lambda i: i * i, 4) == [0, 1, 4, 9]
    assert s.is_open


@pytest.fixture(params=[2, 1], ids=["two_lanes", "inline_lane"])
def session(request):
    with tenlane.Context(threads=request.param) as ctx:
        with ctx.session() as s:
            yield s


M = np.random.default_rng(3).standard_normal((96, 96))


def test_map_einsum(session):
    s = session
    ops = (M, M, M)
    items = sized(lambda it: s.map_einsum("ij,jk,ki->", it), lambda n: [ops] * n)
    before = tenlane._testing.live_buffers()
    interrupted(lambda: s.map_einsum("ij,jk,ki->", items))
    assert tenlane._testing.live_buffers() == before  # nothing published
    session_works(s)


@pytest.mark.parametrize("call", ["map_svd", "map_qrcp"])
def test_map_factorizations(session, call):
    s = session
    # items of about a millisecond with small results (few of them, little memory per
    # slot): an SVD of 64 x 64 keeping 1 value, a pivoted QR of 160 x 160 keeping 8 rows
    n, rank = (64, 1) if call == "map_svd" else (160, 8)
    a = np.random.default_rng(4).standard_normal((n, n))
    method = getattr(s, call)

    def fn(it):
        return method(it, max_rank=rank)

    items = sized(fn, lambda n: [a] * n)
    interrupted(lambda: fn(items))
    session_works(s)


def test_map_of_python_callbacks(session):
    s = session
    calls = []

    def fn(i):
        calls.append(i)
        time.sleep(0.002)  # releases the GIL
        return i

    n = int(TARGET / 0.002)
    interrupted(lambda: s.map(fn, n))
    assert len(calls) < n // 2  # stopped, not run to the end
    session_works(s)


def test_waiting_for_a_held_context():
    with tenlane.Context(threads=2) as ctx:
        held = threading.Event()
        leave = threading.Event()

        def holder():
            with ctx.session():
                held.set()
                leave.wait(60)

        t = threading.Thread(target=holder)
        t.start()
        try:
            assert held.wait(60)
            interrupted(lambda: ctx.session().open())
        finally:
            leave.set()
            t.join(60)
        assert not t.is_alive()
        with ctx.session() as s:  # the holder left: the context opens, nothing was queued
            session_works(s)


def test_a_handler_that_returns_lets_the_map_finish():
    # a SIGINT handler that does not raise: the map resumes and every result is right
    seen = []
    old = signal.signal(signal.SIGINT, lambda *args: seen.append(1))
    try:
        with tenlane.Context(threads=2) as ctx, ctx.session() as s:
            rng = np.random.default_rng(5)
            mats = [rng.standard_normal((96, 96)) for _ in range(8)]
            want = [np.einsum("ij,jk,ki->", m, m, m) for m in mats]

            def make(n):
                return [(mats[i % 8],) * 3 for i in range(n)]

            items = sized(lambda it: s.map_einsum("ij,jk,ki->", it), make, target=3.0)
            with Interrupter(0.3) as irq:
                results = s.map_einsum("ij,jk,ki->", items)
            assert irq.sent is not None and seen == [1]
            assert len(results) == len(items)
            for i, r in enumerate(results):
                np.testing.assert_allclose(r, want[i % 8], rtol=1e-10)
            session_works(s)
    finally:
        signal.signal(signal.SIGINT, old)
