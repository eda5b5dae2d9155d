"""Test hooks of tenlane (not a stable API): leak checks and the benchmark's C anchor."""

from ._core import _allocation_count as allocation_count
from ._core import _live_buffers as live_buffers
from ._core import _time_c_einsum as time_c_einsum
from ._core import _uniform_items as uniform_items

__all__ = ["allocation_count", "live_buffers", "time_c_einsum", "uniform_items"]
