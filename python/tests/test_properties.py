"""Property-based tests (issue 28): hypothesis draws shapes, dtypes and memory layouts
(C order, Fortran order, strided, reversed) and checks the main calls against numpy:
einsum, matmul, tensordot, transpose, svd and qr (by reconstruction), and that argument
errors raise tenlane's exceptions. Bounded in examples, so the file runs in seconds."""

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import tenlane  # noqa: E402
from conftest import DTYPES, LAYOUTS, tolerance  # noqa: E402
from conftest import random_array as conftest_array  # noqa: E402

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def session():
    ctx = tenlane.Context(threads=2)
    with ctx.session() as s:
        yield s
    ctx.close()


def random_array(rng, shape, dtype, layout="c"):
    """conftest's arrays, where the layout exists: a scalar has only one, and a "strided"
    view of extents 1 is contiguous anyway (conftest asserts it is not)."""
    if len(shape) == 0 or (layout == "strided" and all(n <= 1 for n in shape)):
        layout = "c"
    a = conftest_array(rng, shape, dtype, layout)
    assert a.shape == tuple(shape)
    return a


def close(got, want, dtype):
    tol = tolerance(dtype)
    scale = max(1.0, float(np.max(np.abs(want))) if np.size(want) else 1.0)
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol * scale * 10)


dtypes = st.sampled_from(DTYPES)
layouts = st.sampled_from(LAYOUTS)
seeds = st.integers(0, 2**32 - 1)
extents = st.integers(1, 6)


@SETTINGS
@given(m=extents, k=extents, n=extents, dtype=dtypes, la=layouts, lb=layouts, seed=seeds)
def test_products(session, m, k, n, dtype, la, lb, seed):
    rng = np.random.default_rng(seed)
    a = random_array(rng, (m, k), dtype, la)
    b = random_array(rng, (k, n), dtype, lb)
    want = a.astype(np.complex128) @ b.astype(np.complex128)
    close(session.matmul(a, b), want, dtype)
    close(session.tensordot(a, b, axes=1), want, dtype)
    close(session.einsum("ij,jk->ik", a, b), want, dtype)
    close(session.einsum("ij,jk->ki", a, b), want.T, dtype)
    assert session.matmul(a, b).dtype == np.dtype(dtype)


@st.composite
def contractions(draw):
    """One or two operands over labels a-d with one extent per label, and an output of
    distinct labels among theirs."""
    sizes = {c: draw(st.integers(1, 4)) for c in "abcd"}
    count = draw(st.integers(1, 2))
    ops = [draw(st.lists(st.sampled_from("abcd"), min_size=0, max_size=3)) for _ in range(count)]
    used = sorted({c for op in ops for c in op})
    out = draw(st.permutations(used))[: draw(st.integers(0, len(used)))]
    spec = ",".join("".join(op) for op in ops) + "->" + "".join(out)
    shapes = [tuple(sizes[c] for c in op) for op in ops]
    return spec, shapes


@SETTINGS
@given(case=contractions(), dtype=dtypes, layout=layouts, seed=seeds)
def test_einsum_against_numpy(session, case, dtype, layout, seed):
    spec, shapes = case
    rng = np.random.default_rng(seed)
    ops = [random_array(rng, shape, dtype, layout) for shape in shapes]
    want = np.einsum(spec, *[o.astype(np.complex128) for o in ops])
    got = session.einsum(spec, *ops)
    assert got.shape == want.shape
    close(got, want, dtype)


@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=0, max_size=4), dtype=dtypes, layout=layouts,
       seed=seeds, data=st.data())
def test_transpose_and_reshape(session, shape, dtype, layout, seed, data):
    rng = np.random.default_rng(seed)
    a = random_array(rng, tuple(shape), dtype, layout)
    perm = data.draw(st.permutations(range(len(shape))))
    got = session.transpose(a, tuple(perm))
    np.testing.assert_array_equal(got, a.transpose(perm))
    np.testing.assert_array_equal(session.reshape(a, (-1,)), a.reshape(-1))


@SETTINGS
@given(m=st.integers(1, 7), n=st.integers(1, 7), dtype=dtypes, layout=layouts, seed=seeds)
def test_svd_and_qr_reconstruct(session, m, n, dtype, layout, seed):
    rng = np.random.default_rng(seed)
    a = random_array(rng, (m, n), dtype, layout)
    u, sv, vt, discarded = session.svd(a)
    assert discarded == 0.0
    assert np.all(np.diff(sv) <= 1e-6 * max(1.0, sv[0]))  # descending
    close((u * sv) @ vt, a, dtype)
    q, r = session.qr(a)
    close(q @ r, a, dtype)
    close(q.conj().T @ q, np.eye(q.shape[1]), dtype)
    assert np.allclose(np.tril(r, -1), 0)


@SETTINGS
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=3), dtype=dtypes, seed=seeds,
       perm=st.lists(st.integers(-5, 5), min_size=0, max_size=4))
def test_bad_permutations_raise(session, shape, dtype, seed, perm):
    a = random_array(np.random.default_rng(seed), tuple(shape), dtype)
    valid = sorted(perm) == list(range(len(shape)))
    if valid:
        np.testing.assert_array_equal(session.transpose(a, tuple(perm)), a.transpose(perm))
    else:
        with pytest.raises(tenlane.Error):
            session.transpose(a, tuple(perm))


@SETTINGS
@given(spec=st.text(alphabet="ab,->. ", max_size=12), count=st.integers(1, 2), dtype=dtypes,
       seed=seeds)
def test_spec_text_never_escapes_tenlanes_errors(session, spec, count, dtype, seed):
    # any spec text: a result numpy agrees with, or a tenlane.Error, never another exception
    rng = np.random.default_rng(seed)
    ops = [random_array(rng, (2, 2), dtype) for _ in range(count)]
    try:
        got = session.einsum(spec, *ops)
    except tenlane.Error as e:
        assert e.message
        return
    want = np.einsum(spec, *[o.astype(np.complex128) for o in ops])
    close(got, want, dtype)


@SETTINGS
@given(dtype_a=dtypes, dtype_b=dtypes, seed=seeds)
def test_mixed_dtypes_are_refused(session, dtype_a, dtype_b, seed):
    rng = np.random.default_rng(seed)
    a = random_array(rng, (2, 2), dtype_a)
    b = random_array(rng, (2, 2), dtype_b)
    if dtype_a == dtype_b:
        close(session.matmul(a, b), a.astype(complex) @ b.astype(complex), dtype_a)
    else:
        with pytest.raises(tenlane.DtypeError):
            session.matmul(a, b)
