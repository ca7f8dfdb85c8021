"""Progress of a job while it runs (issue 27, section 2), on a terminal only.

- A job of several trials has one bar (tqdm) over its trials, and the trials in flight move it
  by the fraction of their simulated time already done: a batch of 32 trials moves it
  continuously, not from 0 to 32 at its end (:func:`tick` from the batched engine's sample
  loop and from the one-trial loop's chunks).
- A job of one trial draws, when the trial is long (its projected wall time over
  :data:`LONG_S`), one line with the simulated time over the duration and the time left.
- Nothing is drawn when stderr is not a terminal (CI, pipes, files), with ``runner.progress``
  off, or in worker processes (their parent draws the bar).

The process-wide :class:`Meter` is what the loops report to; it changes no number of any trial
(it reads the sample index and the clock, between steps).
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from typing import Any

from quadarm.runner import quiet

LONG_S = 10.0  # s: a single trial projected to take longer draws its progress line
FIRST_S = 2.0  # s of a trial before its line may first appear (a projection needs a start)
EVERY_S = 0.5  # s between two redraws


class Meter:
    """The progress state of this process: the job's bar (or None), the trials finished and
    the fraction done of each piece of work in flight (a trial or a batch, in trial units)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.bar: Any = None
        self.finished = 0
        self.partial: dict[int, float] = {}
        self.enabled = False
        self.last = 0.0
        self.line = ""  # the single-trial line drawn last ('' = none)

    def attach(self, bar: Any, enabled: bool) -> None:
        with self.lock:
            self.bar, self.finished, self.partial = bar, 0, {}
            self.enabled = enabled and _drawable()
            self.last, self.line = 0.0, ""

    def detach(self) -> None:
        with self.lock:
            self._clear_line()
            self.bar, self.enabled, self.partial = None, False, {}

    def done(self, n: int = 1) -> None:
        """``n`` trials finished (the bar's count moves by them)."""
        with self.lock:
            self.finished += n
            self._redraw()

    def tick(self, key: int, units: float, sim_t: float, sim_total: float,
             started: float) -> None:
        """The piece of work ``key`` has done ``units`` trials' worth (a fraction for one
        trial, up to its size for a batch); ``sim_t`` of ``sim_total`` s simulated since the
        clock read ``started`` (s, ``time.perf_counter``)."""
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self.last < EVERY_S:
            return
        with self.lock:
            self.last = now
            self.partial[key] = units
            if self._redraw():
                return
            elapsed = now - started
            if elapsed < FIRST_S or sim_t <= 0:
                return
            left = elapsed * (sim_total - sim_t) / sim_t
            if self.line or elapsed + left > LONG_S:
                self.line = (f"\rquadarm: {sim_t:6.1f} / {sim_total:.1f} s simulated, "
                             f"about {left:.0f} s left ")
                quiet.write_terminal(self.line)

    def credit(self, key: int, units: float) -> None:
        """The piece of work ``key`` has finished ``units`` trials, not yet counted by
        :meth:`done` (a batch's finished trials, until the engine hands them over)."""
        if not self.enabled:
            return
        with self.lock:
            self.partial[key] = units
            self._redraw()

    def end(self, key: int) -> None:
        """The piece of work ``key`` finished (its trials are counted by :meth:`done`)."""
        if not self.enabled:
            return
        with self.lock:
            self.partial.pop(key, None)
            self._clear_line()

    def _redraw(self) -> bool:
        """Move the job's bar (if any) to the trials finished and in flight (lock held);
        whether there is a bar."""
        if self.bar is None:
            return False
        self.bar.n = min(float(self.bar.total), self.finished + sum(self.partial.values()))
        self.bar.refresh()
        return True

    def _clear_line(self) -> None:
        if self.line:
            quiet.write_terminal("\r" + " " * (len(self.line) + 2) + "\r")
            self.line = ""


def _drawable() -> bool:
    """A terminal, in the main process (not a joblib or Dask worker)."""
    return multiprocessing.parent_process() is None and quiet.terminal()


METER = Meter()


def single(enabled: bool) -> None:
    """A run of one trial in this process (``python -m quadarm``, :func:`quadarm.api.run`):
    its line is drawn when it is long (see the module docstring)."""
    METER.attach(None, enabled)
