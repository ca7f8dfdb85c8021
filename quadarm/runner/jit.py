"""The numba loader: a leaf module (it imports nothing from quadarm but the standard-library
registry :mod:`quadarm.terms`), so that every module of the
closed loop can import it without an import circle.

It holds everything that depends on whether numba is there:

- :func:`inline`: makes a scalar term function callable from compiled code
  (``numba.extending.register_jitable``; the identity without numba). The function itself stays
  a plain Python function, so plain Python and numba run the same source.
- :func:`kernel`: compiles a loop (``numba.njit(cache=True, nogil=True)``), or None without
  numba; the caller keeps the plain function for the plain-Python path.
- :func:`mj_step` and :func:`mj_kinematics`: one name for MuJoCo's C functions in both modes.
  Plain Python calls them with the ``MjModel`` / ``MjData`` objects (the bindings'
  ``mujoco.mj_step``); compiled code calls them with the two structs' addresses
  (``MjModel._address``), resolved by symbol name in the shared library the bindings load, so a
  cached kernel stays valid across processes.
- the cache folder: numba keys a cached kernel on its own source file only, not on the
  functions it compiles in from other modules, so the cache lives in
  ``quadarm/runner/__pycache__/numba-<hash>``, the hash of every source the kernels may compile
  in (:data:`COMPILED_SOURCES`); folders of older versions are removed once nothing has
  written into them for a day (a running job of an older version may still compile into its
  own). ``NUMBA_CACHE_DIR`` overrides it.
- the switch: :func:`use` turns the config key ``runner.compiled`` (``auto``, ``true``,
  ``false``) and the environment variable ``QUADARM_NUMBA`` (an override: ``0``/``false``/``no``
  off, anything else on) into the choice of one trial.

A fatal MuJoCo error (``mju_error``, not a warning: e.g. a corrupt model) inside a compiled
kernel cannot become a Python exception and ends the process; instabilities are warnings and are
handled like in plain Python.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import mujoco
import numpy as np

from quadarm import terms
from quadarm.jitable import ENV, OFF  # the override's one name, shared with the planners

F = TypeVar("F", bound=Callable[..., Any])

SETTINGS = ("auto", "true", "false")
_PACKAGE = Path(__file__).resolve().parents[1]
# Every source that compiled kernels may compile in: the seam and its terms' modules, from the
# registry of per-step terms (quadarm.terms: standard library only, so this stays a leaf).
COMPILED_SOURCES = terms.compiled_sources()


# How long an older version's kernel folder is kept after its last write, s. A process started
# before an edit still uses its own folder: numba compiles a kernel at its first call, which in
# a long study may come hours after the start, and writing into a folder that a newer process
# removed ends that job with a FileNotFoundError. A folder nobody wrote into for a day is stale.
STALE_S = 86400.0


def _last_write(folder: Path) -> float:
    """The newest modification time (s since the epoch) of ``folder`` and its entries; 0.0
    when it is gone."""
    try:
        return max([folder.stat().st_mtime, *(p.stat().st_mtime for p in folder.iterdir())])
    except OSError:  # removed meanwhile by another process
        return 0.0


def remove_stale(root: Path, keep: str, now: float, stale_s: float = STALE_S) -> list[Path]:
    """Removes the ``numba-*`` folders under ``root`` other than ``keep`` that nothing wrote
    into for ``stale_s`` seconds before ``now`` (s since the epoch); returns them."""
    removed = []
    for old in root.glob("numba-*"):
        if old.name != keep and now - _last_write(old) > stale_s:
            shutil.rmtree(old, ignore_errors=True)
            removed.append(old)
    return removed


def cache_dir() -> Path:
    """``quadarm/runner/__pycache__/numba-<hash>`` of :data:`COMPILED_SOURCES`; older
    ``numba-*`` folders there are removed once stale (:data:`STALE_S`)."""
    digest = hashlib.sha256()
    for rel in COMPILED_SOURCES:
        path = _PACKAGE / rel
        digest.update(rel.encode() + b"\0" + (path.read_bytes() if path.exists() else b""))
    name = f"numba-{digest.hexdigest()[:16]}"
    root = Path(__file__).resolve().parent / "__pycache__"
    remove_stale(root, name, time.time())
    return root / name


numba: Any
try:
    import numba
    from numba import types
    from numba.extending import overload, register_jitable
except ImportError:  # numba is optional: everything runs in plain Python
    numba = None

AVAILABLE = numba is not None


def mj_step(m: Any, d: Any) -> None:
    """``mj_step``: on the bindings' objects in Python, on their addresses when compiled."""
    mujoco.mj_step(m, d)


