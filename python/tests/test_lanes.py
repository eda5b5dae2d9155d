"""map_einsum, map_svd, map_qrcp and map: results in item order, bit for bit those of the
same calls made one by one, and the lowest failing item on failure."""

import threading

import numpy as np
import pytest

import tenlane
from tenlane import _testing
from conftest import DTYPES, random_array


def environment_items(rng, count, dtype, chi=6, d=2):
    """MPS left-environment updates: E' = sum E[a,b] A[a,s,c] conj(A)[b,s,e]."""
    items = []
    for i in range(count):
        # every other environment Fortran-ordered: no two neighbours share a layout, so these
        # items run one by one (test_map_uniform.py covers the runs of one layout)
        env = random_array(rng, (chi, chi), dtype, "fortran" if i % 2 else "c")
        a = random_array(rng, (chi, d, chi), dtype, "fortran")
        items.append((env, a, a.conj()))
    return items


@pytest.mark.parametrize("dtype", DTYPES)
def test_map_einsum_equals_serial_calls(s, rng, dtype):
    items = environment_items(rng, 64, dtype)
    spec = "ab,asc,bse->ce"
    batched = s.map_einsum(spec, items)  # first: no shape was seen on any thread before
    assert len(batched) == len(items)
    for got, ops in zip(batched, items):
        one = s.einsum(spec, *ops)
        assert got.dtype == one.dtype and got.shape == one.shape
        assert got.tobytes() == one.tobytes()  # bit for bit
        np.testing.assert_allclose(got, np.einsum(spec, *ops), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", DTYPES)
def test_map_svd_and_qrcp_equal_serial_calls(s, rng, dtype):
    arrays = [random_array(rng, (6, 5), dtype, layout) for layout in ["c", "fortran", "strided", "negative"] * 4]
    batched = s.map_svd(arrays, tol=0.1, max_rank=4)
    for got, a in zip(batched, arrays):
        one = s.svd(a, tol=0.1, max_rank=4)
        for x, y in zip(got[:3], one[:3]):
            assert x.tobytes() == y.tobytes()
        assert got[3] == one[3]
    batched = s.map_qrcp(arrays, max_rank=3)
    for got, a in zip(batched, arrays):
        one = s.qrcp(a, max_rank=3)
        for x, y in zip(got[:3], one[:3]):
            assert x.tobytes() == y.tobytes()
        assert got[3] == one[3]


def test_max_lanes_gives_the_same_results(s, rng):
    items = environment_items(rng, 50, np.complex128)
    spec = "ab,asc,bse->ce"
    all_lanes = s.map_einsum(spec, items)
    one_lane = s.map_einsum(spec, items, max_lanes=1)
    assert all(x.tobytes() == y.tobytes() for x, y in zip(all_lanes, one_lane))
    lanes = set()
    s.map(lambda i: lanes.add(threading.get_ident()), 64, max_lanes=1)
    assert len(lanes) == 1
    with pytest.raises(tenlane.InvalidError):
        s.map_einsum(spec, items, max_lanes=-1)


def test_map_reports_the_lowest_failing_item(s, rng):
    good = (np.ones((3, 4)), np.ones((4, 2)))
    bad = (np.ones((3, 4)), np.ones((3, 2)))
    items = [good] * 40 + [bad] + [good] * 20 + [bad] * 30
    with pytest.raises(tenlane.ShapeError) as info:
        s.map_einsum("ij,jk->ik", items)
    assert info.value.item == 40
    assert "item 40" in info.value.message and info.value.message.startswith("tenlane.Session.map_einsum")


@pytest.mark.parametrize("count", [1000, 1001, 4099])
def test_long_map_einsum_equals_serial_calls(s, rng, count):
    """Long batches go to the lanes in runs of consecutive items (up to 16 per run); every
    result is still the single call's, bit for bit, on one lane and on all, whatever the
    last run's length."""
    items = environment_items(rng, count, np.complex128, chi=3)
    spec = "ab,asc,bse->ce"
    serial = [s.einsum(spec, *ops).tobytes() for ops in items]
    for lanes in (0, 1):
        got = s.map_einsum(spec, items, max_lanes=lanes)
        assert len(got) == count
        assert [g.tobytes() for g in got] == serial


def normalized(message):
    """A failure message with its numbers taken out (item, lane, status code)."""
    import re

    return re.sub(r"\d+", "N", message)


@pytest.mark.parametrize("first_bad", [0, 15, 16, 17, 1777, 2999])
def test_long_map_reports_the_lowest_failing_item(s, first_bad):
    """Runs of items stop at their first failure and the lowest failing run names its
    failing item: the error is the one a map of single items gives (class, item, message)."""
    good = (np.ones((3, 4)), np.ones((4, 2)))
    bad = (np.ones((3, 4)), np.ones((3, 2)))
    count = 3000
    items = [good] * count
    for i in (first_bad, first_bad + 1, first_bad + 400, count - 1):
        if i < count:
            items[i] = bad
    live = _testing.live_buffers()
    with pytest.raises(tenlane.ShapeError) as long_run:
        s.map_einsum("ij,jk->ik", items)
    assert long_run.value.item == first_bad
    assert "item %d (lane " % first_bad in long_run.value.message
    assert _testing.live_buffers() == live  # no result of the failed batch is left alive
    with pytest.raises(tenlane.ShapeError) as short_run:  # 30 items: one item at a time
        s.map_einsum("ij,jk->ik", [good] * 20 + [bad] + [good] * 9)
    assert normalized(long_run.value.message) == normalized(short_run.value.message)
    with pytest.raises(tenlane.ShapeError) as one_lane:
        s.map_einsum("ij,jk->ik", items, max_lanes=1)
    assert one_lane.value.item == first_bad


def test_long_map_failure_waits_for_the_slow_run_below_it(s):
    """The run below a failure keeps going: items 0..14 are slow, item 15 fails, and item 16
    (the first item of the next run, taken at once by the other lane) fails at once. The
    failure at 16 must not cancel the first run, whose own failure at 15 is the lowest."""
    slow = (np.ones((160, 160)), np.ones((160, 160)))
    good = (np.ones((3, 4)), np.ones((4, 2)))
    bad = (np.ones((3, 4)), np.ones((3, 2)))
    items = [slow] * 15 + [bad, bad] + [good] * 2983
    with pytest.raises(tenlane.ShapeError) as info:
        s.map_einsum("ij,jk->ik", items)
    assert info.value.item == 15
    assert "item 15 (lane " in info.value.message


def test_long_map_unreadable_operands(s):
    """In runs too, an operand that cannot be read fails its item, and the lowest failing
    item wins whichever way it failed."""
    good = (np.ones((2, 2)), np.ones((2, 2)))
    bad_shape = (np.ones((2, 3)), np.ones((2, 2)))
    bad_dtype = (np.ones((2, 2), dtype=np.int32), np.ones((2, 2)))
    items = [good] * 2000
    items[1100], items[1200] = bad_shape, bad_dtype
    with pytest.raises(tenlane.ShapeError) as info:
        s.map_einsum("ij,jk->ik", items)
    assert info.value.item == 1100
    items[1100], items[1200] = bad_dtype, bad_shape
    with pytest.raises(tenlane.DtypeError) as info:
        s.map_einsum("ij,jk->ik", items)
    assert info.value.item == 1100 and "item 1100" in info.value.message


def test_unreadable_item_below_a_failing_item(s):
    good = (np.ones((2, 2)), np.ones((2, 2)))
    bad_shape = (np.ones((2, 3)), np.ones((2, 2)))
    bad_dtype = (np.ones((2, 2), dtype=np.int32), np.ones((2, 2)))
    # an unreadable operand at item 7 after a failing item 3: item 3 is reported
    with pytest.raises(tenlane.ShapeError) as info:
        s.map_einsum("ij,jk->ik", [good] * 3 + [bad_shape] + [good] * 3 + [bad_dtype])
    assert info.value.item == 3
    # the unreadable operand is the lowest failure
    with pytest.raises(tenlane.DtypeError) as info:
        s.map_einsum("ij,jk->ik", [good] * 5 + [bad_dtype] + [bad_shape])
    assert info.value.item == 5
    with pytest.raises(tenlane.ShapeError) as info:
        s.map_svd([np.ones((2, 2))] * 3 + [np.ones(3)])
    assert info.value.item == 3


def test_map_of_python_callbacks(s):
    assert s.map(lambda i: i * i, 100) == [i * i for i in range(100)]
    assert s.map(lambda i: i, 0) == []
    seen = set()
    lock = threading.Lock()

    def record(i):
        with lock:
            seen.add(threading.get_ident())
        return i

    s.map(record, 200)
    assert len(seen) >= 1

    def fails(i):
        if i in (13, 50):
            raise KeyError(i)
        return i

    with pytest.raises(tenlane.LaneError) as info:
        s.map(fails, 100)
    assert info.value.item == 13
    assert isinstance(info.value.__cause__, KeyError) and info.value.__cause__.args == (13,)
    assert "item 13" in info.value.message


def test_callbacks_cannot_use_the_session(s):
    def use(i):
        s.sum(np.ones(3))

    with pytest.raises(tenlane.LaneError) as info:
        s.map(use, 4)
    assert isinstance(info.value.__cause__, (tenlane.PhaseActiveError, tenlane.WrongThreadError))


def test_map_releases_the_gil(ctx, rng):
    """Another Python thread makes progress while a long map_einsum runs."""
    items = environment_items(rng, 3000, np.float64, chi=24)
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)

    t = threading.Thread(target=ticker)
    with ctx.session() as s:
        t.start()
        n0 = len(ticks)
        s.map_einsum("ab,asc,bse->ce", items)
        n1 = len(ticks)
    stop.set()
    t.join()
    assert n1 > n0


