"""MuJoCo's repeated warnings, collapsed into one line with a count.

MuJoCo prints its warnings (``WARNING: Nan, Inf or huge value in QACC ...``, ``Linesearch
objective is not convex``) on stderr, one per step: a trial that goes unstable printed dozens
before the divergence check stopped it. While a trial flies, :func:`collapsed` routes them to a
handler of ours (MuJoCo's ``mju_user_warning``) that only collects them; when the last flight
of the process ends, each distinct warning is printed once, with its count and first time
(:func:`summary`). MuJoCo's own warning counters in ``MjData`` (what the divergence check
reads) and its fatal errors are untouched, and so is every number of the trial.

The handler is MuJoCo's Python callback, which takes the GIL itself: compiled kernels and the
batched engine's threads call ``mj_step`` with the GIL released, so a warning from them waits
for the GIL, never deadlocks. The handler never raises (an exception in it would be fatal to
MuJoCo). :func:`write_terminal` and :func:`terminal` are the progress line's stderr.
"""

from __future__ import annotations

import contextlib
import re
import sys
import threading
from collections.abc import Iterator
from typing import Any

import mujoco

_LOCK = threading.Lock()
_DEPTH = 0
_CAUGHT: list[str] = []
_PREVIOUS: Any = None
_TIME = re.compile(r"\s*Time = [-+0-9.eE]+\.?\s*$")
_WARNING = "WARNING: "


def _catch(message: str) -> None:
    """MuJoCo's warning handler while a flight runs: keep the text (never raises)."""
    with contextlib.suppress(Exception):
        _CAUGHT.append(_WARNING + str(message))


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


@contextlib.contextmanager
def collapsed() -> Iterator[None]:
    """While inside, MuJoCo's warnings are collected instead of printed; when the outermost
    ``collapsed`` of the process ends, they are printed on stderr through :func:`summary`
    and MuJoCo's previous handler is restored."""
    global _DEPTH, _PREVIOUS
    with _LOCK:
        if _DEPTH == 0:
            _PREVIOUS = mujoco.get_mju_user_warning()
            _CAUGHT.clear()
            mujoco.set_mju_user_warning(_catch)
        _DEPTH += 1
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH -= 1
            if _DEPTH == 0:
                mujoco.set_mju_user_warning(_PREVIOUS)
                _PREVIOUS = None
                text = "\n".join(_CAUGHT)
                _CAUGHT.clear()
                if text:
                    sys.stderr.write(summary(text))
                    sys.stderr.flush()


def write_terminal(text: str) -> None:
    """Write ``text`` (a progress line) to stderr."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(text)
        sys.stderr.flush()


def terminal() -> bool:
    """Whether stderr is a terminal (progress lines are drawn only then)."""
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, OSError, ValueError):
        return False
