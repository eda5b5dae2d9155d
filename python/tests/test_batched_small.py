"""Stacked small products from Python (the batched GEMM runner, which splits a batch over the
team in runs of entries: src/kernels/gemm_batch_runs.c): einsum "bij,bjk->bik", matmul on
stacks and chains of stacked products with n <= 16, against numpy in every dtype; one thread
and two give the same bits."""

import numpy as np
import pytest

import tenlane
from conftest import DTYPES, random_array, tolerance


def close(got, want, dtype):
    tol = 10 * tolerance(dtype)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [1, 2, 4, 5, 8, 13, 16])
def test_stacked_products_match_numpy(s, rng, dtype, k):
    a = random_array(rng, (700, k, k), dtype, "c")
    b = random_array(rng, (700, k, 3), dtype, "strided")
    close(s.einsum("bij,bjk->bik", a, b), np.matmul(a, b), dtype)
    close(s.matmul(a, b), np.matmul(a, b), dtype)
    row = random_array(rng, (700, 1, k), dtype, "negative")
    close(s.matmul(row, a), np.matmul(row, a), dtype)
    out = np.empty((700, k, 3), dtype, order="F")
    assert s.einsum("bij,bjk->bik", a, b, out=out) is out
    close(out, np.matmul(a, b), dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_chains_match_numpy(s, rng, dtype):
    stacks = [random_array(rng, (500, 4, 4), dtype) for _ in range(5)]
    want = stacks[0]
    for m in stacks[1:]:
        want = np.matmul(want, m)
    close(s.einsum("zab,zbc,zcd,zde,zef->zaf", *stacks), want, dtype)


def test_same_bits_on_one_lane_and_two(rng):
    a = random_array(rng, (5000, 6, 6), np.complex128)
    b = random_array(rng, (5000, 6, 6), np.complex128)
    got = []
    for threads in (1, 2):
        with tenlane.Context(threads=threads) as ctx, ctx.session() as s:
            got.append(s.einsum("bij,bjk->bik", a, b).tobytes())
    assert got[0] == got[1]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("layout", ["c", "entries-f", "fortran"])
def test_real_stacks_are_single_products_bit_for_bit(rng, dtype, layout):
    """(N, k, k) stacks of f32/f64, k = 2..16 (the stacked small kernel,
    src/kernels/gemm_batch_small.c): close to numpy, and each entry bit for bit what s.matmul
    gives on that entry alone, on one thread and on two."""
    for k in range(2, 17):
        a, b = (random_array(rng, (300, k, k), dtype, "c" if layout == "entries-f" else layout)
                for _ in range(2))
        if layout == "entries-f":  # each entry column-major, entries one after another
            a, b = (np.ascontiguousarray(x.transpose(0, 2, 1)).transpose(0, 2, 1) for x in (a, b))
        want = np.matmul(a, b)
        for threads in (1, 2):
            with tenlane.Context(threads=threads) as ctx, ctx.session() as s:
                got = s.matmul(a, b)
                close(got, want, dtype)
                assert s.einsum("bij,bjk->bik", a, b).tobytes() == got.tobytes()
                for z in (0, 1, 150, 299):
                    assert s.matmul(a[z], b[z]).tobytes() == got[z].tobytes()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_row_vector_stacks_are_single_products_bit_for_bit(rng, dtype):
    """(N, 1, k) @ (N, k, k) stacks, k = 2..16 (row vectors through the stacked small kernel,
    which must give what the thin kernel gives a single row-vector product): close to numpy,
    each entry bit for bit s.matmul on that entry alone, on one thread and on two; also with a
    strided row and through einsum."""
    for k in range(2, 17):
        row = random_array(rng, (300, 1, k), dtype)
        a = random_array(rng, (300, k, k), dtype)
        strided = random_array(rng, (300, 1, 2 * k), dtype)[:, :, ::2]
        want = np.matmul(row, a)
        for threads in (1, 2):
            with tenlane.Context(threads=threads) as ctx, ctx.session() as s:
                got = s.matmul(row, a)
                close(got, want, dtype)
                assert s.einsum("bij,bjk->bik", row, a).tobytes() == got.tobytes()
                for z in (0, 1, 150, 299):
                    assert s.matmul(row[z], a[z]).tobytes() == got[z].tobytes()
                    assert np.array_equal(s.matmul(row[z, 0], a[z]), got[z, 0])
                got = s.matmul(strided, a)
                close(got, np.matmul(strided, a), dtype)
                for z in (0, 299):
                    assert s.matmul(strided[z], a[z]).tobytes() == got[z].tobytes()
