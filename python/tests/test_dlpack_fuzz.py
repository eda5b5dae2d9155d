"""DLPack producer fuzz (issue 28): hypothesis builds DLManagedTensor capsules with ctypes,
well-formed ones over a numpy buffer and ones with a hostile field, and feeds each to
from_dlpack and as an einsum operand. Nothing may crash: a well-formed capsule reads exactly
what numpy reads over the same memory, a hostile one either reads that (when the field
happens to be harmless) or raises a tenlane.Error, never another exception."""

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import tenlane  # noqa: E402
from dlpack_raw import RawProducer  # noqa: E402

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
# Extents that are negative or whose element count overflows, strides whose byte stride
# overflows. (A producer that lies within the address space, e.g. a stride of 2**31 over a
# small buffer, cannot be told from a real one: no consumer can refuse it, so none is made.)
BAD_EXTENTS = [-1, -(2**31), -(2**63), 2**62, 2**63 - 1]
BAD_STRIDES = [2**62, 2**63 - 1, -(2**62), -(2**63)]

SETTINGS = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


@st.composite
def layouts(draw):
    """A well-formed tensor over a numpy backing array: shape, element strides (any sign,
    zero included), the first element's index in the backing array."""
    dtype = draw(st.sampled_from(DTYPES))
    rank = draw(st.integers(0, 4))
    shape = [draw(st.integers(0, 4)) for _ in range(rank)]
    strides = [draw(st.integers(-5, 5)) for _ in range(rank)]
    c_order = draw(st.booleans()) and rank > 0  # NULL strides: C order
    if c_order:
        strides = [int(np.prod(shape[k + 1:])) for k in range(rank)]
    lo = sum(s * (n - 1) for s, n in zip(strides, shape) if s < 0 and n > 0)
    hi = sum(s * (n - 1) for s, n in zip(strides, shape) if s > 0 and n > 0)
    first = -lo + draw(st.integers(0, 3))
    size = first + hi + 1 + draw(st.integers(0, 3))
    use_offset = draw(st.booleans())  # the start through byte_offset or through data
    return dtype, shape, None if c_order else strides, first, size, use_offset


HOSTILE = st.one_of(
    st.none(),
    st.tuples(st.just("null_shape")),
    st.tuples(st.just("null_data")),
    st.tuples(st.just("misalign"), st.integers(1, 7)),
    # ndim past TL_MAX_RANK (64; it was 16 when this list was written, and a producer that
    # claims 17 axes over a shorter shape array is now read as it says, past that array)
    st.tuples(st.just("ndim"), st.sampled_from([-1, 65, 200, 2**31 - 1, -(2**31)])),
    st.tuples(st.just("extent"), st.integers(0, 3), st.sampled_from(BAD_EXTENTS)),
    st.tuples(st.just("stride"), st.integers(0, 3), st.sampled_from(BAD_STRIDES)),
    st.tuples(st.just("byte_offset"), st.sampled_from([2**63, 2**64 - 1, 2**64 - 16])),
    st.tuples(st.just("name"), st.sampled_from([b"used_dltensor", b"dltensor_versioned", b""])),
    st.tuples(st.just("deleter")),
)


