"""Compile where it pays (issue 27, section 1): what ``runner.compiled: auto`` chooses for a job,
the line printed before a cold compile, and the warm-up.

numba compiles each of the seam's loops once (:mod:`quadarm.runner.jit`: about 30 s per loop on
an idle core, several times that on a loaded one) and caches the machine code on disk; a cached
loop loads in under a second. Plain Python runs the same source at about 1.5 ms per step of the
paper's model (a 1 s hover, 500 steps, in under a second) against some 0.1 ms compiled. So for a
job whose loops are not cached yet, ``auto`` runs plain Python when its steps would cost less
than compiling the loops it needs (:func:`choose`), and compiles otherwise; with the loops
cached it always compiles. The numbers are identical either way (the same source, bit for bit).

Before a cold compile one line says what is compiled, roughly how long it takes, that it
happens once, and where it is cached (:func:`announce`). ``python -m quadarm --warmup`` (and
``make install``) compiles every loop ahead (:func:`warmup`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quadarm.runner import jit

PLAIN_STEP_S = 1.5e-3  # s per step of the paper's model in plain Python (2-core dev machine)
# Measured ratios of a plain step to the paper's (1 s hovers, same machine and load): the
# sensing term (EKF and shape fit in Python) 45x, gusts 1.5x, a world's contacts 1.9x.
SENSING_FACTOR, WORLD_FACTOR = 45.0, 2.0
COLD_COMPILE_S = 30.0  # s to compile one loop on an idle core (docs/architecture.md)
FLY, BATCH = ("fly_chunk",), ("batch_rows", "after_rows")  # the loops of each engine
_ANNOUNCED: set[str] = set()


def cache_root() -> Path | None:
    """The folder of numba's disk cache (None without numba)."""
    if not jit.AVAILABLE:
        return None
    return Path(os.environ.get("NUMBA_CACHE_DIR") or jit.numba.config.CACHE_DIR)


def cached(loop: str) -> bool:
    """Whether the loop ``loop`` (a function of :mod:`quadarm.runner.step`) has machine code
    in numba's disk cache (an index file of it: some signature of it was compiled)."""
    root = cache_root()
    return root is not None and root.is_dir() and any(root.rglob(f"step.{loop}-*.nbi"))


@dataclass(frozen=True)
class Choice:
    """What ``auto`` chose for a job: ``compiled``; the loops it needs that are not cached
    (``cold``); the job's steps; and why, in words."""

    compiled: bool
    cold: tuple[str, ...]
    steps: int
    reason: str


def plain_step_s(cfg: Any) -> float:
    """The expected cost (s) of one step of ``cfg``'s trial in plain Python."""
    factor = 1.0
    if not cfg.sensing.exact:
        factor *= SENSING_FACTOR
    if cfg.world.objects or cfg.aero.gust_intensity > 0:
        factor *= WORLD_FACTOR
    return PLAIN_STEP_S * factor


def choose(steps: int, loops: Sequence[str], plain_s: float | None = None) -> Choice:
    """``auto`` for a job of ``steps`` simulation steps in all (``plain_s`` seconds in plain
    Python; default :data:`PLAIN_STEP_S` each) that needs ``loops``: compiled when numba is
    installed and either every loop is cached or plain Python would take longer than compiling
    the cold loops (:data:`COLD_COMPILE_S` each)."""
    if not jit.AVAILABLE:
        return Choice(False, (), steps, "numba is not installed")
    cold = tuple(loop for loop in loops if not cached(loop))
    if not cold:
        return Choice(True, (), steps, "the loops are cached")
    plain_s = steps * PLAIN_STEP_S if plain_s is None else plain_s
    compile_s = len(cold) * COLD_COMPILE_S
    if plain_s < compile_s:
        return Choice(False, cold, steps, f"{steps} steps take about {plain_s:.0f} s in plain "
                      f"Python, less than compiling {len(cold)} loop(s) (about "
                      f"{compile_s:.0f} s)")
    return Choice(True, cold, steps, f"{steps} steps would take about {plain_s:.0f} s in "
                  f"plain Python")


def announce(cold: Sequence[str]) -> None:
    """Say, once per loop and process, that numba compiles ``cold`` loops now, how long it
    takes and where it is cached."""
    new = [loop for loop in cold if loop not in _ANNOUNCED]
    if not new:
        return
    _ANNOUNCED.update(new)
    print(f"quadarm: compiling the closed loop with numba ({', '.join(new)}): once, about "
          f"{COLD_COMPILE_S * len(new):.0f} s on an idle core (several times that on a busy "
          f"one); cached in {cache_root()} (`python -m quadarm --warmup` does it ahead; "
          "runner.compiled=false skips it, with the same numbers)", file=sys.stderr, flush=True)


def job_loops(batched: bool, serial: bool) -> tuple[str, ...]:
    """The loops a job needs: the one-trial loop for trials flown alone, the batched engine's
    two for batched ones."""
    return (FLY if serial else ()) + (BATCH if batched else ())


def warmup() -> int:
    """Compile (or load) every loop of the seam now: one short hover alone and a batch of two;
    prints where the cache is. Returns the exit code (0; 1 without numba)."""
    import time

    if not jit.AVAILABLE:
        print("quadarm: numba is not installed: nothing to compile, trials run in plain "
              "Python (pip install 'quadarm[fast]' for the compiled loops)", file=sys.stderr)
        return 1
    from dataclasses import replace

    from quadarm.config import load_unchecked
    from quadarm.runner.batch import fly_batch
    from quadarm.runner.episode import fly
    from quadarm.runner.lifecycle import Prepared, prepare

    # a known-valid hover: the raw path, as this layer may not import the entry points
    cfg = load_unchecked(["scenario=hover", "scenario.duration=0.01", "runner.compiled=true"])
    t0 = time.perf_counter()
    cold = [loop for loop in (*FLY, *BATCH) if not cached(loop)]
    announce(cold)
    preps = [prepare(cfg), prepare(replace(cfg, seed=1))]
    assert all(isinstance(p, Prepared) for p in preps)
    fly(preps[0])  # type: ignore[arg-type]
    fly_batch(preps, 1)  # type: ignore[arg-type]
    print(f"quadarm: the compiled loops are ready ({time.perf_counter() - t0:.0f} s), cached in "
          f"{cache_root()}", file=sys.stderr)
    return 0
