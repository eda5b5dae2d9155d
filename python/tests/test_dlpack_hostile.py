"""Hostile DLPack producers (issue 28, item 8): capsules no library should make are refused
with the module's exceptions, naming the value, through from_dlpack and as operands; none
crashes the interpreter or is read in place when the docs say it is refused."""

import ctypes
import gc

import numpy as np
import pytest

import tenlane
from dlpack_raw import RawProducer, producer_over


def both_refuse(s, producer, error, match):
    """from_dlpack and an operand (s.sum) both raise `error` matching `match`."""
    with pytest.raises(error, match=match) as first:
        tenlane.from_dlpack(producer)
    with pytest.raises(error, match=match):
        s.sum(producer)
    with pytest.raises(error, match=match):
        s.einsum("...->...", producer)
    assert not isinstance(first.value, SystemError)
    return first.value


def test_a_well_formed_raw_producer_works(s):
    a = np.arange(12.0).reshape(3, 4)
    p = producer_over(a)
    b = tenlane.from_dlpack(p)
    assert b.__array_interface__["data"][0] == a.__array_interface__["data"][0]
    np.testing.assert_array_equal(a, b)
    assert s.sum(p) == a.sum()
    del b
    gc.collect()
    assert p.deleted == 1  # the holder called the deleter once, when the array went


def test_null_shape_with_axes(s):
    a = np.ones((2, 3))
    e = both_refuse(s, producer_over(a, shape=None, ndim=2), tenlane.InvalidError,
                    "2 axes and a NULL shape")
    assert e.status == "TL_E_INVALID"


def test_null_data_with_elements(s):
    p = RawProducer(None, np.float64, [8])
    both_refuse(s, p, tenlane.InvalidError, "8 elements and NULL data")
    assert p.deleted == 0  # refused: not consumed, so the deleter is not the consumer's


def test_null_data_without_elements_is_an_empty_array(s):
    p = RawProducer(None, np.float64, [0, 3])
    b = tenlane.from_dlpack(p)
    assert b.shape == (0, 3)
    assert s.sum(p) == 0.0


@pytest.mark.parametrize("extent", [-1, -3, -(2**63)])
def test_negative_extent(s, extent):
    a = np.ones(4)
    both_refuse(s, producer_over(a, shape=[extent], strides=[1]), tenlane.ShapeError,
                f"extent {extent} on axis 0")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_unaligned_data_or_byte_offset(s, dtype):
    backing = np.zeros(64, dtype=np.uint8)
    base = backing.__array_interface__["data"][0]
    base += (-base) % 16  # 16-aligned
    p = RawProducer(base + 1, dtype, [4], keep=backing)
    both_refuse(s, p, tenlane.InvalidError, "not aligned")
    p = RawProducer(base, dtype, [4], byte_offset=3, keep=backing)
    both_refuse(s, p, tenlane.InvalidError, "byte_offset 3 is not aligned")
    # an aligned byte_offset is read where it points
    a = np.arange(8.0)
    p = producer_over(a, shape=[4], strides=[1], byte_offset=4 * 8)
    np.testing.assert_array_equal(tenlane.from_dlpack(p), a[4:])
    assert s.sum(p) == a[4:].sum()


@pytest.mark.parametrize("ndim", [-1, 65, 1000, 2**31 - 1, -(2**31)])
def test_absurd_ndim(s, ndim):
    a = np.ones(4)
    both_refuse(s, producer_over(a, ndim=ndim), tenlane.ShapeError, f"has {ndim} axes")


@pytest.mark.parametrize(
    "shape, strides, match",
    [
        ([2**62, 2**62], [1, 1], "overflows 64 bits"),
        ([2**40, 2**40, 0], None, "overflows 64 bits"),
        ([2**61, 1], [0, 0], "size overflows"),
        ([4], [2**62], "stride 4611686018427387904 on axis 0"),
        ([3, 4], [1, -(2**62)], "byte span overflows"),
        ([2], [2**60], "byte span overflows"),  # 2**60 elements of 8 bytes
    ],
)
def test_overflowing_extents_and_strides(s, shape, strides, match):
    a = np.ones(4)
    both_refuse(s, producer_over(a, shape=shape, strides=strides), tenlane.ShapeError, match)


def test_byte_offset_past_the_address_space(s):
    a = np.ones(4)
    for offset in (2**63, 2**64 - 8):
        both_refuse(s, producer_over(a, byte_offset=offset), tenlane.ShapeError,
                    "past the address space")


def test_null_deleter_is_allowed(s):
    # DLPack allows a NULL deleter (nothing to free): read in place, nothing called at the end
    a = np.arange(6.0)
    p = producer_over(a, deleter=False)
    b = tenlane.from_dlpack(p)
    np.testing.assert_array_equal(a, b)
    assert s.sum(p) == a.sum()
    del b
    gc.collect()


def test_wrong_or_consumed_capsules(s):
    a = np.arange(4.0)
    with pytest.raises(tenlane.InvalidError, match='named "other", not an unconsumed'):
        tenlane.from_dlpack(producer_over(a, name=b"other"))
    with pytest.raises(tenlane.InvalidError, match='named "other"'):
        s.sum(producer_over(a, name=b"other"))

    class Reuses:
        """Hands out the same capsule every time: consumed after the first."""

        def __init__(self):
            self.capsule = np.arange(4.0).__dlpack__()

        def __dlpack__(self, stream=None):
            return self.capsule

    r = Reuses()
    first = tenlane.from_dlpack(r)
    with pytest.raises(tenlane.InvalidError, match="already consumed"):
        tenlane.from_dlpack(r)
    with pytest.raises(tenlane.InvalidError, match="already consumed"):
        s.sum(r)
    np.testing.assert_array_equal(first, np.arange(4.0))

    class NotACapsule:
        def __dlpack__(self, stream=None):
            return 17

    with pytest.raises(tenlane.DtypeError, match="returned a int, not a DLPack capsule"):
        tenlane.from_dlpack(NotACapsule())
    with pytest.raises(tenlane.DtypeError, match="not a DLPack capsule"):
        s.sum(NotACapsule())


def test_device_dtype_and_lanes_refused(s):
    a = np.ones(4)
    both_refuse(s, producer_over(a, device=2), tenlane.UnavailableError, "device type 2")
    both_refuse(s, producer_over(a, bits=16), tenlane.DtypeError, "16 bits")
    both_refuse(s, producer_over(a, lanes=4), tenlane.DtypeError, "4 lanes")
    both_refuse(s, producer_over(a, code=0), tenlane.DtypeError, "code 0")


def test_ctypes_layout_matches_the_header():
    # the test helper's structs have DLPack 0.6's sizes on this platform
    from dlpack_raw import DLManagedTensor, DLTensor

    assert ctypes.sizeof(DLTensor) == 48
    assert ctypes.sizeof(DLManagedTensor) == 64