def test_batched_operands_are_numpy_arrays(s):
    a = np.ones((2, 2))
    items = [(a, a), (a, memoryview(a)), [a, a]]  # a list is taken as a tuple
    with pytest.raises(tenlane.DtypeError) as info:
        s.map_einsum("ij,jk->ik", items)
    assert info.value.item == 1 and "not a numpy array" in info.value.message
    got = s.map_einsum("ij,jk->ik", [(a, a), [a, tenlane.from_dlpack(a)]])
    assert all((g == 2.0).all() for g in got)


def test_small_results_reuse_kept_memory(s, rng):
    """map_einsum's small results lie in blocks kept for the next results of their size:
    after a batch is dropped its blocks are kept (tenlane.cached_memory()), the next batch of
    the same size takes them again, and release_cached_memory() frees them."""
    tenlane.release_cached_memory()
    items = environment_items(rng, 40, np.float64)
    spec = "ab,asc,bse->ce"
    first = s.map_einsum(spec, items)
    addresses = {r.base.address for r in first}
    assert all(r.__array_interface__["data"][0] == r.base.address for r in first)
    assert all(r.base.address % 64 == 0 for r in first)
    assert tenlane.cached_memory() < 40 * 6 * 6 * 8  # the blocks are the results' now
    expected = [r.copy() for r in first]
    del first
    kept = tenlane.cached_memory()
    assert kept >= 40 * 6 * 6 * 8
    again = s.map_einsum(spec, items)
    assert len(addresses & {r.base.address for r in again}) >= 30  # reused, not new
    assert tenlane.cached_memory() < kept
    for got, want in zip(again, expected):
        assert got.tobytes() == want.tobytes()
    del again
    assert tenlane.release_cached_memory() >= 40 * 6 * 6 * 8
    assert tenlane.cached_memory() == 0


