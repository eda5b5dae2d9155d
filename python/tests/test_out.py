"""out= on every call that returns an array, against numpy: the result lands in the caller's
array (any layout), that array is returned, and a bad out (shape, dtype, overlap, read-only,
a wrong tuple) raises a clear error and writes nothing."""

import numpy as np
import pytest

import tenlane
from tenlane._testing import live_buffers
from conftest import DTYPES, LAYOUTS, random_array, tolerance


def close(got, want, dtype):
    tol = tolerance(dtype)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def empty(shape, dtype, layout):
    """An uninitialised-looking out array (filled with a marker) in the given layout."""
    if layout == "c":
        x = np.empty(shape, dtype)
    elif layout == "fortran":
        x = np.empty(shape, dtype, order="F")
    elif layout == "strided":
        x = np.empty(tuple(2 * n for n in shape), dtype)[tuple(slice(None, None, 2) for _ in shape)]
    else:
        x = np.empty(shape, dtype)[tuple(slice(None, None, -1) for _ in shape)]
    x[...] = 7
    return x


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_core_routes_into_out(s, rng, dtype, layout):
    x = random_array(rng, (3, 4), dtype, layout)
    y = random_array(rng, (4, 5), dtype, layout)
    out = empty((3, 5), dtype, layout)
    assert s.matmul(x, y, out=out) is out
    close(out, x @ y, dtype)

    stack_a = random_array(rng, (2, 3, 4), dtype, layout)
    stack_b = random_array(rng, (2, 4, 2), dtype, layout)
    out = empty((2, 3, 2), dtype, layout)
    assert s.matmul(stack_a, stack_b, out=out) is out
    close(out, np.matmul(stack_a, stack_b), dtype)

    a = random_array(rng, (3, 4, 5), dtype, layout)
    b = random_array(rng, (5, 4, 2), dtype, layout)
    out = empty((3, 2), dtype, layout)
    assert s.tensordot(a, b, ([1, 2], [1, 0]), out=out) is out
    close(out, np.tensordot(a, b, ([1, 2], [1, 0])), dtype)

    out = empty((5, 3, 4), dtype, layout)
    assert s.transpose(a, (2, 0, 1), out=out) is out
    np.testing.assert_array_equal(out, np.transpose(a, (2, 0, 1)))

    out = empty((3, 5), dtype, layout)
    assert s.sum(a, axis=1, out=out) is out
    close(out, a.sum(axis=1), dtype)
    out = empty((3, 1, 5), dtype, layout)
    assert s.sum(a, axis=1, keepdims=True, out=out) is out
    close(out, a.sum(axis=1, keepdims=True), dtype)
    real = np.dtype(dtype).type(0).real.dtype
    out = empty((4,), real, layout)
    assert s.norm(a, axis=(0, 2), out=out) is out
    close(out, np.sqrt((abs(a) ** 2).sum(axis=(0, 2))), dtype)
    zero_d = np.empty((), dtype)
    assert s.sum(a, out=zero_d) is zero_d  # a full reduction into a 0-d out, as numpy does
    close(zero_d, a.sum(), dtype)


def test_module_level_out(rng):
    a = rng.standard_normal((6, 6))
    b = rng.standard_normal((6, 6))
    out = np.empty((6, 6))
    assert tenlane.matmul(a, b, out=out) is out
    np.testing.assert_allclose(out, a @ b, rtol=1e-12, atol=1e-12)
    x = np.empty(6)
    assert tenlane.solve(a, b[:, 0], out=x) is x
    np.testing.assert_allclose(a @ x, b[:, 0], rtol=1e-9, atol=1e-9)


