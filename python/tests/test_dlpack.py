"""DLPack 0.6 both ways: from_dlpack reads any producer in place; tenlane's result buffers
are producers numpy can read in place."""

import numpy as np
import pytest

import tenlane
from conftest import DTYPES, random_array


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["c", "fortran", "strided"])
def test_from_dlpack_shares_memory(rng, dtype, layout):
    a = random_array(rng, (3, 4), dtype, layout)
    b = tenlane.from_dlpack(a)
    assert b.__array_interface__["data"][0] == a.__array_interface__["data"][0]
    assert b.strides == a.strides and b.dtype == a.dtype
    np.testing.assert_array_equal(a, b)
    del a
    assert b.sum() == b.sum()  # still alive: the holder keeps numpy's tensor


def test_from_dlpack_of_a_result_and_back(s, rng):
    a = random_array(rng, (5, 5), np.complex128)
    c = s.einsum("ij,jk->ik", a, a)
    assert c.base.__dlpack_device__() == (1, 0)
    d = tenlane.from_dlpack(c.base)
    assert d.__array_interface__["data"][0] == c.__array_interface__["data"][0]
    np.testing.assert_array_equal(c, d)
    e = np.from_dlpack(c)  # numpy's own export of a result array
    np.testing.assert_array_equal(c, e)


def test_dlpack_producers_as_operands(s, rng):
    class Producer:
        def __init__(self, x):
            self.x = x

        def __dlpack__(self, stream=None):
            return self.x.__dlpack__()

        def __dlpack_device__(self):
            return (1, 0)

    a = random_array(rng, (3, 3), np.float64)
    p = Producer(a)
    assert tenlane.tensor_info(p)["data"] == a.__array_interface__["data"][0]
    np.testing.assert_allclose(s.einsum("ij,jk->ik", p, p), a @ a)


def test_from_dlpack_rejects_what_tenlane_lacks():
    with pytest.raises(tenlane.DtypeError):
        tenlane.from_dlpack(np.arange(4))
    with pytest.raises(tenlane.DtypeError, match="__dlpack__"):
        tenlane.from_dlpack([1.0])
    with pytest.raises(tenlane.DtypeError, match="__dlpack__") as info:
        tenlane.from_dlpack(np.ones(3, dtype=">f8"))  # numpy refuses to export it
    assert info.value.__cause__ is not None