def test_collected_results_are_reused_safely(s, rng):
    """Collected results' Buffer objects and blocks are kept for the next batch (the blocks
    given back in groups): batch after batch the values are the single calls', a result kept
    from an earlier batch stays intact and exports by DLPack, live_buffers counts only the
    living, and release_cached_memory leaves nothing kept."""
    items = environment_items(rng, 600, np.float64, chi=4)
    spec = "ab,asc,bse->ce"
    want = [s.einsum(spec, *ops).tobytes() for ops in items]
    live = _testing.live_buffers()
    kept = None
    for r in range(6):
        out = s.map_einsum(spec, items)
        assert [o.tobytes() for o in out] == want
        if r == 1:
            kept = out[7]  # outlives its batch
        del out
        assert _testing.live_buffers() == live + (kept is not None)
        assert kept is None or kept.tobytes() == want[7]
    assert np.from_dlpack(kept.base).nbytes == kept.nbytes
    assert tenlane.cached_memory() >= 599 * 4 * 4 * 8  # the dropped batch's blocks, all counted
    tenlane.release_cached_memory()
    assert tenlane.cached_memory() == 0
    again = s.map_einsum(spec, items)
    assert [o.tobytes() for o in again] == want and kept.tobytes() == want[7]


def test_kept_memory_is_capped(s):
    """At most 64 MiB of collected results is kept; the rest goes back to the system."""
    tenlane.release_cached_memory()
    a = np.ones((64, 64))  # 32 KiB results
    f = np.asfortranarray(a)  # neighbours of two layouts: one block per result, not runs
    results = s.map_einsum("ij,jk->ik", [(a, a), (a, f)] * 1300)  # 83 MB of results
    assert all(r[0, 0] == 64.0 for r in results)
    del results
    assert 60 << 20 <= tenlane.cached_memory() <= 64 << 20
    tenlane.release_cached_memory()