def build(layout, hostile, rng):
    dtype, shape, strides, first, size, use_offset = layout
    dtype = np.dtype(dtype)
    backing = rng.standard_normal(size + 2).astype(dtype)  # 2 spare: a misaligned read stays in
    if dtype.kind == "c":
        backing = backing + 1j * rng.standard_normal(backing.shape).astype(dtype)
    if strides is None:
        es = []
        step = 1
        for n in reversed(shape):
            es.insert(0, step)
            step *= n
    else:
        es = strides
    expected = np.lib.stride_tricks.as_strided(
        backing[first:], shape=shape, strides=[s * dtype.itemsize for s in es])
    base = backing.__array_interface__["data"][0]
    fields = dict(data=base + first * dtype.itemsize, dtype=dtype, shape=list(shape),
                  strides=None if strides is None else list(strides), keep=backing)
    if use_offset:
        fields.update(data=base, byte_offset=first * dtype.itemsize)
    hostile_kind = hostile[0] if hostile else None
    if hostile_kind in ("extent", "stride") and not shape:
        hostile_kind = None  # a scalar has no axis to spoil
    if hostile_kind == "null_shape":
        fields.update(shape=None, ndim=max(1, len(shape)))
    elif hostile_kind == "null_data":
        fields.update(data=None, byte_offset=0)
    elif hostile_kind == "misalign":
        fields.update(data=fields["data"] + hostile[1])
    elif hostile_kind == "ndim":
        fields.update(ndim=hostile[1])
    elif hostile_kind == "extent" and shape:
        sh = list(shape)
        sh[hostile[1] % len(sh)] = hostile[2]
        fields.update(shape=sh)
    elif hostile_kind == "stride" and shape:
        st_ = list(es)
        st_[hostile[1] % len(st_)] = hostile[2]
        fields.update(strides=st_)
    elif hostile_kind == "byte_offset":
        fields.update(byte_offset=hostile[1])
    elif hostile_kind == "name":
        fields.update(name=hostile[1])
    elif hostile_kind == "deleter":
        fields.update(deleter=False)
    return RawProducer(**fields), expected, hostile_kind


def check(call, expected):
    """call() either returns what numpy reads (when expected is not None) or raises a
    tenlane.Error; returns True when it worked."""
    try:
        got = call()
    except tenlane.Error as e:
        assert not isinstance(e, SystemError)
        assert e.message  # every refusal says why
        return False
    if expected is not None:
        np.testing.assert_array_equal(np.asarray(got), expected)
    return True


@pytest.fixture(scope="module")
def session():
    ctx = tenlane.Context(threads=2)
    with ctx.session() as s:
        yield s
    ctx.close()


@SETTINGS
@given(layout=layouts(), hostile=HOSTILE, seed=st.integers(0, 2**32 - 1))
def test_fuzzed_producers(session, layout, hostile, seed):
    rng = np.random.default_rng(seed)
    producer, expected, kind = build(layout, hostile, rng)
    rank = len(layout[1])
    spec = "abcd"[:rank] + "->" + "abcd"[:rank]
    # what must happen: "works" (and reads what numpy reads), "refused", or None (either)
    must = {
        None: "works",
        "deleter": "works",
        "misalign": None,  # f32 at +4 bytes is still aligned to its elements
        "ndim": "refused",
        "extent": None,  # refused, unless another axis of extent 0 leaves no element
        "stride": "refused",
        "name": "refused",
        "null_shape": "refused",
        "null_data": "refused" if expected.size else "works",
        "byte_offset": "refused" if expected.size else "works",
    }[kind]
    want = expected if must == "works" else None
    for call in (lambda: tenlane.from_dlpack(producer), lambda: session.einsum(spec, producer)):
        worked = check(call, want)
        if must is not None:
            assert worked == (must == "works"), (kind, layout)


@SETTINGS
@given(layout=layouts(), seed=st.integers(0, 2**32 - 1))
def test_fuzzed_producers_in_contractions(session, layout, seed):
    """Well-formed producers as operands of a contraction and of a reduction, against numpy
    on the same memory."""
    rng = np.random.default_rng(seed)
    producer, expected, _ = build(layout, None, rng)
    rank = len(layout[1])
    got = session.sum(producer)
    tol = 1e-4 if expected.dtype in (np.float32, np.complex64) else 1e-10
    np.testing.assert_allclose(got, expected.sum(), rtol=tol, atol=tol * max(1, expected.size))
    if rank >= 1:
        labels = "abcd"[:rank]
        got = session.einsum(f"{labels},{labels}->", producer, producer)
        want = np.einsum(f"{labels},{labels}->", expected, expected)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1, expected.size) * 10)
