"""Errors are exceptions: one class per status, carrying tenlane's message and status
name; bad input never crashes and never writes the output."""

import array
import re

import numpy as np
import pytest

import tenlane

STATUS_HEADER = "include/tenlane/status.h"


def statuses_in_header():
    import os

    root = os.environ.get("TENLANE_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
    with open(os.path.join(root, STATUS_HEADER)) as f:
        return re.findall(r"^\s*X\((E_\w+),", f.read(), re.M)


def test_every_status_has_a_class():
    names = statuses_in_header()
    assert "E_SHAPE" in names and len(names) >= 19
    seen = set()
    for suffix in names:
        camel = "".join(part.capitalize() for part in suffix[2:].split("_"))
        cls = getattr(tenlane, "NoMemoryError" if suffix == "E_NOMEM" else camel + "Error")
        assert issubclass(cls, tenlane.Error)
        assert cls.status == "TL_" + suffix
        assert cls not in seen
        seen.add(cls)
    assert tenlane.ShapeError.status == "TL_E_SHAPE"
    assert issubclass(tenlane.ShapeError, ValueError)
    assert issubclass(tenlane.DtypeError, TypeError)
    assert issubclass(tenlane.WrongThreadError, tenlane.Error)


def test_shape_error_carries_the_library_message(s):
    a = np.ones((3, 4))
    with pytest.raises(tenlane.ShapeError) as info:
        s.einsum("ij,jk->ik", a, a)
    e = info.value
    assert e.status == "TL_E_SHAPE" and e.code == tenlane.ShapeError.code
    assert "'j'" in e.message and "4" in e.message and "3" in e.message
    assert str(e) == e.message
    assert e.item is None


def test_invalid_spec(s):
    a = np.ones((2, 2))
    with pytest.raises(tenlane.InvalidError, match="spec"):
        s.einsum("ij,jk->iq", a, a)
    with pytest.raises(tenlane.InvalidError):
        s.einsum("ij,jk->ik", a, a, path="fastest")


def test_mixed_dtypes_promote_as_in_numpy(s):
    a = np.arange(4.0).reshape(2, 2)
    for x, y in [(np.float64, np.float32), (np.complex64, np.float64), (np.float32, np.complex64),
                 (np.complex128, np.float32)]:
        got = s.einsum("ij,jk->ik", a.astype(x), (a + 1j * (y in (np.complex64,))).astype(y))
        want = np.einsum("ij,jk->ik", a.astype(x), (a + 1j * (y in (np.complex64,))).astype(y))
        assert got.dtype == want.dtype, (x, y)
        np.testing.assert_allclose(got, want, rtol=1e-6)
    # the docs' MPS step: complex cores with real singular values
    core = np.ones((2, 2, 2), np.complex128)
    sv = np.array([2.0, 3.0])
    got = s.einsum("asb,bc,c->asc", core, np.eye(2, dtype=np.complex128), sv)
    np.testing.assert_array_equal(got, np.einsum("asb,bc,c->asc", core, np.eye(2), sv))


@pytest.mark.parametrize(
    "bad",
    [
        [[1.0, 2.0], [3.0, 4.0]],  # a list: tenlane does not copy in
        np.ones((2, 2), dtype=np.int64),
        np.ones((2, 2), dtype=np.float16),
        np.ones((2, 2), dtype=">f8"),  # byte-swapped
        "not an array",
        None,
    ],
)
def test_bad_operands_raise_and_write_nothing(s, bad):
    out = np.full((2, 2), 5.0)
    with pytest.raises(tenlane.Error) as info:
        s.einsum("ij,jk->ik", bad, np.ones((2, 2)), out=out)
    assert info.value.message.startswith("tenlane.Session.einsum: operand 0")
    assert (out == 5.0).all()


def test_unaligned_and_odd_strides(s):
    raw = np.zeros(8 * 5 + 1, dtype=np.uint8)
    unaligned = raw[1:].view(np.float64)
    assert not unaligned.flags.aligned
    with pytest.raises(tenlane.InvalidError, match="aligned"):
        s.sum(unaligned)
    rec = np.zeros(4, dtype=[("x", np.float64), ("y", np.float32)])
    with pytest.raises(tenlane.ShapeError, match="stride"):
        s.sum(rec["x"])
    # more axes than tenlane takes (64) is more than numpy makes (32 in 1.x, 64 in 2)


def test_failed_calls_write_nothing_to_out(s):
    a = np.ones((3, 4))
    out = np.full((3, 3), 9.0)
    with pytest.raises(tenlane.ShapeError):
        s.einsum("ij,jk->ik", a, a, out=out)
    assert (out == 9.0).all()
    with pytest.raises(tenlane.AliasError):
        s.einsum("ij,jk->ik", a[:, :3], a[:3, :3].copy(), out=a[:, :3])
    assert (a == 1.0).all()
    ro = np.zeros((3, 3))
    ro.flags.writeable = False
    with pytest.raises(tenlane.InvalidError, match="read-only"):
        s.einsum("ij,jk->ik", a[:, :3], a[:3, :3], out=ro)


def test_nan_input_is_not_a_crash(s):
    a = np.full((3, 3), np.nan)
    c = s.einsum("ij,jk->ik", a, a)
    assert np.isnan(c).all()
    try:
        s.svd(a)
    except tenlane.Error as e:  # a typed error is fine, a crash is not
        assert e.status.startswith("TL_E_")


def test_buffers_other_than_numpy(s):
    buf = array.array("d", [1.0, 2.0, 3.0])
    assert s.sum(buf) == 6.0
    assert s.sum(memoryview(buf)) == 6.0
    with pytest.raises(tenlane.DtypeError):
        s.sum(array.array("i", [1, 2]))


def test_closed_session_and_context(ctx):
    with ctx.session() as s:
        pass
    with pytest.raises(tenlane.StaleError, match="not open"):
        s.sum(np.ones(2))
    c = tenlane.Context(threads=1)
    c.close()
    with pytest.raises(tenlane.StaleError):
        c.session()


def test_busy_context_cannot_close(ctx):
    with ctx.session():
        with pytest.raises(tenlane.BusyError):
            ctx.close()


def test_nested_session_on_one_thread_is_reentered(ctx):
    with ctx.session():
        with pytest.raises(tenlane.ReenteredError):
            ctx.session().open()