def test_loop_reuses_out(s, rng):
    """The r = f(...) loop written with out=: the same memory every time, no fresh result."""
    a = rng.standard_normal((64, 64)) + 1j * rng.standard_normal((64, 64))
    out = np.empty((64, 64), complex)
    before = live_buffers()
    for _ in range(5):
        r = s.matmul(a, a, out=out)
        assert r is out
    assert live_buffers() == before
    np.testing.assert_allclose(out, a @ a, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
def test_factorizations_into_out(s, rng, dtype):
    a = random_array(rng, (6, 4), dtype, "strided")
    real = np.dtype(dtype).type(0).real.dtype
    q, r = empty((6, 4), dtype, "fortran"), empty((4, 4), dtype, "negative")
    got = s.qr(a, out=(q, r))
    assert got[0] is q and got[1] is r
    close(q @ r, a, dtype)
    close(q.conj().T @ q, np.eye(4), dtype)

    u, sv, vt = empty((6, 4), dtype, "c"), empty((4,), real, "c"), empty((4, 4), dtype, "fortran")
    got = s.svd(a, out=(u, sv, vt))
    assert got[0] is u and got[1] is sv and got[2] is vt and got[3] == 0.0
    close(sv, np.linalg.svd(a, compute_uv=False), dtype)
    close((u * sv) @ vt, a, dtype)

    q, r = empty((6, 4), dtype, "c"), empty((4, 4), dtype, "c")
    perm = np.empty(4, np.int64)
    got = s.qrcp(a, out=(q, r, perm))
    assert got[0] is q and got[1] is r and got[2] is perm
    close(q @ r, a[:, perm], dtype)

    square = random_array(rng, (5, 5), dtype, "c")
    lu, piv = empty((5, 5), dtype, "fortran"), np.empty(5, np.int64)
    got = s.lu(square, out=(lu, piv))
    assert got[0] is lu and got[1] is piv
    want_lu, want_piv = s.lu(square)
    np.testing.assert_array_equal(piv, want_piv)
    close(lu, want_lu, dtype)

    rhs = random_array(rng, (5, 2), dtype, "c")
    x = empty((5, 2), dtype, "negative")
    assert s.solve(square, rhs, out=x) is x
    close(square @ x, rhs, dtype)

    h = square + square.conj().T
    w, v = empty((5,), real, "c"), empty((5, 5), dtype, "strided")
    got = s.eigh(h, out=(w, v))
    assert got[0] is w and got[1] is v
    close(w, np.linalg.eigvalsh(h), dtype)
    close((v * w) @ v.conj().T, h, dtype)


def test_truncated_outs_come_back_cut_to_the_rank(s, rng):
    a = rng.standard_normal((8, 3)) @ rng.standard_normal((3, 8))  # rank 3
    u, sv, vt = np.empty((8, 8)), np.empty(8), np.empty((8, 8))
    gu, gs, gvt, discarded = s.svd(a, tol=1e-10, out=(u, sv, vt))
    assert gu.shape == (8, 3) and gs.shape == (3,) and gvt.shape == (3, 8)
    assert np.shares_memory(gu, u) and np.shares_memory(gs, sv) and np.shares_memory(gvt, vt)
    np.testing.assert_array_equal(sv[3:], 0)  # the columns past the rank are zeroed
    np.testing.assert_allclose((gu * gs) @ gvt, a, atol=1e-10)
    assert 0 <= discarded < 1e-18 * np.sum(a * a)
    q, r, perm = np.empty((8, 8)), np.empty((8, 8)), np.empty(8, np.int64)
    gq, gr, gperm, _ = s.qrcp(a, tol=1e-10, out=(q, r, perm))
    assert gq.shape == (8, 3) and gr.shape == (3, 8) and gperm is perm
    np.testing.assert_allclose(gq @ gr, a[:, perm], atol=1e-10)


def test_bad_out_raises_and_writes_nothing(s, rng):
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((4, 5))
    out = np.full((3, 4), 7.0)
    with pytest.raises(tenlane.ShapeError) as e:
        s.matmul(a, b, out=out)
    assert isinstance(e.value, ValueError)
    np.testing.assert_array_equal(out, 7.0)
    with pytest.raises(tenlane.DtypeError) as e:
        s.matmul(a, b, out=np.empty((3, 5), np.float32))
    assert isinstance(e.value, TypeError)
    with pytest.raises(tenlane.InvalidError):
        s.matmul(a, b, out=[[0.0] * 5] * 3)  # not an array (as einsum's out= says)
    frozen = np.empty((3, 5))
    frozen.flags.writeable = False
    with pytest.raises(tenlane.InvalidError):
        s.matmul(a, b, out=frozen)
    square = rng.standard_normal((4, 4))
    with pytest.raises(tenlane.AliasError):
        s.matmul(square, square.copy(), out=square)
    with pytest.raises(tenlane.AliasError):
        s.transpose(square, out=square)
    with pytest.raises(tenlane.ShapeError) as e:
        s.sum(a, axis=0, out=np.empty((1, 4)))  # keepdims=False drops the axis
    assert "keepdims=False" in str(e.value)
    with pytest.raises(tenlane.ShapeError):
        s.tensordot(a, b, 1, out=np.empty((3, 5, 1)))
    with pytest.raises(tenlane.DtypeError):
        s.norm(a.astype(complex), axis=0, out=np.empty(4, complex))  # norms are real


def test_bad_factorization_outs(s, rng):
    a = rng.standard_normal((5, 3))
    with pytest.raises(tenlane.InvalidError) as e:
        s.qr(a, out=[np.empty((5, 3)), np.empty((3, 3))])  # a list, not a tuple
    assert "tuple" in str(e.value)
    with pytest.raises(tenlane.InvalidError) as e:
        s.qr(a, out=(np.empty((5, 3)),))
    assert "1 entries" in str(e.value)
    with pytest.raises(tenlane.ShapeError):
        s.qr(a, out=(np.empty((5, 5)), np.empty((3, 3))))
    q = np.full((5, 3), 7.0)
    with pytest.raises(tenlane.AliasError):
        s.qr(a, out=(q, q[:3]))  # the outs overlap each other
    np.testing.assert_array_equal(q, 7.0)
    with pytest.raises(tenlane.DtypeError) as e:
        s.qrcp(a, out=(np.empty((5, 3)), np.empty((3, 3)), np.empty(3, np.int32)))
    assert "int64" in str(e.value)
    with pytest.raises(tenlane.ShapeError):
        s.qrcp(a, out=(np.empty((5, 3)), np.empty((3, 3)), np.empty(4, np.int64)))
    with pytest.raises(tenlane.InvalidError):
        s.lu(a, out=(np.empty((5, 3)), np.empty(6, np.int64)[::2]))  # perm not contiguous
    sym = a[:3].T @ a[:3]
    with pytest.raises(tenlane.AliasError):
        s.eigh(sym, out=(np.empty(3), sym))  # v over the input
    with pytest.raises(tenlane.ShapeError):
        s.qrcp(np.ones(3), out=(np.empty((1, 1)), np.empty((1, 1)), np.empty(1, np.int64)))