def mj_kinematics(m: Any, d: Any) -> None:
    """``mj_kinematics``, like :func:`mj_step`."""
    mujoco.mj_kinematics(m, d)


def floats(x: Any, n: int) -> Any:
    """The first ``n`` entries of the array ``x`` for scalar code: Python floats in plain
    Python (several times cheaper to index and add than numpy scalars, same values); the
    array itself when compiled."""
    return x[:n].tolist()


def copyto(dst: Any, src: Any) -> None:
    """``dst[:] = src`` for 1-d arrays: numpy's slice assignment in plain Python, an element
    loop when compiled (numba's slice assignment costs far more per call, and needs its
    reference counting)."""
    dst[:] = src


def _library() -> str:
    """The path of the MuJoCo shared library that the Python bindings load."""
    here = Path(mujoco.__file__).parent
    for pattern in ("libmujoco.so*", "libmujoco*.dylib", "mujoco*.dll"):
        found = sorted(here.glob(pattern))
        if found:
            return str(found[0])
    raise ImportError(f"no MuJoCo shared library next to {here}")


if numba is not None:
    import llvmlite.binding

    if not os.environ.get("NUMBA_CACHE_DIR"):
        numba.config.CACHE_DIR = str(cache_dir())  # before any kernel
    # Symbols are resolved by name, so the cached machine code stays valid across processes.
    llvmlite.binding.load_library_permanently(_library())
    _C_SIGNATURE: Any = types.void(types.voidptr, types.voidptr)  # void f(mjModel*, mjData*)
    _c_step = types.ExternalFunction("mj_step", _C_SIGNATURE)
    _c_kinematics = types.ExternalFunction("mj_kinematics", _C_SIGNATURE)

    @overload(mj_step)
    def _step_compiled(m: Any, d: Any) -> Any:
        if isinstance(m, types.Integer) and isinstance(d, types.Integer):
            def impl(m: Any, d: Any) -> None:
                _c_step(m, d)
            return impl
        return None

    @overload(floats)
    def _floats_compiled(x: Any, n: Any) -> Any:
        def impl(x: Any, n: Any) -> Any:
            return x
        return impl

    @overload(copyto)
    def _copyto_compiled(dst: Any, src: Any) -> Any:
        def impl(dst: Any, src: Any) -> None:
            for j in range(src.shape[0]):
                dst[j] = src[j]
        return impl

    @overload(mj_kinematics)
    def _kinematics_compiled(m: Any, d: Any) -> Any:
        if isinstance(m, types.Integer) and isinstance(d, types.Integer):
            def impl(m: Any, d: Any) -> None:
                _c_kinematics(m, d)
            return impl
        return None


def inline(fn: F) -> F:
    """``fn``, made callable from compiled kernels (numba's ``register_jitable``).

    numba compiles it as its own function and LLVM inlines it where that pays. Inlining the
    seam's terms at numba's IR instead (``inline="always"``) cost a cold compile of 130 s per
    kernel against 27 s, for no measurable gain per step (closed/bare 1.09 vs 1.06 on
    ``sim=fast``, ``python -m quadarm.bench``)."""
    if numba is None:
        return fn
    register_jitable(fn)
    return fn


