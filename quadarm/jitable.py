"""``register_jitable`` or, without numba, the identity: the one place of the numba fallback.

A function marked with it stays a plain Python function; when numba is installed, numba can
also compile it into the kernels that call it (:mod:`quadarm.runner.jit`). Standard library
only besides the optional numba, so that every layer may import it (like :mod:`quadarm.names`).
"""

from __future__ import annotations

import os
import typing
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_register: Any
_overload: Any
try:  # numba compiles these functions into the kernels that call them
    from numba.extending import overload as _overload
    from numba.extending import register_jitable as _register
except ImportError:  # pragma: no cover - numba is optional: plain Python runs the same source
    _register = _overload = None


def register_jitable(fn: F) -> F:
    """``fn``, made callable from numba-compiled code when numba is installed."""
    if _register is not None:
        _register(fn)
    return fn


def compiled_as(scalar: Callable[..., Any]) -> Callable[[F], F]:
    """Decorator: plain Python calls the decorated function, numba compiles ``scalar`` (same
    arguments, same results) wherever compiled code calls it.

    For a per-call function whose plain-Python form is vectorised with numpy (it allocates,
    which the compiled kernels must not: they run without numba's reference counting) while
    compiled code keeps the scalar loop. The two must give the same numbers bit for bit: the
    same IEEE operations in the same order per element (their tests compare them)."""

    def wrap(fn: F) -> F:
        if _overload is not None:
            # As register_jitable does it, with the other function as the implementation.
            _overload(fn, strict=False)(lambda *args, **kwargs: scalar)
        return fn

    return wrap


ENV = "QUADARM_NUMBA"  # the runner's override (quadarm.runner.jit.ENV): one of OFF = plain
OFF = ("0", "false", "no", "off")  # the values of ENV that turn numba off
_compiled: dict[Callable[..., Any], Callable[..., Any]] = {}


def wanted() -> bool:
    """Whether numba is installed and ``QUADARM_NUMBA`` does not turn it off (unset: on)."""
    env = os.environ.get(ENV, "").strip().lower()
    return _register is not None and env not in OFF


def compiled(fn: F) -> F:
    """``fn`` compiled by numba (``njit``, cached on disk next to its source) when
    :func:`wanted`, else ``fn`` itself: the same source either way, so the same numbers, bit
    for bit (IEEE arithmetic, no fast-math). For the planners' loops, which run outside the
    step seam's kernels (:mod:`quadarm.runner.jit` compiles those)."""
    if not wanted():
        return fn
    if fn not in _compiled:
        import numba

        _compiled[fn] = numba.njit(cache=True, nogil=True)(fn)
    return typing.cast(F, _compiled[fn])
