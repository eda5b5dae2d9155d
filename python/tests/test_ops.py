"""einsum and the core routes against numpy, in every dtype and layout."""

import numpy as np
import pytest

from conftest import DTYPES, LAYOUTS, random_array, tolerance


def close(got, want, dtype):
    assert got.dtype == np.asarray(want).dtype or got.dtype == np.dtype(dtype)
    assert got.shape == np.shape(want)
    tol = tolerance(dtype)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max(initial=0)))


SPECS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ab,asc,bsd->cd", [(3, 3), (3, 2, 4), (3, 2, 5)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 2)]),
    ("ijk->kji", [(2, 3, 4)]),
    ("ij,ij->", [(3, 4), (3, 4)]),
    ("i,j", [(3,), (4,)]),
    ("...i,...i", [(2, 1, 3), (4, 3)]),
    ("Ba,aB", [(2, 3), (3, 2)]),
    ("ba,ac", [(2, 3), (3, 2)]),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("spec,shapes", SPECS)
def test_einsum_matches_numpy(s, rng, dtype, layout, spec, shapes):
    ops = [random_array(rng, sh, dtype, layout) for sh in shapes]
    want = np.einsum(spec, *ops)
    close(s.einsum(spec, *ops), want, dtype)
    close(s.einsum(spec, *ops, path="greedy"), want, dtype)  # the result's shape found here
    close(s.einsum(spec, *ops, path="optimal"), want, dtype)


@pytest.mark.parametrize("path", ["auto", "greedy", "optimal"])
def test_einsum_paths_and_out(s, rng, path):
    a, b, c = (random_array(rng, sh, np.float64) for sh in [(3, 4), (4, 5), (5, 2)])
    want = a @ b @ c
    close(s.einsum("ij,jk,kl->il", a, b, c, path=path), want, np.float64)
    out = np.empty((3, 2))
    got = s.einsum("ij,jk,kl->il", a, b, c, path=path, out=out)
    assert got is out
    close(out, want, np.float64)
    out_t = np.empty((2, 3)).T  # a Fortran-ordered out
    s.einsum("ij,jk,kl->il", a, b, c, out=out_t)
    close(out_t, want, np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_tensordot_matmul_transpose(s, rng, dtype, layout):
    a = random_array(rng, (3, 4, 5), dtype, layout)
    b = random_array(rng, (5, 4, 2), dtype, layout)
    close(s.tensordot(a, b, axes=([1, 2], [1, 0])), np.tensordot(a, b, axes=([1, 2], [1, 0])), dtype)
    m = random_array(rng, (4, 5), dtype, layout)
    close(s.tensordot(a, m, axes=2), np.tensordot(a, m, axes=2), dtype)
    x = random_array(rng, (3, 4), dtype, layout)
    y = random_array(rng, (4, 6), dtype, layout)
    close(s.matmul(x, y), x @ y, dtype)
    v = random_array(rng, (4,), dtype, layout)
    close(s.matmul(x, v), x @ v, dtype)
    close(s.matmul(v, y), v @ y, dtype)
    stack = random_array(rng, (2, 3, 4), dtype, layout)
    close(s.matmul(stack, y), stack @ y, dtype)
    close(s.transpose(a), np.transpose(a), dtype)
    close(s.transpose(a, (1, 2, 0)), np.transpose(a, (1, 2, 0)), dtype)
    close(s.transpose(a, [-1, 0, 1]), np.transpose(a, (2, 0, 1)), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_reshape_sum_norm(s, rng, dtype, layout):
    a = random_array(rng, (3, 4, 2), dtype, layout)
    for shape in [(12, 2), (2, -1), 24, (4, 3, 2), (2, 2, 3, 2)]:
        close(s.reshape(a, shape), np.reshape(a, shape), dtype)
    for axis in [None, 0, 1, (0, 2), (-1,), (0, 1, 2)]:
        close(s.sum(a, axis), np.sum(a, axis=axis), dtype)
        want = np.sqrt(np.sum(np.abs(a) ** 2, axis=axis))
        got = s.norm(a, axis)
        assert got.dtype == np.abs(a).dtype
        close(got, want, dtype)
        close(s.sum(a, axis, keepdims=True), np.sum(a, axis=axis, keepdims=True), dtype)
    close(s.norm(a[0]), np.linalg.norm(a[0]), dtype)


def test_reshape_is_a_view_when_numpy_would_be(s, rng):
    a = random_array(rng, (4, 6), np.float64)
    r = s.reshape(a, (2, 12))
    assert np.shares_memory(r, a)
    a[0, 0] = 42.0
    assert r[0, 0] == 42.0
    t = a.T  # needs a copy in C order
    r = s.reshape(t, (24,))
    assert not np.shares_memory(r, a)
    np.testing.assert_array_equal(r, t.reshape(24))


def test_results_are_plain_numpy_arrays_over_tenlane_memory(s, rng):
    import tenlane
    from tenlane import _testing

    a = random_array(rng, (3, 3), np.float64)
    before = _testing.allocation_count()
    c = s.einsum("ij,jk->ik", a, a)
    assert type(c) is np.ndarray and isinstance(c.base, tenlane.Buffer)
    assert _testing.allocation_count() > before
    c[0, 0] = 7.0  # writable
    assert c.base.nbytes == 9 * 8
    # numpy's order: every fresh result is C-contiguous, also from lanes and factorizations
    assert c.flags.c_contiguous
    u, sv, vt, _ = s.svd(random_array(rng, (4, 3), np.float64))
    assert u.flags.c_contiguous and vt.flags.c_contiguous
    assert all(x.flags.c_contiguous for x in s.map_einsum("ij,jk->ik", [(a, a)] * 4))
    assert s.reshape(a.T, (9,)).flags.c_contiguous


def test_empty_and_scalar_operands(s):
    a = np.zeros((0, 3))
    b = np.ones((3, 2))
    got = s.einsum("ij,jk->ik", a, b)
    assert got.shape == (0, 2)
    x = np.ones((3,))
    assert s.einsum("i,i->", x, x) == 3.0
    assert s.sum(np.zeros((2, 0))).shape == ()
