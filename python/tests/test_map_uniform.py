"""map_einsum over items that share one layout (items cut from stacks: every operand of item
z lies a fixed step after item 0's) runs a run of items as one einsum (python/src/uniform.c).
Its results must be those of single calls bit for bit, in every dtype and layout it takes;
the forms it declines (and items that break the layout) must run item by item, with the
same bits and the same errors. tenlane._testing.uniform_items() tells whether the one-einsum
path ran, so a test of the path cannot pass without it."""

import numpy as np
import pytest

import tenlane
from tenlane import _testing

from conftest import DTYPES

COUNT = 200  # enough items for runs of several items on each of 2 lanes


def fill(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def check_bits(s, spec, items, expect_uniform, max_lanes=0):
    before = _testing.uniform_items()
    got = s.map_einsum(spec, items, max_lanes=max_lanes)
    ran = _testing.uniform_items() - before
    if expect_uniform:
        assert ran > 0, "the one-einsum path did not run"
    else:
        assert ran == 0, "the one-einsum path ran on a form it must decline"
    assert len(got) == len(items)
    for z, ops in enumerate(items):
        want = s.einsum(spec, *ops)
        assert got[z].dtype == want.dtype and got[z].shape == want.shape
        assert got[z].tobytes() == want.tobytes(), "item %d differs from a single call" % z


@pytest.fixture
def s():
    with tenlane.Context(threads=2) as ctx, ctx.session() as session:
        yield session


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 8, 9, 16, 17])
def test_chain_of_matrices(s, rng, dtype, k):
    stacks = [fill(rng, (COUNT, k, k), dtype) for _ in range(6)]
    items = [tuple(m[z] for m in stacks) for z in range(COUNT)]
    # k = 1: every pair costs the same, and a path that pairs two unrelated matrices (a step
    # that sums nothing) is one the path declines
    check_bits(s, "ab,bc,cd,de,ef,fg->ag", items, k > 1)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("length", [9, 10, 11, 12])
