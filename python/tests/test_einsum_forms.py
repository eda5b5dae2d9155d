"""einsum's call forms beyond a spec string: numpy's sublist form (more labels than the 52
letters), an explicit contraction path in opt_einsum's linear format, and order="K" (the
result in the layout the computation gives, as numpy's default), against numpy."""

import numpy as np
import pytest
import tenlane

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


# (spec, operand shapes, a Fortran-ordered first operand): where order="K" lays the result
# out as numpy's einsum does (numpy's strides are the reference), and a case numpy answers
# with a view of its input (the diagonal), which only needs equal values.
KEEP_CASES = [
    ("ij,ij->ji", [(5, 7), (5, 7)], False),
    ("ij,jk->ki", [(5, 7), (7, 3)], False),
    ("ij,jk->ik", [(5, 7), (7, 3)], True),
    ("ij->ji", [(5, 7)], False),
    ("i,j->ij", [(5,), (7,)], False),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], False),
    ("ab,bc,cd->da", [(5, 7), (7, 3), (3, 9)], False),
    ("ij,j->ji", [(5, 7), (7,)], False),
    ("bdc,dab->cdab", [(4, 5, 6), (5, 3, 4)], False),
    ("ij,jk->kij", [(5, 7), (7, 3)], True),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("spec,shapes,fortran", KEEP_CASES)
def test_order_k_lays_out_as_numpy(s, rng, dtype, spec, shapes, fortran):
    ops = [random_array(rng, shape, dtype) for shape in shapes]
    if fortran:
        ops[0] = np.asfortranarray(ops[0])
    want = np.einsum(spec, *ops)
    kept = s.einsum(spec, *ops, order="K")
    ordered = s.einsum(spec, *ops)  # order="C", the default
    close(kept, want, dtype)
    assert kept.strides == want.strides
    assert ordered.flags.c_contiguous
    close(kept, ordered, dtype)  # the routes may differ with the layout, so may the bits
    assert s.einsum(spec, *ops, order="C").flags.c_contiguous


def test_order_k_with_a_path_and_errors(s, rng):
    a, b, c = (random_array(rng, shape, np.float64) for shape in [(5, 7), (7, 3), (3, 9)])
    want = np.einsum("ab,bc,cd->da", a, b, c)
    got = s.einsum("ab,bc,cd->da", a, b, c, order="K", path=[(1, 2), (0, 1)])
    close(got, want, np.float64)
    assert got.strides == want.strides
    diagonal = s.einsum("ii->i", np.ones((4, 4)), order="K")  # numpy returns a view here
    np.testing.assert_array_equal(diagonal, np.ones(4))
    for bad in ("F", "k", "", 1, b"K"):
        with pytest.raises(tenlane.InvalidError, match="order must be 'C' or 'K'"):
            s.einsum("ij->ji", a, order=bad)
    out = np.zeros((7, 5))
    assert s.einsum("ij->ji", a, out=out, order="K") is out  # out= keeps its own layout
    np.testing.assert_array_equal(out, a.T)


def test_order_k_lays_out_products_that_sum_nothing_as_numpy(s, rng):
    # Random Hadamard, outer and broadcast products of up to five labels, each operand C- or
    # Fortran-ordered or axis-permuted: order="K" gives numpy's strides on every one.
    letters = "abcde"
    for _ in range(300):
        n = int(rng.integers(2, 6))
        extent = {label: int(rng.integers(2, 5)) for label in letters[:n]}
        terms = ["".join(rng.permutation(list(extent))[: int(rng.integers(1, n + 1))])
                 for _ in range(2)]
        out = "".join(rng.permutation(sorted(set(terms[0]) | set(terms[1]))))
        spec = f"{terms[0]},{terms[1]}->{out}"
        ops = []
        for term in terms:
            axes = rng.permutation(len(term))
            x = rng.standard_normal([extent[label] for label in np.array(list(term))[axes]])
            ops.append(np.transpose(x, np.argsort(axes)))  # term's axis order, axes' memory order
        want = np.einsum(spec, *ops)
        got = s.einsum(spec, *ops, order="K")
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=spec)
        assert got.strides == want.strides, (spec, [o.strides for o in ops])
