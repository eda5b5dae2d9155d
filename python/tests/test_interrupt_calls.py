"""Ctrl-C during one long call (issue 28): SIGINT sent while a single s.einsum, s.matmul or
s.svd (and the module-level einsum and matmul) computes raises KeyboardInterrupt soon after,
not when the call would have ended; the session works afterwards.

The call runs without the GIL; SIGINT raises the cancellation flag of its surface
(tl_exec_cancel), the C call returns TL_E_CANCELLED at its next block boundary, and the
binding raises what Python's handler raises. Each input is sized from a timed smaller call
so that the uninterrupted call would take several seconds; the signal goes 0.3 s in and the
bound on KeyboardInterrupt is generous (2 s) so that a loaded machine does not fail the test,
while a call that ignores the signal to its end does. A watchdog ends the process (with
tracebacks) if a test hangs."""

import faulthandler
import os
import signal
import threading
import time

import numpy as np
import pytest

import tenlane

# Seconds from the signal to KeyboardInterrupt. The uninterrupted call would end at least
# TARGET - 0.3 s after the signal, so any bound below that shows the call was cut short; 2 s
# failed once at 3.15 s with ctest -j2 beside three other builds (load average 9 on 2 cores).
BOUND = 4.0
TARGET = 6.0  # seconds the uninterrupted call would take (at least)
SIZE_CAP = {"cube": 6000, "svd": 3000}  # memory bounds: 3 x 6000^2 f64 is 0.9 GB


@pytest.fixture(autouse=True)
def watchdog():
    faulthandler.dump_traceback_later(180, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def fire_after(seconds):
    sent = []

    def fire():
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(seconds, fire)
    timer.start()
    return timer, sent


def interrupted(call):
    """call() with SIGINT 0.3 s in: it must raise KeyboardInterrupt within BOUND."""
    timer, sent = fire_after(0.3)
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
        caught = time.monotonic()
    finally:
        timer.cancel()
        timer.join()
    assert sent, "the call ended before the signal was sent"
    delay = caught - sent[0]
    assert delay < BOUND, f"KeyboardInterrupt came {delay:.2f} s after SIGINT"


def sized(make, run, start, power, cap):
    """The extent n at which run(make(n)) takes about TARGET seconds, from a timed call at
    `start` (the work grows as n**power), capped at `cap`."""
    operands = make(start)
    run(operands)  # first call: plans, pages
    t0 = time.monotonic()
    run(operands)
    took = max(time.monotonic() - t0, 1e-4)
    n = int(start * (TARGET / took) ** (1.0 / power))
    return make(max(start, min(cap, n)))


def square(n, count, seed=7):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, n)) for _ in range(count)]


def session_works(s):
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(s.einsum("ij->ji", a), a.T)
    big = np.ones((400, 400))  # large enough to run without the GIL, armed for Ctrl-C
    np.testing.assert_allclose(s.matmul(big, big), np.full((400, 400), 400.0))
    assert s.is_open


@pytest.fixture(params=[2, 1], ids=["pool", "one_thread"])
def session(request):
    with tenlane.Context(threads=request.param) as ctx:
        with ctx.session() as s:
            yield s


def test_einsum(session):
    s = session
    ops = sized(lambda n: square(n, 3), lambda o: s.einsum("ij,jk,kl->il", *o), 600, 3,
                SIZE_CAP["cube"])
    interrupted(lambda: s.einsum("ij,jk,kl->il", *ops))
    session_works(s)


def test_matmul(session):
    s = session
    ops = sized(lambda n: square(n, 2), lambda o: s.matmul(*o), 800, 3, SIZE_CAP["cube"])
    interrupted(lambda: s.matmul(*ops))
    session_works(s)


def test_svd(session):
    s = session
    ops = sized(lambda n: square(n, 1), lambda o: s.svd(o[0]), 300, 3, SIZE_CAP["svd"])
    interrupted(lambda: s.svd(ops[0]))
    session_works(s)


@pytest.mark.parametrize("name", ["einsum", "matmul"])
def test_module_level(name):
    if name == "einsum":
        def run(o):
            return tenlane.einsum("ij,jk->ik", *o)
    else:
        def run(o):
            return tenlane.matmul(*o)
    ops = sized(lambda n: square(n, 2), run, 800, 3, SIZE_CAP["cube"])
    interrupted(lambda: run(ops))
    with tenlane.Context(threads=1) as ctx, ctx.session() as s:
        session_works(s)
    a = np.ones((300, 300))
    np.testing.assert_allclose(tenlane.matmul(a, a), np.full((300, 300), 300.0))


def test_a_handler_that_returns_lets_the_call_finish():
    seen = []
    old = signal.signal(signal.SIGINT, lambda *args: seen.append(1))
    try:
        with tenlane.Context(threads=2) as ctx, ctx.session() as s:
            ops = sized(lambda n: square(n, 2), lambda o: s.matmul(*o), 600, 3, 3000)
            timer, sent = fire_after(0.3)
            try:
                result = s.matmul(*ops)
            finally:
                timer.cancel()
                timer.join()
            if sent:  # the signal came while the call ran, or just after: never a cancel
                deadline = time.monotonic() + 10
                while not seen and time.monotonic() < deadline:
                    time.sleep(0.01)  # the handler runs between bytecodes
                assert seen == [1]
            np.testing.assert_allclose(result, ops[0] @ ops[1], rtol=1e-9, atol=1e-9)
            session_works(s)
    finally:
        signal.signal(signal.SIGINT, old)


def test_between_calls_sigint_reaches_python_as_before():
    # After a watched call the binding's handler stays in front of Python's: a SIGINT then
    # must still raise KeyboardInterrupt, once, and a handler set afterwards must be the one
    # that runs (with the next watched call putting ours back in front of it).
    a = np.ones((600, 600))
    with tenlane.Context(threads=1) as ctx, ctx.session() as s:
        s.matmul(a, a)  # large enough to be watched: the handler goes in
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # Python runs handlers between bytecodes
                time.sleep(0.001)
        seen = []
        old = signal.signal(signal.SIGINT, lambda *args: seen.append(1))
        try:
            os.kill(os.getpid(), signal.SIGINT)
            deadline = time.monotonic() + 5
            while not seen and time.monotonic() < deadline:
                time.sleep(0.001)
            assert seen == [1]
            s.matmul(a, a)  # ours back in front of the user's handler
            os.kill(os.getpid(), signal.SIGINT)
            deadline = time.monotonic() + 5
            while len(seen) < 2 and time.monotonic() < deadline:
                time.sleep(0.001)
            assert seen == [1, 1]
        finally:
            signal.signal(signal.SIGINT, old)
        session_works(s)