def test_results_that_take_no_kept_block_are_still_right(s, rng):
    """Specs whose result shape is not read off the operands beforehand (implicit output,
    "..."), results over 64 KiB and mixed dtypes go the plain way, with the same values and
    errors as single calls; a failing item gives its blocks back."""
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    for spec in ["ij,jk", "...j,jk->...k", "ij,jk->ik"]:
        got = s.map_einsum(spec, [(a, b)] * 3)
        assert all(g.tobytes() == s.einsum(spec, a, b).tobytes() for g in got)
    big = np.ones((100, 100))  # 80 KB result
    assert s.map_einsum("ij,jk->ik", [(big, big)])[0][5, 5] == 100.0
    with pytest.raises(tenlane.DtypeError):
        s.map_einsum("ij,jk->ik", [(a, b.astype(np.float32))])
    tenlane.release_cached_memory()
    live = _testing.live_buffers()
    with pytest.raises(tenlane.ShapeError) as caught:
        s.map_einsum("ij,jk->ik", [(a, b)] * 10 + [(a, a)] + [(a, b)] * 10)
    assert caught.value.item == 10
    assert _testing.live_buffers() == live
    assert tenlane.cached_memory() >= 10 * 3 * 5 * 8  # the items below it gave theirs back



def test_buffers_of_many_axes(s, rng):
    """A Buffer keeps the shapes and strides of up to 4 axes in itself and more on the heap:
    results of 1 to 7 axes (owned memory and kept blocks) keep their values, export the
    same array by DLPack and free their Buffers when collected."""
    live = _testing.live_buffers()
    for rank in range(1, 8):
        shape = tuple(2 + (k % 2) for k in range(rank))
        x = rng.standard_normal(shape)
        letters = "abcdefg"[:rank]
        spec = letters + "->" + letters[::-1]
        single = s.einsum(spec, x)
        batch = s.map_einsum(letters + "," + letters[-1] + "->" + letters, [(x, np.ones(shape[-1]))] * 3)
        for r, want in ((single, x.transpose()), (batch[2], x)):
            assert isinstance(r.base, tenlane.Buffer)
            assert r.base.nbytes >= r.nbytes
            assert np.array_equal(r, want)
            back = np.from_dlpack(r.base)
            assert back.shape == r.shape and np.array_equal(back, want)
        del single, batch, r, back
    assert _testing.live_buffers() == live