def kernel(fn: Callable[..., Any]) -> Any:
    """``fn`` compiled (cached on disk, releasing the GIL), or None without numba.

    Without numba's reference counting (``_nrt=False``): the kernels allocate nothing, and
    with it every read of a record's field and every row view would cost an atomic
    increment and decrement, about a microsecond per step in all (measured).

    With numpy's error model: a float division by zero gives inf or nan, as the plain-Python
    path's numpy scalars do, instead of numba's default ZeroDivisionError. A trial whose
    state blows up then reaches the divergence check and is recorded as ``diverged`` with
    its reason and time, the same in both modes (with Python's model one compiled
    blow-up ended as an ``error`` with no log)."""
    if numba is None:
        return None
    return numba.njit(cache=True, nogil=True, _nrt=False, error_model="numpy")(fn)


_KERNELS: dict[Callable[..., Any], Any] = {}


def kernel_of(fn: Callable[..., Any], compiled: bool) -> Any:
    """``fn`` as a loop: its :func:`kernel` (made once per process, on first use) when
    ``compiled`` and numba is installed, else ``fn`` itself."""
    if not compiled or numba is None:
        return fn
    if fn not in _KERNELS:
        _KERNELS[fn] = kernel(fn)
    return _KERNELS[fn]


def layout(x: Any) -> Any:
    """A key that determines numba's type of ``x`` (:func:`entry`'s cache), or None when it
    might not: for an ``ndarray`` its dtype, dimensions, contiguity (numba's layout ``C``,
    ``F`` or ``A``), writeability and alignment; for a tuple (a record: a NamedTuple) its class
    and its fields' keys; for a Python or numpy scalar its class (an int by whether it fits in
    64 signed bits). Two arguments with equal keys get equal numba types, so one compiled
    entry serves both; anything else (lists, objects) is None: typed by numba each time."""
    kind = type(x)
    if kind is np.ndarray:
        f = x.flags
        return (x.dtype.str, x.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned)
    if isinstance(x, tuple):
        keys = tuple(layout(v) for v in x)
        return None if any(k is None for k in keys) else (kind, keys)
    if kind is int:
        return (int, -(2 ** 63) <= x < 2 ** 63)
    if kind in (bool, float) or isinstance(x, np.generic):
        return kind
    return None


_ENTRIES: dict[tuple[Any, Any], Callable[..., Any]] = {}


def entry(fn: Any, *args: Any) -> Callable[..., Any]:
    """What to call for many calls of ``fn`` with arguments of the types of ``args``: the
    compiled kernel's machine-code entry for those types (compiled, or loaded from the cache,
    now), or ``fn`` itself when it is a plain function.

    The entry skips the dispatcher's type resolution, which for the seam's records (some
    seventy arrays) costs about 20 us a call, three times the call itself (measured): the
    batched engine calls a kernel once per sample. Every later call must pass arguments of
    exactly these types (the records of one flight do).

    Resolving the types once costs about 3 ms of Python per trial for the one-trial loop's
    records (some 190 arrays with sensing), holding the GIL while the batched engine's other
    threads fly: the entry is kept per ``fn`` and :func:`layout` of ``args`` (about 0.1 ms to
    compute), which fixes numba's types, so every later trial of the same record layout
    takes it from there (the same machine code)."""
    overloads = getattr(fn, "overloads", None)
    if overloads is None:
        return fn
    key = layout(args)
    if key is not None:
        found = _ENTRIES.get((fn, key))
        if found is not None:
            return found
    sig = tuple(fn.typeof_pyval(a) for a in args)
    fn.compile(sig)
    out: Callable[..., Any] = overloads[sig].entry_point
    if key is not None:
        _ENTRIES[(fn, key)] = out
    return out


def use(setting: str = "auto") -> bool:
    """Whether a trial with ``runner.compiled = setting`` runs compiled: ``QUADARM_NUMBA``,
    when set, overrides the setting; ``auto`` means "when numba is installed". Raises
    RuntimeError for ``true`` without numba (the config check refuses it at load)."""
    env = os.environ.get(ENV)
    if env is not None and env.strip():
        wanted = env.strip().lower() not in OFF
        return wanted and AVAILABLE
    if setting == "false":
        return False
    if setting == "true" and not AVAILABLE:
        raise RuntimeError("runner.compiled=true: numba is not installed "
                           "(pip install 'quadarm[fast]')")
    return AVAILABLE