@pytest.mark.parametrize("k", [2, 4])
def test_long_chains(s, rng, dtype, k, length):
    """Chains past the exact path search (greedy paths): a step there can pair an
    intermediate whose surviving labels all follow the item axis in a stacked einsum's
    layout (10 matrices: step (14, 16)), which once put the item axis first and gave complex
    items other bits than single calls. Each step now keeps a single call's layout."""
    letters = "abcdefghijklm"
    stacks = [fill(rng, (COUNT, k, k), dtype) for _ in range(length)]
    items = [tuple(m[z] for m in stacks) for z in range(COUNT)]
    spec = ",".join(letters[i : i + 2] for i in range(length)) + "->a" + letters[length]
    check_bits(s, spec, items, True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "spec,shapes",
    [
        ("ab,bc->ac", [(3, 5), (5, 2)]),
        ("ij,kj->ik", [(4, 6), (3, 6)]),  # a transposed operand
        ("ab,b->a", [(7, 5), (5,)]),  # matrix-vector: the thin route
        ("a,ab->b", [(5,), (5, 7)]),
        ("a,a->", [(9,), (9,)]),  # a scalar per item
        ("abc,bcd->ad", [(3, 4, 2), (4, 2, 5)]),
        ("ai,ai->a", [(4, 6), (4, 6)]),  # a label kept by both inputs and the output
        ("ab,bsc,sd->acd", [(3, 4), (4, 2, 5), (2, 6)]),
        ("ea,asc,bse->cb", [(4, 3), (3, 2, 5), (6, 2, 4)]),  # an MPS environment update
    ],
)
def test_forms(s, rng, dtype, spec, shapes):
    stacks = [fill(rng, (COUNT,) + shape, dtype) for shape in shapes]
    items = [tuple(m[z] for m in stacks) for z in range(COUNT)]
    check_bits(s, spec, items, True)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_non_contiguous_items(s, rng, dtype):
    k = 5
    big = [fill(rng, (2 * COUNT, k, 2 * k), dtype) for _ in range(4)]
    # every other item, every other column, one operand transposed
    stacks = [b[::2, :, ::2] for b in big[:3]] + [big[3][::2, :, :k].transpose(0, 2, 1)]
    items = [tuple(m[z] for m in stacks) for z in range(COUNT)]
    check_bits(s, "ab,bc,cd,ed->ae", items, True)
    check_bits(s, "ab,bc,cd,ed->ae", items, True, max_lanes=1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_declined_forms_match_single_calls(s, rng, dtype):
    k = 4
    stacks = [fill(rng, (COUNT, k, k), dtype) for _ in range(3)]
    items = [tuple(m[z] for m in stacks) for z in range(COUNT)]
    # a Hadamard step (sums nothing), a diagonal, a label summed alone, the implicit form
    check_bits(s, "ab,ab,bc->ac", items, False)
    check_bits(s, "aa,ab,bc->c", items, False)
    check_bits(s, "ab,bc,cd->a", items, False)
    check_bits(s, "ab,bc,cd", items, False)
    # items interleaved in memory (the item axis fastest): not the slowest axis
    inter = [fill(rng, (k, k, COUNT), dtype) for _ in range(3)]
    items = [tuple(m[:, :, z] for m in inter) for z in range(COUNT)]
    check_bits(s, "ab,bc,cd->ad", items, False)
    # separate arrays but a declined form: not packed either
    items = [tuple(fill(rng, (k, k), dtype) for _ in range(3)) for _ in range(COUNT)]
    check_bits(s, "ab,ab,bc->ac", items, False)


def test_an_item_off_the_layout_runs_alone(s, rng):
    k = 3
    stacks = [fill(rng, (COUNT, k, k), np.complex128) for _ in range(4)]
    items = [tuple(m[z] for m in stacks) for z in range(COUNT)]
    items[37] = tuple(np.array(a) for a in items[37])  # copies: elsewhere in memory
    items[150] = (items[150][0].T,) + items[150][1:]  # other strides
    check_bits(s, "ab,bc,cd,de->ae", items, True)


def test_lowest_failing_item_is_raised(s, rng):
    k = 3
    stacks = [fill(rng, (COUNT, k, k), np.float64) for _ in range(3)]
    items = [tuple(m[z] for m in stacks) for z in range(COUNT)]
    items[120] = (items[120][0], np.ones((k + 1, k)), items[120][2])
    items[170] = (items[170][0], np.ones((2, 2)), items[170][2])
    with pytest.raises(tenlane.ShapeError) as info:
        s.map_einsum("ab,bc,cd->ad", items)
    assert info.value.item == 120
    items[60] = (items[60][0], items[60][1].astype(np.float32), items[60][2])
    with pytest.raises(tenlane.Error) as info:
        s.map_einsum("ab,bc,cd->ad", items)
    assert info.value.item == 60


def test_results_are_separate_arrays(s, rng):
    stacks = [fill(rng, (COUNT, 2, 2), np.float64) for _ in range(2)]
    items = [tuple(m[z] for m in stacks) for z in range(COUNT)]
    before = _testing.uniform_items()
    out = s.map_einsum("ab,bc->ac", items)
    assert _testing.uniform_items() > before
    out[0][...] = 7.0
    assert not np.shares_memory(out[0], out[1])
    assert np.allclose(out[1], stacks[0][1] @ stacks[1][1], rtol=1e-12, atol=1e-12)
    assert out[0].flags.c_contiguous and out[0].flags.writeable


def test_runs_are_bounded_by_their_scratch(s, rng):
    # the trace of a product: a scalar per item, intermediates of k x k per step
    for k, count, uniform in ((64, 64, True), (400, 32, False)):
        stacks = [fill(rng, (count, k, k), np.float64) for _ in range(3)]
        items = [tuple(m[z] for m in stacks) for z in range(count)]
        # 400: two items' intermediates pass a run's 4 MiB, so the items run one by one
        check_bits(s, "ab,bc,ca->", items, uniform)


def test_run_results_share_one_slab_and_outlive_it(s, rng):
    """A uniform run's results are rows of one slab (one Buffer, the base of each): every
    result is a separate, writable array of the single call's bits; one result kept alive
    keeps the slab alive after the others and the map's list are gone; collecting the last
    one frees it (no Buffer left alive); failing maps publish nothing."""
    for k, dtype in ((2, np.complex128), (8, np.complex128), (3, np.float32)):
        stacks = [fill(rng, (COUNT, k, k), dtype) for _ in range(4)]
        items = [tuple(m[z] for m in stacks) for z in range(COUNT)]
        want = [s.einsum("ab,bc,cd,de->ae", *ops).tobytes() for ops in items]
        live = _testing.live_buffers()
        before = _testing.uniform_items()
        out = s.map_einsum("ab,bc,cd,de->ae", items)
        assert _testing.uniform_items() - before == COUNT
        assert [o.tobytes() for o in out] == want
        bases = {id(o.base) for o in out}
        assert len(bases) < COUNT // 4  # one Buffer per run, not per item
        assert _testing.live_buffers() - live == len(bases)
        assert out[5].base is out[6].base and out[5].base.nbytes >= 2 * out[5].nbytes
        out[5][...] = 0
        assert out[6].tobytes() == want[6]  # rows do not overlap
        kept, other = out[COUNT - 1], out[3]
        del out
        assert kept.tobytes() == want[COUNT - 1] and other.tobytes() == want[3]
        del other
        assert kept.tobytes() == want[COUNT - 1]
        assert _testing.live_buffers() - live <= 2
        del kept
        assert _testing.live_buffers() == live


def test_run_slabs_of_a_failing_map_are_freed(s, rng):
    k = 3
    stacks = [fill(rng, (COUNT, k, k), np.complex128) for _ in range(3)]
    items = [tuple(m[z] for m in stacks) for z in range(COUNT)]
    items[COUNT - 5] = (items[COUNT - 5][0], np.ones((k + 1, k), np.complex128), items[COUNT - 5][2])
    live = _testing.live_buffers()
    before = _testing.uniform_items()
    with pytest.raises(tenlane.ShapeError) as info:
        s.map_einsum("ab,bc,cd->ad", items)
    assert info.value.item == COUNT - 5
    assert _testing.uniform_items() > before  # runs below it were made into slabs
    assert _testing.live_buffers() == live  # and freed with the map


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [1, 2, 3, 4, 8])
def test_separate_arrays_are_packed_into_runs(s, rng, dtype, k):
    """Items of one layout that are separate arrays (no fixed step between them) are copied
    into a run's stacks and run as one einsum there: the bits of single calls."""
    items = [tuple(fill(rng, (k, k), dtype) for _ in range(6)) for _ in range(COUNT)]
    check_bits(s, "ab,bc,cd,de,ef,fg->ag", items, k > 1)
    if k == 1:
        return  # (1 x 2, 2 x 1, 1 x 1): a step there may sum nothing, a declined form
    # Fortran-ordered and transposed operands keep their strides in the stacks
    items = [(fill(rng, (k, k + 1), dtype), np.asfortranarray(fill(rng, (k + 1, k), dtype)),
              fill(rng, (k, k), dtype).T) for _ in range(COUNT)]
    check_bits(s, "ab,bc,dc->ad", items, True)
    check_bits(s, "ab,bc,dc->ad", items, True, max_lanes=1)


