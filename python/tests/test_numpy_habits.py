"""numpy's habits: scalar results, conj and scale without numpy temporaries, large results
that reuse freed memory, and qrcp's discarded weight summed from the dropped part."""

import numpy as np
import pytest

import tenlane


def test_full_reductions_are_scalars(s, rng):
    a = rng.standard_normal((3, 4))
    n = s.norm(a)
    assert isinstance(n, float) and np.isclose(n, np.linalg.norm(a))
    assert isinstance(s.sum(a), float)
    z = s.sum(a + 1j * a)
    assert isinstance(z, complex) and np.isclose(z, np.sum(a + 1j * a))
    assert s.norm(a, axis=0).shape == (4,)
    assert s.norm(a, keepdims=True).shape == (1, 1)


def test_conj_and_scale(s, rng):
    z = rng.standard_normal((5, 3)) + 1j * rng.standard_normal((5, 3))
    np.testing.assert_array_equal(s.conj(z), z.conj())
    np.testing.assert_allclose(s.scale(z, 2 - 1j), (2 - 1j) * z)
    x = rng.standard_normal((4, 4))
    np.testing.assert_allclose(s.scale(x, 0.5), 0.5 * x)
    out = np.empty_like(z)
    assert s.conj(z, out=out) is out
    np.testing.assert_array_equal(out, z.conj())
    assert s.scale(z, 3.0, out=out) is out
    np.testing.assert_allclose(out, 3 * z)
    with pytest.raises(tenlane.AliasError):
        s.conj(out, out=out)
    np.testing.assert_array_equal(tenlane.conj(z), z.conj())
    with pytest.raises(TypeError):
        s.scale(x, "two")


def test_large_results_reuse_freed_memory(s, rng):
    a = rng.standard_normal((256, 256)) + 0j
    r = s.matmul(a, a)
    address = tenlane.tensor_info(r)["data"]
    del r  # 1 MiB freed: kept for the next result of its size
    assert tenlane.cached_memory() >= 256 * 256 * 16
    r = s.matmul(a, a)
    assert tenlane.tensor_info(r)["data"] == address
    np.testing.assert_allclose(r, a @ a, rtol=1e-12, atol=1e-9)
    del r
    assert tenlane.release_cached_memory() >= 256 * 256 * 16


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_qrcp_discarded_weight_is_summed_from_the_dropped_part(s, rng, dtype):
    x = rng.standard_normal((40, 3)).astype(dtype)
    y = rng.standard_normal((3, 30)).astype(dtype)
    a = 1e3 * (x @ y) + 1e-9 * rng.standard_normal((40, 30))
    q, r, perm, discarded = s.qrcp(a, max_rank=3)
    residual = np.linalg.norm(a[:, perm] - q @ r) ** 2
    assert residual < 1e-12
    assert abs(discarded - residual) <= 1e-3 * residual
    q, r, perm, discarded = s.qrcp(a)  # nothing dropped: exactly 0
    assert discarded == 0.0
