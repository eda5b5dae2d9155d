"""Size arithmetic in the C part of the binding (issue 28's audit of python/src).

Extents that multiply past int64 are refused with a ShapeError that says so, never wrapped:
the reshape's inferred extent (`known *= v` wrapped: 2**32 * 2**32 gave 0 and the error
blamed the -1), and map_einsum with broadcast operands whose result would pass 64 bits
(the uniform-run planner's byte counts are checked products, so such a map falls back to
the single calls, which refuse it).
"""

import numpy as np
import pytest

import tenlane


def test_reshape_extents_past_int64(s):
    x = np.ones(6)
    for shape in ((2**32, 2**32, -1), (3**20, 3**20, -1), (2**62, 4, 1)):
        with pytest.raises(tenlane.ShapeError, match="multiply past int64"):
            s.reshape(x, shape)
    # inside int64 the usual rules hold
    assert s.reshape(x, (3, -1)).shape == (3, 2)
    with pytest.raises(tenlane.ShapeError, match="cannot infer"):
        s.reshape(x, (4, -1))


def test_map_einsum_result_past_64_bits(s):
    # 8 x (2**59 + 1) x 4 bytes is 2**64 + 32: a wrapped count would read 32 bytes
    a = np.broadcast_to(np.ones(1), (2**59 + 1,))
    b = np.ones(4)
    for spec, ops in (("i,j->ij", (a, b)), ("i,j,k->ijk", (a, b, np.ones(2)))):
        with pytest.raises(tenlane.ShapeError, match="overflows"):
            s.map_einsum(spec, [ops] * 3)
