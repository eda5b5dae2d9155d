"""einsum's call forms beyond a spec string: numpy's sublist form (more labels than the 52
letters) and an explicit contraction path in opt_einsum's linear format, against numpy."""

import numpy as np
import pytest

from conftest import DTYPES, random_array, tolerance


def close(got, want, dtype):
    tol = tolerance(dtype)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max(initial=0)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_sublist_form_matches_numpy(s, rng, dtype):
    a = random_array(rng, (3, 4), dtype)
    b = random_array(rng, (4, 5), dtype)
    c = random_array(rng, (2, 3, 4), dtype)
    close(s.einsum(a, [0, 1], b, [1, 2], [0, 2]), np.einsum(a, [0, 1], b, [1, 2], [0, 2]), dtype)
    close(s.einsum(a, [0, 1], b, [1, 2]), np.einsum(a, [0, 1], b, [1, 2]), dtype)
    close(s.einsum(c, [Ellipsis, 7, 1], b, [1, 9], [Ellipsis, 9, 7]),
          np.einsum(c, [Ellipsis, 7, 1], b, [1, 9], [Ellipsis, 9, 7]), dtype)


def test_sublist_network_beyond_52_labels(s, rng):
    # a ring of 30 factors, each with a free extent-1 label: 60 distinct labels
    factors = [random_array(rng, (2, 2, 1), np.float64) for _ in range(30)]
    args = []
    for k, f in enumerate(factors):
        args += [f, [k, (k + 1) % 30, 100 + k]]
    out = [100 + k for k in range(30)]
    got = s.einsum(*args, out)
    want = np.eye(2)
    for f in factors:
        want = want @ f[:, :, 0]
    assert got.shape == (1,) * 30
    np.testing.assert_allclose(got.reshape(()), np.trace(want), rtol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
def test_explicit_path_matches_numpy(s, rng, dtype):
    ops = [random_array(rng, sh, dtype) for sh in [(6, 5), (5, 7), (7, 4), (4, 6)]]
    want = np.einsum("ij,jk,kl,lm->im", *ops)
    for path in ([(0, 1), (0, 1), (0, 1)], [(2, 3), (0, 1), (0, 1)], ["einsum_path", (1, 2), (0, 2), (0, 1)]):
        close(s.einsum("ij,jk,kl,lm->im", *ops, path=path), want, dtype)
    out = np.zeros_like(want)
    s.einsum("ij,jk,kl,lm->im", *ops, path=[(2, 3), (0, 1), (0, 1)], out=out)
    close(out, want, dtype)
    close(s.einsum(ops[0], [0, 1], ops[1], [1, 2], [0, 2], path=[(0, 1)]), ops[0] @ ops[1], dtype)


def test_invalid_paths_raise_clearly(s, rng):
    ops = [random_array(rng, (3, 3), np.float64) for _ in range(3)]
    for path, says in [([(0, 1)], "need 2 pairwise steps"), ([(0, 3), (0, 1)], "step 0 is (0, 3)"),
                       ([(1, 1), (0, 1)], "step 0 is (1, 1)"), ([(0, 1, 2), (0, 1)], "step 0"),
                       ([("a", 1), (0, 1)], "step 0")]:
        with pytest.raises(ValueError, match=r"path"):
            s.einsum("ij,jk,kl->il", *ops, path=path)
        try:
            s.einsum("ij,jk,kl->il", *ops, path=path)
        except ValueError as e:
            assert says in str(e), (path, str(e))
