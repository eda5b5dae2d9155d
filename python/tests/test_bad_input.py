"""Bad input never crashes the interpreter: every Session function, fed every kind of bad
argument, raises (a tenlane.Error, or Python's TypeError/ValueError/OverflowError for
arguments of the wrong Python type) and writes nothing."""

import numpy as np
import pytest

import tenlane

BAD = [
    None,
    "text",
    [[1.0, 2.0], [3.0, 4.0]],
    np.ones((2, 2), dtype=np.int32),
    np.ones((2, 2), dtype=bool),
    np.float64(3.0),
    np.ones(()),
    np.ones((0, 0)),
    np.ones((0, 3)),
    np.ones((3,)),
    np.ones((2, 3, 4)),
    np.ones((1,) * 17),
    np.full((3, 3), np.nan),
    np.full((3, 3), np.inf),
    np.ones((4, 4))[:, ::3],
    np.lib.stride_tricks.as_strided(np.ones(3), (3, 3), (0, 8)),  # zero stride (broadcast)
    np.ones((2, 2), dtype=">c16"),
]

EXPECTED = (tenlane.Error, TypeError, ValueError, OverflowError)


def calls(s, x):
    g = np.ones((3, 3))
    yield lambda: s.einsum("ij,jk->ik", x, g)
    yield lambda: s.einsum("ij,jk->ik", g, x)
    yield lambda: s.einsum("...,...->...", x, x)
    yield lambda: s.tensordot(x, g)
    yield lambda: s.tensordot(x, g, axes=([0, 1], [5, 6]))
    yield lambda: s.tensordot(x, x, axes=(list(range(20)), list(range(20))))
    yield lambda: s.matmul(x, g)
    yield lambda: s.transpose(x, (0, 0))
    yield lambda: s.reshape(x, (7, -1))
    yield lambda: s.sum(x, axis=(0, 0))
    yield lambda: s.norm(x, axis=9)
    yield lambda: s.qr(x)
    yield lambda: s.qrcp(x, tol=-1.0)
    yield lambda: s.svd(x, max_rank=-2)
    yield lambda: s.lu(x)
    yield lambda: s.solve(x, g)
    yield lambda: s.solve(g, x)
    yield lambda: s.eigh(x, UPLO="X")
    yield lambda: s.map_einsum("ij,jk->ik", [(x, g), (g, g)])
    yield lambda: s.map_einsum("ij,jk->ik", x)
    yield lambda: s.map_svd([g, x])
    yield lambda: s.map_qrcp([x], max_rank=-1)
    yield lambda: s.map(x, 3)
    yield lambda: tenlane.from_dlpack(x)


@pytest.mark.parametrize("index", range(len(BAD)))
def test_every_function_survives_bad_input(s, index):
    x = BAD[index]
    for call in calls(s, x):
        try:
            result = call()
        except EXPECTED as e:
            if isinstance(e, tenlane.Error):
                assert e.status.startswith("TL_E_") and e.message
            continue
        # some inputs are valid for some calls (NaN is a value for einsum): then the result
        # must be a numpy array, a tuple of them or a list
        assert isinstance(result, (np.ndarray, tuple, list, np.generic))
    assert s.is_open
    assert s.sum(np.ones(3)) == 3.0  # the session still works


def test_out_is_untouched_by_any_failure(s):
    failures = 0
    for bad in BAD:
        out = np.full((3, 3), 4.0)
        try:
            s.einsum("ij,jk->ik", bad, np.ones((3, 3)), out=out)
        except EXPECTED:
            failures += 1
            assert (out == 4.0).all()
    assert failures >= len(BAD) - 3
