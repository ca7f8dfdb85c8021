"""MuJoCo's repeated warnings, collapsed into one line with a count.

MuJoCo's C library prints its warnings (``WARNING: Nan, Inf or huge value in QACC ...``,
``Linesearch objective is not convex``) on the process's stderr, one per step: a trial that goes
unstable prints dozens before the divergence check stops it, and a compiled kernel or a batch
thread calls MuJoCo without the GIL, so a Python warning callback could deadlock. Instead,
:func:`collapsed` points file descriptor 2 at a temporary file while a trial flies and, when the
last flight of the process ends, prints what was caught: every MuJoCo warning once, with its
count and first time, and any other text as it was. :func:`write_terminal` writes to the real
stderr while a flight holds it (the progress line writes there).

The redirect is process-wide and reference counted (threads of one process may fly trials at
once); it changes no number of any trial.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from typing import IO

_LOCK = threading.Lock()
_DEPTH = 0
_SAVED: int | None = None  # a duplicate of the original fd 2 while redirected
_CATCH: IO[bytes] | None = None
_TIME = re.compile(r"\s*Time = [-+0-9.eE]+\.?\s*$")
_WARNING = "WARNING: "


def summary(text: str) -> str:
    """``text`` (what stderr received) with MuJoCo's warning lines collapsed: each distinct
    warning once, in order of first appearance, as ``quadarm: MuJoCo warning (N times, first
    at t = ... s): ...``; other lines unchanged, blank lines dropped."""
    counts: dict[str, int] = {}
    first: dict[str, str] = {}
    out: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line.startswith(_WARNING):
            out.append(line)
            continue
        body = line[len(_WARNING):]
        m = _TIME.search(body)
        key = body[:m.start()].rstrip(" .") if m else body.rstrip(" .")
        when = m.group(0).split("=")[1].strip().rstrip(".") if m else ""
        if key not in counts:
            counts[key], first[key] = 0, when
            out.append("\0" + key)
        counts[key] += 1
    lines = []
    for line in out:
        if line.startswith("\0"):
            key = line[1:]
            n, when = counts[key], first[key]
            at = f", first at t = {when} s" if when else ""
            times = f"{n} times" if n != 1 else "once"
            lines.append(f"quadarm: MuJoCo warning ({times}{at}): {key}")
        else:
            lines.append(line)
    return "\n".join(lines) + ("\n" if lines else "")


def _fileno() -> int | None:
    try:
        return sys.__stderr__.fileno() if sys.__stderr__ is not None else None
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None


@contextlib.contextmanager
def collapsed() -> Iterator[None]:
    """While inside, fd 2 goes to a temporary file; when the outermost ``collapsed`` of the
    process ends, its text is printed on the real stderr through :func:`summary`. A no-op
    where stderr has no file descriptor."""
    global _DEPTH, _SAVED, _CATCH
    fd = _fileno()
    if fd != 2:
        yield
        return
    with _LOCK:
        if _DEPTH == 0:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.flush()
            _CATCH = tempfile.TemporaryFile()
            _SAVED = os.dup(2)
            os.dup2(_CATCH.fileno(), 2)
        _DEPTH += 1
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH -= 1
            if _DEPTH == 0 and _SAVED is not None and _CATCH is not None:
                with contextlib.suppress(OSError, ValueError):
                    sys.stderr.flush()
                os.dup2(_SAVED, 2)
                os.close(_SAVED)
                _SAVED = None
                _CATCH.seek(0)
                text = _CATCH.read().decode(errors="replace")
                _CATCH.close()
                _CATCH = None
                if text:
                    sys.stderr.write(summary(text))
                    sys.stderr.flush()


def write_terminal(text: str) -> None:
    """Write ``text`` to the real stderr, also while a flight redirects fd 2."""
    saved = _SAVED
    if saved is None:
        sys.stderr.write(text)
        sys.stderr.flush()
        return
    with contextlib.suppress(OSError):
        os.write(saved, text.encode())


def terminal() -> bool:
    """Whether the real stderr is a terminal (progress lines are drawn only then)."""
    saved = _SAVED
    try:
        return os.isatty(saved) if saved is not None else sys.stderr.isatty()
    except (AttributeError, OSError, ValueError):
        return False
