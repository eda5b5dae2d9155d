"""svd's numpy keywords: compute_uv=False (the singular values alone) and full_matrices=True
(u m x m and vt n x n, unitary), against numpy.linalg.svd, fresh and into out=."""

import numpy as np
import pytest

import tenlane
from conftest import DTYPES, random_array, tolerance

SHAPES = [(7, 3), (3, 7), (5, 5), (1, 4), (4, 1)]


def close(got, want, dtype):
    tol = 10 * tolerance(dtype)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_full_matrices(s, rng, dtype, shape):
    a = random_array(rng, shape, dtype, "strided")
    m, n = shape
    k = min(m, n)
    u, sv, vt, discarded = s.svd(a, full_matrices=True)
    assert u.shape == (m, m) and sv.shape == (k,) and vt.shape == (n, n) and discarded == 0.0
    assert u.dtype == a.dtype and vt.dtype == a.dtype and sv.dtype == a.real.dtype
    close(sv, np.linalg.svd(a, compute_uv=False), dtype)
    close(u.conj().T @ u, np.eye(m), dtype)
    close(vt @ vt.conj().T, np.eye(n), dtype)
    close((u[:, :k] * sv) @ vt[:k], a, dtype)
    # the leading columns are the thin factors themselves
    tu, ts, tvt, _ = s.svd(a)
    np.testing.assert_array_equal(u[:, :k], tu)
    np.testing.assert_array_equal(vt[:k], tvt)
    # positional, as numpy's svd(a, full_matrices, compute_uv)
    u2, _, vt2, _ = tenlane.svd(a, True)
    np.testing.assert_array_equal(u2, u)
    np.testing.assert_array_equal(vt2, vt)


@pytest.mark.parametrize("dtype", DTYPES)
def test_full_matrices_into_out(s, rng, dtype):
    a = random_array(rng, (6, 4), dtype, "c")
    u = np.full((6, 6), 7, dtype, order="F")
    sv = np.empty(4, a.real.dtype)
    vt = np.empty((4, 4), dtype)[::-1]
    got = s.svd(a, full_matrices=True, out=(u, sv, vt))
    assert got[0] is u and got[1] is sv and got[2] is vt
    fu, fs, fvt, _ = s.svd(a, full_matrices=True)
    np.testing.assert_array_equal(u, fu)
    np.testing.assert_array_equal(sv, fs)
    np.testing.assert_array_equal(vt, fvt)
    bad = np.full((6, 4), 7, dtype)
    with pytest.raises(tenlane.ShapeError, match="m x m"):
        s.svd(a, full_matrices=True, out=(bad, sv, vt))
    np.testing.assert_array_equal(bad, 7)
    with pytest.raises(tenlane.DtypeError):
        s.svd(a, full_matrices=True, out=(u, sv.astype(np.complex128), vt))
    with pytest.raises(tenlane.AliasError):
        s.svd(a, full_matrices=True, out=(u, sv, u[:4, :4]))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_compute_uv_false(s, rng, dtype, shape):
    a = random_array(rng, shape, dtype, "fortran")
    sv = s.svd(a, compute_uv=False)
    assert isinstance(sv, np.ndarray) and sv.dtype == a.real.dtype
    close(sv, np.linalg.svd(a, compute_uv=False), dtype)
    assert tenlane.svd(a, True, False).shape == sv.shape  # full_matrices has no effect here
    out = np.empty(min(shape), a.real.dtype)
    assert s.svd(a, compute_uv=False, out=out) is out
    np.testing.assert_array_equal(out, sv)


def test_compute_uv_false_truncates(s, rng):
    a = rng.standard_normal((9, 2)) @ rng.standard_normal((2, 9))
    sv = s.svd(a, compute_uv=False, tol=1e-10)
    assert sv.shape == (2,)
    out = np.empty(9)
    got = s.svd(a, compute_uv=False, tol=1e-10, out=out)
    assert got.shape == (2,) and np.shares_memory(got, out)
    np.testing.assert_array_equal(got, sv)


def test_full_matrices_refuses_truncation(s, rng):
    a = rng.standard_normal((5, 3))
    with pytest.raises(tenlane.InvalidError, match="full_matrices=True"):
        s.svd(a, full_matrices=True, max_rank=2)
    with pytest.raises(tenlane.ShapeError, match="3 axes"):
        s.svd(np.ones((2, 2, 2)), full_matrices=True)
