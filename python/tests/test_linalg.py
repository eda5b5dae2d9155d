"""The factorizations and solves against numpy, in every dtype and layout."""

import numpy as np
import pytest

from conftest import DTYPES, LAYOUTS, random_array, tolerance


def close(got, want, dtype):
    tol = tolerance(dtype) * 10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max(initial=0)))


def orthonormal(q, dtype):
    close(q.conj().T @ q, np.eye(q.shape[1]), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_qr_svd_qrcp(s, rng, dtype, layout, shape):
    a = random_array(rng, shape, dtype, layout)
    q, r = s.qr(a)
    k = min(shape)
    assert q.shape == (shape[0], k) and r.shape == (k, shape[1])
    close(q @ r, a, dtype)
    orthonormal(q, dtype)
    assert np.allclose(np.tril(r, -1), 0)

    u, sv, vt, discarded = s.svd(a)
    close(sv, np.linalg.svd(a, compute_uv=False), dtype)
    close((u * sv) @ vt, a, dtype)
    assert discarded == 0.0
    assert sv.dtype == np.abs(a).dtype

    u, sv2, vt, discarded = s.svd(a, max_rank=2)
    full = np.linalg.svd(a.astype(np.complex128), compute_uv=False)
    assert u.shape == (shape[0], 2) and vt.shape == (2, shape[1])
    close(np.array([discarded]), np.array([np.sum(full[2:] ** 2)]), dtype)
    close(np.array([np.linalg.norm(a - (u * sv2) @ vt) ** 2]), np.array([discarded]), dtype)

    q, r, perm, discarded = s.qrcp(a)
    close(q @ r, a[:, perm], dtype)
    assert discarded <= 100 * np.finfo(dtype).eps * np.linalg.norm(a) ** 2
    assert sorted(perm) == list(range(shape[1]))
    d = np.abs(np.diag(r))
    assert np.all(d[:-1] >= d[1:] * (1 - 1e-5))
    q, r, perm, discarded = s.qrcp(a, max_rank=2)
    assert q.shape == (shape[0], 2) and r.shape == (2, shape[1])
    error = np.linalg.norm(a[:, perm] - q @ r) ** 2  # what the dropped rows of r held
    assert abs(discarded - error) <= 100 * np.finfo(dtype).eps * np.linalg.norm(a) ** 2 + 1e-3 * error


def test_truncation_by_tolerance(s, rng):
    x = rng.standard_normal((6, 2))
    a = x @ rng.standard_normal((2, 5)) + 1e-9 * rng.standard_normal((6, 5))
    u, sv, vt, discarded = s.svd(a, tol=1e-6)
    assert len(sv) == 2 and 0 < discarded < 1e-15
    q, r, perm, _ = s.qrcp(a, tol=1e-6)
    assert q.shape[1] == 2
    np.testing.assert_allclose(q @ r, a[:, perm], atol=1e-7)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_lu_solve_eigh(s, rng, dtype, layout):
    n = 5
    a = random_array(rng, (n, n), dtype, layout) + 3 * np.eye(n, dtype=dtype)
    lu, piv = s.lu(a)
    p = np.arange(n)
    for i, j in enumerate(piv):
        p[[i, j]] = p[[j, i]]
    low = np.tril(lu, -1) + np.eye(n)
    close(low @ np.triu(lu), a[p], dtype)
    b = random_array(rng, (n, 3), dtype, layout)
    close(s.solve(a, b), np.linalg.solve(a, b), dtype)
    v1 = random_array(rng, (n,), dtype, layout)
    close(s.solve(a, v1), np.linalg.solve(a, v1), dtype)
    h = a + a.conj().T
    w, v = s.eigh(h)
    ww, _ = np.linalg.eigh(h)
    close(w, ww, dtype)
    close((v * w) @ v.conj().T, h, dtype)
    w_upper, _ = s.eigh(np.triu(h), UPLO="U")
    close(w_upper, ww, dtype)


def test_singular_solve_raises(s):
    import tenlane

    a = np.zeros((3, 3))
    with pytest.raises(tenlane.InvalidError) as info:
        s.solve(a, np.ones(3))
    assert info.value.status == "TL_E_INVALID"
