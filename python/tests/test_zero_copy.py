"""No copy on the way in, none on the way out: the pointers tenlane reads are the ones
numpy holds, and a result's memory is the memory tenlane allocated."""

import numpy as np
import pytest

import tenlane
from tenlane import _testing
from conftest import DTYPES, LAYOUTS, random_array


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_inputs_are_read_in_place(rng, dtype, layout):
    a = random_array(rng, (3, 4), dtype, layout)
    info = tenlane.tensor_info(a)
    assert info["data"] == a.__array_interface__["data"][0]
    assert info["shape"] == a.shape
    assert info["strides"] == tuple(st // a.itemsize for st in a.strides)
    assert info["dtype"] == {np.float32: "f32", np.float64: "f64", np.complex64: "c64", np.complex128: "c128"}[dtype]


@pytest.mark.parametrize("dtype", DTYPES)
def test_results_are_the_memory_tenlane_returned(s, rng, dtype):
    a = random_array(rng, (4, 4), dtype, "strided")
    c = s.einsum("ij,jk->ik", a, a)
    assert isinstance(c.base, tenlane.Buffer)
    assert c.__array_interface__["data"][0] == c.base.address
    # the capsule numpy takes shares the same memory
    d = np.from_dlpack(c.base)
    assert d.__array_interface__["data"][0] == c.base.address
    np.testing.assert_array_equal(d, c)


@pytest.mark.parametrize("dtype", DTYPES)
def test_out_is_written_in_place(s, rng, dtype):
    a = random_array(rng, (3, 3), dtype, "negative")
    big = np.zeros((6, 6), dtype)
    out = big[::2, ::-2]  # a strided, negatively strided out
    address = out.__array_interface__["data"][0]
    r = s.einsum("ij,jk->ik", a, a, out=out)
    assert r is out and r.__array_interface__["data"][0] == address
    np.testing.assert_allclose(big[::2, ::-2], a @ a, rtol=1e-4)


def test_a_mutation_after_the_call_does_not_change_the_result(s, rng):
    a = random_array(rng, (3, 3), np.float64)
    c = s.einsum("ij->ji", a)
    a[:] = 0
    assert not (c == 0).all()


def test_results_are_freed_when_collected(s):
    import gc

    gc.collect()
    live = _testing.live_buffers()
    c = s.einsum("ij,jk->ik", np.ones((50, 50)), np.ones((50, 50)))
    assert _testing.live_buffers() == live + 1
    view = c[::2]
    del c
    gc.collect()
    assert _testing.live_buffers() == live + 1  # the view keeps the memory
    assert view.sum() == 50.0 * 25 * 50
    del view
    gc.collect()
    assert _testing.live_buffers() == live