def test_packed_environment_updates(s, rng):
    chi, d = 6, 2
    for dtype in (np.float64, np.complex128):
        items = []
        for _ in range(COUNT):
            env = fill(rng, (chi, chi), dtype)
            a = np.asfortranarray(fill(rng, (chi, d, chi), dtype))
            items.append((env, a, a.conj()))
        check_bits(s, "ab,asc,bse->ce", items, True)


def test_packed_runs_fall_back_for_mixed_items(s, rng):
    """Mixed shapes, dtypes, strides, non-dense views, unaligned memory and objects that are
    not numpy arrays in one map: runs holding such an item go item by item (same bits and
    errors as single calls), the other runs are packed."""
    k = 3
    items = [tuple(fill(rng, (k, k), np.complex128) for _ in range(4)) for _ in range(COUNT)]
    items[20] = tuple(fill(rng, (k + 1, k + 1), np.complex128) for _ in range(4))  # other shapes
    items[41] = (items[41][0].astype(np.complex64),) + items[41][1:]  # another dtype: fails alone
    items[60] = (fill(rng, (k, 2 * k), np.complex128)[:, ::2],) + items[60][1:]  # not dense
    items[90] = (np.asfortranarray(items[90][0]),) + items[90][1:]  # other strides
    items[120] = (items[120][0].newbyteorder().byteswap(),) + items[120][1:]  # byte-swapped
    with pytest.raises(tenlane.Error) as info:
        s.map_einsum("ab,bc,cd,de->ae", items)
    assert info.value.item == 41
    items[41] = tuple(fill(rng, (k, k), np.complex128) for _ in range(4))
    with pytest.raises(tenlane.DtypeError) as info:
        s.map_einsum("ab,bc,cd,de->ae", items)
    assert info.value.item == 120
    items[120] = tuple(fill(rng, (k, k), np.complex128) for _ in range(4))
    check_bits(s, "ab,bc,cd,de->ae", items, True)
    # an unaligned operand fails alone, as a single call does
    raw = np.zeros(k * k * 16 + 8, np.uint8)
    odd = raw[4 : 4 + k * k * 16].view(np.complex128).reshape(k, k)
    assert not odd.flags.aligned
    items[150] = (odd,) + items[150][1:]
    with pytest.raises(tenlane.InvalidError) as info:
        s.map_einsum("ab,bc,cd,de->ae", items)
    assert info.value.item == 150
    # not a numpy array: the item fails alone, as before
    items[150] = (memoryview(items[151][0]),) + items[150][1:]
    with pytest.raises(tenlane.DtypeError) as info:
        s.map_einsum("ab,bc,cd,de->ae", items)
    assert info.value.item == 150 and "not a numpy array" in info.value.message
    # a numpy subclass reads as its array
    items[150] = (items[151][0].view(type("Sub", (np.ndarray,), {})),) + items[150][1:]
    check_bits(s, "ab,bc,cd,de->ae", items, True)


def test_packed_results_outlive_their_operands(s, rng):
    items = [tuple(fill(rng, (2, 2), np.complex128) for _ in range(3)) for _ in range(COUNT)]
    want = [s.einsum("ab,bc,cd->ad", *ops).tobytes() for ops in items]
    out = s.map_einsum("ab,bc,cd->ad", items)
    del items
    kept = out[77]
    del out
    assert kept.tobytes() == want[77]
