"""Shared fixtures of the tenlane pytest suite: a context, an open session, and every dtype
in every layout (contiguous, Fortran-ordered, strided and negative-stride views)."""

import numpy as np
import pytest

import tenlane

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
LAYOUTS = ["c", "fortran", "strided", "negative"]


def tolerance(dtype):
    return 2e-4 if np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.complex64)) else 1e-11


def random_array(rng, shape, dtype, layout="c"):
    """An array of `shape` and `dtype` whose memory has the given layout; the values are
    random (complex ones have an imaginary part)."""
    dtype = np.dtype(dtype)

    def fill(s):
        x = rng.standard_normal(s)
        if dtype.kind == "c":
            x = x + 1j * rng.standard_normal(s)
        return x.astype(dtype)

    if layout == "c":
        return fill(shape)
    if layout == "fortran":
        return np.asfortranarray(fill(shape))
    if layout == "strided":  # every other element on each axis
        big = fill(tuple(2 * n for n in shape))
        view = big[tuple(slice(None, None, 2) for _ in shape)]
        assert view.shape == tuple(shape) and not view.flags.c_contiguous or len(shape) == 0
        return view
    if layout == "negative":  # reversed on every axis
        big = fill(shape)
        return big[tuple(slice(None, None, -1) for _ in shape)]
    raise ValueError(layout)


@pytest.fixture(scope="module")
def ctx():
    context = tenlane.Context(threads=2)
    yield context
    context.close()


@pytest.fixture
def s(ctx):
    with ctx.session() as session:
        yield session


@pytest.fixture
def rng():
    return np.random.default_rng(12)
