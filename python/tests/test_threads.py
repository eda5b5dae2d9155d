"""Thread rules and lifetimes: a session belongs to the thread that opened it; results
outlive the session and the context."""

import gc
import glob
import os
import threading

import numpy as np
import pytest

import tenlane


def run_in_thread(fn):
    box = {}

    def body():
        try:
            box["value"] = fn()
        except BaseException as e:  # handed to the caller
            box["error"] = e

    t = threading.Thread(target=body)
    t.start()
    t.join(60)
    assert not t.is_alive()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def test_session_from_another_thread_raises_wrong_thread(ctx):
    a = np.ones((2, 2))
    with ctx.session() as s:
        for call in [
            lambda: s.einsum("ij,jk->ik", a, a),
            lambda: s.svd(a),
            lambda: s.map_einsum("ij,jk->ik", [(a, a)]),
            lambda: s.map(lambda i: i, 3),
            lambda: s.close(),
        ]:
            with pytest.raises(tenlane.WrongThreadError) as info:
                run_in_thread(call)
            assert info.value.status == "TL_E_WRONG_THREAD"
            assert "thread" in info.value.message
        assert s.is_open
        assert (s.einsum("ij,jk->ik", a, a) == 2).all()  # still fine on its own thread


def test_second_opener_waits_or_is_busy(ctx):
    with ctx.session():
        with pytest.raises(tenlane.BusyError):
            run_in_thread(lambda: ctx.session(wait=False).open())
        order = []

        def waiter():
            with ctx.session() as s2:
                order.append("opened")
                return float(s2.sum(np.ones(4)))

        t = threading.Thread(target=waiter)
        t.start()
        t.join(0.2)
        assert order == []  # waiting, without holding the GIL
    t.join(60)
    assert order == ["opened"]


def test_results_outlive_the_session_and_the_context():
    ctx = tenlane.Context(threads=2)
    a = np.arange(16.0).reshape(4, 4)
    with ctx.session() as s:
        c = s.einsum("ij,jk->ik", a, a)
        u, sv, vt, _ = s.svd(a)
        outs = s.map_einsum("ij->ji", [(a,)] * 8)
    ctx.close()
    del ctx, s
    gc.collect()
    np.testing.assert_allclose(c, a @ a)
    np.testing.assert_allclose((u * sv) @ vt, a, atol=1e-10)
    assert all((o == a.T).all() for o in outs)


def test_a_session_keeps_its_context_alive():
    s = tenlane.Context(threads=2).session()
    gc.collect()
    with s:
        assert s.sum(np.ones(3)) == 3.0
    assert s.context.threads == 2


def test_an_abandoned_open_session_is_closed_on_collection():
    ctx = tenlane.Context(threads=1)
    s = ctx.session().open()
    del s
    gc.collect()
    ctx.close()  # would be BusyError if the session were still held
    assert ctx.closed


def test_budget_one_context_runs_maps_inline():
    ctx = tenlane.Context(threads=1)
    with ctx.session() as s:
        assert s.map(lambda i: -i, 5) == [0, -1, -2, -3, -4]
        r = s.map_einsum("i,i->", [(np.ones(3), np.ones(3))] * 4)
        assert [float(x) for x in r] == [3.0] * 4
    ctx.close()


def _task_masks():
    """Each thread of this process: its id and the CPUs it may run on."""
    masks = {}
    for status in glob.glob("/proc/self/task/*/status"):
        tid = status.split("/")[-2]
        with open(status) as f:
            for line in f:
                if line.startswith("Cpus_allowed_list:"):
                    masks[tid] = line.split(":", 1)[1].strip()
    return masks


def _cpu_list(text):
    cpus = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def test_context_pins_its_workers_one_per_cpu_unless_told_not_to():
    allowed = sorted(os.sched_getaffinity(0))
    threads = min(2, len(allowed))
    before = _task_masks()
    with tenlane.Context(threads=threads) as ctx:
        workers = {t: m for t, m in _task_masks().items() if t not in before}
        assert len(workers) == (threads if threads > 1 else 0)
        pinned = sorted(next(iter(_cpu_list(m))) for m in workers.values())
        assert all(len(_cpu_list(m)) == 1 for m in workers.values())
        n, c = len(workers), len(allowed)
        assert pinned == sorted(allowed[i * c // n] for i in range(n))  # spread evenly
        del ctx
    before = _task_masks()
    with tenlane.Context(threads=threads, pin=False) as ctx:
        workers = {t: m for t, m in _task_masks().items() if t not in before}
        assert all(_cpu_list(m) == set(allowed) for m in workers.values())
        del ctx


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_two_threads_give_one_threads_nonfinite_results_on_a_short_k_product(dtype):
    # A square row-major result with k = 4 and Inf and NaN among the inputs: cutting it over
    # two threads must not change where Inf turns into NaN (a row cut once ran another
    # kernel and gave NaN where one thread and numpy give Inf).
    rng = np.random.default_rng(3)

    def operand(shape):
        x = rng.standard_normal(shape)
        if dtype is np.complex128:
            x = x + 1j * rng.standard_normal(shape)
        x = x.astype(dtype)
        flat = x.reshape(-1)
        flat[::997] = np.nan
        flat[5::1013] = np.inf
        flat[7::1019] = -np.inf
        return x

    a, b = operand((2048, 4)), operand((4, 2048))
    results = []
    for threads in (1, 2):
        with tenlane.Context(threads=threads) as ctx, ctx.session() as s:
            results.append(np.asarray(s.einsum("ij,jk->ik", a, b)))
    np.testing.assert_array_equal(results[1], results[0])
    if tenlane.provider().startswith("reference"):
        # Netlib's zgemm multiplies each element of one operand by alpha = 1 + 0i first, and
        # 0 * Inf in that product is NaN: on that provider NaN appears where numpy (OpenBLAS)
        # and tenlane's own kernels give Inf, so only the thread counts are compared there.
        return
    with np.errstate(all="ignore"):
        want = np.einsum("ij,jk->ik", a, b)
    assert np.array_equal(np.isnan(results[0]), np.isnan(want))
