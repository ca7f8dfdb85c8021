"""``register_jitable`` or, without numba, the identity: the one place of the numba fallback.

A function marked with it stays a plain Python function; when numba is installed, numba can
also compile it into the kernels that call it (:mod:`quadarm.runner.jit`). Standard library
only besides the optional numba, so that every layer may import it (like :mod:`quadarm.names`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_register: Any
try:  # numba compiles these functions into the kernels that call them
    from numba.extending import register_jitable as _register
except ImportError:  # pragma: no cover - numba is optional: plain Python runs the same source
    _register = None


def register_jitable(fn: F) -> F:
    """``fn``, made callable from numba-compiled code when numba is installed."""
    if _register is not None:
        _register(fn)
    return fn
