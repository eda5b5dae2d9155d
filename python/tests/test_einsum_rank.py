"""einsum at numpy 1.x's axis limit (32; tenlane takes 64, as numpy 2), through the module,
against numpy: a transpose and back, a Hadamard product, a contraction and a reduction of
32-axis arrays, in every dtype."""

import numpy as np
import pytest

from conftest import DTYPES, random_array, tolerance

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def shape_of(rank):
    return tuple(2 if k % 3 == 1 else 1 for k in range(rank))  # 2**(rank // 3) elements


@pytest.mark.parametrize("dtype", DTYPES)
def test_einsum_at_numpy_axis_limit(s, rng, dtype):
    rank = 32  # numpy 1.x's limit, and within the 52 letters a spec string can name
    x = LETTERS[:rank]
    a = random_array(rng, shape_of(rank), dtype)
    b = random_array(rng, shape_of(rank), dtype)
    c = random_array(rng, (2, 2), dtype)
    specs = [
        (f"{x}->{x[::-1]}", [a]),
        (f"{x},{x}->{x[::-1]}", [a, b]),
        (f"{x},BE->{x.replace('B', '').replace('E', '')}", [a, c]),
        (f"{x}->{x[:rank // 2]}", [a]),
    ]
    tol = tolerance(dtype)
    for spec, ops in specs:
        want = np.einsum(spec, *ops)
        got = s.einsum(spec, *ops)
        assert got.shape == want.shape, spec
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))
    back = s.einsum(f"{x[::-1]}->{x}", s.einsum(f"{x}->{x[::-1]}", a))
    assert np.array_equal(back, a)
