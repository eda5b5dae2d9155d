"""numpy's habits: scalar results, conj and scale without numpy temporaries, large results
that reuse freed memory, qrcp's discarded weight summed from the dropped part, and complex
infinities kept as numpy's einsum keeps them."""

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


def test_newest_large_block_is_kept_when_the_cache_is_full(s, rng):
    """With the large-block table full of earlier sizes, a block freed now is kept (the
    oldest kept one is freed to make room) and the next result of its size takes it."""
    tenlane.release_cached_memory()
    ones = [s.matmul(np.ones((512, n)), np.eye(n)) for n in range(64, 64 + 16 * 8, 8)]
    sizes = [r.nbytes for r in ones]
    while ones:  # sixteen blocks of 256 KiB and up, freed smallest first: every slot taken
        ones.pop(0)
    full = tenlane.cached_memory()
    assert full >= sum(sizes)
    a = rng.standard_normal((700, 700))
    r = s.matmul(a, a)
    address = tenlane.tensor_info(r)["data"]
    del r  # kept: the oldest block (the 512 x 64 result) is freed for it
    after = tenlane.cached_memory()
    assert after - full >= 700 * 700 * 8 - sizes[0] - 64 * 1024
    r = s.matmul(a, a)
    assert tenlane.tensor_info(r)["data"] == address
    np.testing.assert_allclose(r, a @ a, rtol=1e-12, atol=1e-9)
    del r
    tenlane.release_cached_memory()


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


# Specs whose complex products tenlane's own kernels compute (dots, batched dots, matrix-vector
# rows, elementwise and outer products, small GEMMs); larger GEMMs go to the provider, whose
# complex product turns inf + NaN i into NaN + NaN i as numpy's matmul does.
INF_SPECS = [
    ("i,i->", [(7,), (7,)]),
    ("ij,ij->j", [(5, 6), (5, 6)]),
    ("ij,ij->i", [(5, 6), (5, 6)]),
    ("ij,ij->", [(9, 4), (9, 4)]),
    ("ij,j->i", [(40, 30), (30,)]),
    ("i,ij->j", [(40,), (40, 30)]),
    ("ij,ij->ij", [(9, 10), (9, 10)]),
    ("i,j->ij", [(9,), (10,)]),
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(3, 4, 5), (3, 5, 2)]),
]


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("spec,shapes", INF_SPECS)
def test_complex_infinity_keeps_numpys_parts(s, rng, spec, shapes, dtype):
    """A complex product over an infinite element is NaN, inf or finite in each part exactly
    where numpy's einsum (optimize=False: a plain sum of products) says so."""
    for value in (complex(np.inf, 0), complex(0, -np.inf), complex(-np.inf, 1)):
        ops = [
            (rng.standard_normal(sh) + 1j * rng.standard_normal(sh)).astype(dtype)
            for sh in shapes
        ]
        ops[0].reshape(-1)[ops[0].size // 2] = value
        with np.errstate(all="ignore"):
            want = np.asarray(np.einsum(spec, *ops))
        got = np.asarray(s.einsum(spec, *ops))
        for part in (np.real, np.imag):
            for test in (np.isnan, np.isposinf, np.isneginf):
                np.testing.assert_array_equal(
                    test(part(got)), test(part(want)), err_msg=f"{spec} {value}"
                )


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("threads", [1, 2])
def test_broadcast_operands_are_read_where_they_lie(rng, dtype, threads):
    # np.broadcast_to views (stride 0) over 2^20 rows: numpy's einsum reads them in place, and
    # so must tenlane; a dense copy of one is 16-64 MiB, far past the 1 MiB scratch limit.
    def random(shape):
        x = rng.standard_normal(shape)
        if np.dtype(dtype).kind == "c":
            x = x + 1j * rng.standard_normal(shape)
        return x.astype(dtype)

    rows = 1 << 20
    row, vec, mat = random(4), random(4), random((4, 3))
    cases = [
        ("bi,i->b", np.broadcast_to(row, (rows, 4)), vec),
        ("ib,i->b", np.broadcast_to(row[:, None], (4, rows)), vec),
        ("bi,ij->bj", np.broadcast_to(row, (rows, 4)), mat),
        ("bi,bi->b", np.broadcast_to(row, (rows, 4)), random((rows, 4))),
        ("bxi,iy->bxy", np.broadcast_to(mat.T[None], (rows // 64, 3, 4)),
         np.broadcast_to(vec[:, None], (4, 16))),
    ]
    tol = 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12
    with tenlane.Context(threads=threads, scratch_limit=1 << 20) as ctx, ctx.session() as s:
        for spec, a, b in cases:
            got = np.asarray(s.einsum(spec, a, b))
            np.testing.assert_allclose(got, np.einsum(spec, a, b), rtol=tol, atol=tol, err_msg=spec)
