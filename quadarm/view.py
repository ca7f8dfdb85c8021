"""Watch a run in MuJoCo's interactive viewer (``mujoco.viewer.launch_passive``).

    python -m quadarm.view RUN_DIR [--run-id ID]        # replay a stored run
    python -m quadarm.view [overrides ...]              # fly a config live, controller in the loop
    python -m quadarm.view scenario=disturbance gains=soft --speed 0.5

A replay poses the stored model (``model.mjb``, exact; ``model.xml`` in older folders) in the
logged states of ``timeseries.parquet`` (:class:`quadarm.render.Replay`: nothing is
re-simulated); a live run steps :class:`quadarm.envs.single.QuadArmEnv` with its controller's
action (:meth:`~quadarm.envs.single.QuadArmEnv.controller_action`: the step seam's whole
controller, so the closed loop of ``python -m quadarm``; with a sensing preset the controller
reads the simulated state), restarting at the episode's end. The
reference path (blue) and the trace of the arm's tip over the last ``--trace`` seconds (orange)
are drawn into the scene.

Keys (in the viewer window): SPACE pause/resume, ``+``/``-`` (or the keypad's) double/halve the
speed, BACKSPACE restart. MuJoCo's own viewer keys and mouse work as usual.

The viewer needs a display. Without one (no ``DISPLAY``/``WAYLAND_DISPLAY``, or ``MUJOCO_GL``
set to a headless backend) it stops with one line pointing to :mod:`quadarm.render`, which
renders frames and videos headless. Exit codes: 0 closed, 1 no display (could not run), 2 bad input.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from quadarm.gl import missing_library, require  # noqa: I001

if __name__ == "__main__":
    require("quadarm.view")  # one line, not PyOpenGL's traceback, when the library is missing
elif missing_library():
    raise ImportError(missing_library())

# MuJoCo before quadarm.render: render selects a headless GL backend when it is imported
# first, and the interactive viewer needs the windowing one (GLFW).
import mujoco  # noqa: E402
import numpy as np

HEADLESS = ("egl", "osmesa")
EXIT_BAD_INPUT = 2
EXIT_NO_DISPLAY = 1  # "could not run", as the CLI's 1 (its 3 means failed trials)
KEY_SPACE, KEY_BACKSPACE = 32, 259
KEYS_FASTER = (61, 334)  # '=' (the '+' key without shift), keypad '+'
KEYS_SLOWER = (45, 333)  # '-', keypad '-'
PATH_POINTS = 400  # segments of the drawn reference path
REF_RGBA = (0.15, 0.35, 0.95, 1.0)
TIP_RGBA = (1.0, 0.55, 0.1, 1.0)


def display_problem(environ: dict[str, str] | None = None, platform: str = sys.platform
                    ) -> str | None:
    """Why no interactive window can open here (None when one may): no display server, or
    ``MUJOCO_GL`` choosing a headless backend."""
    env = os.environ if environ is None else environ
    gl = env.get("MUJOCO_GL", "").lower()
    if gl in HEADLESS:
        return f"MUJOCO_GL={gl} selects headless rendering"
    if platform.startswith("linux") and not (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")):
        return "no display (DISPLAY and WAYLAND_DISPLAY are unset)"
    return None


def no_display_line(problem: str, target: str) -> str:
    return (f"quadarm.view: {problem}; the interactive viewer needs a display. Render headless "
            f"instead: python -m quadarm.render {target} (frames; --video run.mp4 for a video)")


@dataclass
class Track:
    """What a replay draws: sample times t (n,) s, the reference path ref (n, 3) m and the
    tip positions tip (n, 3) m, from the stored time series."""

    t: np.ndarray
    ref: np.ndarray
    tip: np.ndarray


def replay_track(replay: object) -> Track:
    """The :class:`Track` of a :class:`quadarm.render.Replay`'s time series."""
    s = replay.series  # type: ignore[attr-defined]
    missing = [c for c in ("x_ref", "y_ref", "z_ref", "tip_x", "tip_y", "tip_z") if c not in s]
    if missing:
        raise KeyError(f"time series lacks {missing}")
    return Track(s["t"].to_numpy(float), s[["x_ref", "y_ref", "z_ref"]].to_numpy(float),
                 s[["tip_x", "tip_y", "tip_z"]].to_numpy(float))


class Clock:
    """Simulated time that follows the wall clock times ``speed``, with pause and restart
    (driven by the viewer's key callback)."""

    def __init__(self, speed: float = 1.0) -> None:
        self.speed = speed
        self.paused = False
        self.restart = False
        self._sim = 0.0
        self._wall = time.perf_counter()

    def key(self, keycode: int) -> None:
        if keycode == KEY_SPACE:
            self.paused = not self.paused
        elif keycode in KEYS_FASTER:
            self.speed = min(self.speed * 2.0, 64.0)
        elif keycode in KEYS_SLOWER:
            self.speed = max(self.speed / 2.0, 1.0 / 64.0)
        elif keycode == KEY_BACKSPACE:
            self.restart = True

    def now(self) -> float:
        """The simulated time (s) to show now."""
        wall = time.perf_counter()
        if not self.paused:
            self._sim += (wall - self._wall) * self.speed
        self._wall = wall
        return self._sim

    def reset(self) -> None:
        self._sim, self.restart = 0.0, False


def _polyline(scn: mujoco.MjvScene, points: np.ndarray, rgba: tuple[float, ...],
              width: float) -> None:
    """Append line segments through ``points`` (m, 3) to the scene's user geoms."""
    for a, b in zip(points[:-1], points[1:], strict=True):
        if scn.ngeom >= scn.maxgeom:
            return
        g = scn.geoms[scn.ngeom]
        mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_LINE, np.zeros(3), np.zeros(3),
                            np.zeros(9), np.asarray(rgba, dtype=np.float32))
        mujoco.mjv_connector(g, mujoco.mjtGeom.mjGEOM_LINE, width, a, b)
        scn.ngeom += 1


def _decimate(points: np.ndarray, count: int) -> np.ndarray:
    """About ``count`` of ``points`` (m, 3), evenly spaced, the last one included."""
    step = max(1, len(points) // count)
    kept = points[::step]
    return kept if (len(points) - 1) % step == 0 else np.vstack([kept, points[-1:]])


def draw(scn: mujoco.MjvScene, ref: np.ndarray, trace: np.ndarray) -> None:
    """Replace the user geoms by the reference path and the tip trace."""
    scn.ngeom = 0
    _polyline(scn, _decimate(ref, PATH_POINTS), REF_RGBA, 2.0)
    if len(trace) > 1:
        _polyline(scn, _decimate(trace, PATH_POINTS), TIP_RGBA, 3.0)


def follow(v: object, model: mujoco.MjModel) -> None:
    """Point the viewer's camera at the vehicle and keep it there (the user can still orbit
    and zoom)."""
    from quadarm.model import names

    cam = v.cam  # type: ignore[attr-defined]
    cam.type = mujoco.mjtCamera.mjCAMERA_TRACKING
    cam.trackbodyid = model.body(names.QUAD_BODY).id
    cam.distance, cam.azimuth, cam.elevation = 2.2, 135.0, -15.0


def view_replay(replay: object, clock: Clock, trace_s: float) -> None:
    """Replay in the viewer until its window closes (loops at the end)."""
    import mujoco.viewer

    track = replay_track(replay)
    m, d = replay.model, replay.data  # type: ignore[attr-defined]
    t0, t1 = float(track.t[0]), float(track.t[-1])
    with mujoco.viewer.launch_passive(m, d, key_callback=clock.key) as v:
        follow(v, m)
        while v.is_running():
            if clock.restart:
                clock.reset()
            t = t0 + clock.now() % max(t1 - t0, 1e-9)
            k = int(np.searchsorted(track.t, t))
            lo = int(np.searchsorted(track.t, t - trace_s))
            with v.lock():
                replay.pose(t)  # type: ignore[attr-defined]
                draw(v.user_scn, track.ref, track.tip[lo:k + 1])
            v.sync()
            time.sleep(1.0 / 60.0)


def view_live(env: object, clock: Clock, trace_s: float) -> None:
    """Fly ``env`` (a QuadArmEnv) with its controller in the viewer until the window closes."""
    import mujoco.viewer

    env.reset(seed=0)  # type: ignore[attr-defined]
    task = env.task  # type: ignore[attr-defined]
    dt = env.model.opt.timestep  # type: ignore[attr-defined]
    keep = max(2, int(trace_s / dt))
    tip: list[np.ndarray] = []
    site = task.built.tip_site
    with mujoco.viewer.launch_passive(env.model, env.data,  # type: ignore[attr-defined]
                                      key_callback=clock.key) as v:
        follow(v, env.model)  # type: ignore[attr-defined]
        while v.is_running():
            target = clock.now()
            with v.lock():
                if clock.restart:
                    clock.reset()
                    env.reset()  # type: ignore[attr-defined]
                    tip.clear()
                    target = 0.0
                while env.data.time < target:  # type: ignore[attr-defined]
                    _, _, term, trunc, _ = env.step(env.controller_action())  # type: ignore
                    tip.append(env.data.site_xpos[site].copy())  # type: ignore[attr-defined]
                    if term or trunc:
                        clock.reset()
                        env.reset()  # type: ignore[attr-defined]
                        tip.clear()
                        break
                del tip[:-keep]
                draw(v.user_scn, task.plan.ref.p, np.array(tip).reshape(-1, 3))
            v.sync()
            time.sleep(1.0 / 60.0)


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring)."""
    args_in = sys.argv[1:] if argv is None else list(argv)
    p = argparse.ArgumentParser(prog="python -m quadarm.view",
                                description="Watch a stored run or a live flight in MuJoCo's "
                                            "interactive viewer.")
    p.add_argument("target", nargs="*", help="a run directory, or config overrides for a "
                   "live flight (none: the mission)")
    p.add_argument("--run-id", default=None, help="trial of a multi-trial job")
    p.add_argument("--speed", type=float, default=1.0, help="simulated seconds per second")
    p.add_argument("--trace", type=float, default=3.0, help="seconds of tip trace drawn")
    args = p.parse_args(args_in)
    replay_dir = Path(args.target[0]) if len(args.target) == 1 and \
        Path(args.target[0]).is_dir() else None
    problem = display_problem()
    if problem:
        print(no_display_line(problem, str(replay_dir) if replay_dir else "RUN_DIR"),
              file=sys.stderr)
        return EXIT_NO_DISPLAY
    if not (args.speed > 0 and args.trace >= 0):
        print("quadarm.view: error: --speed must be > 0 and --trace >= 0", file=sys.stderr)
        return EXIT_BAD_INPUT
    clock = Clock(args.speed)
    try:
        if replay_dir is not None:
            from quadarm.render import Replay

            subject: object = Replay(replay_dir, args.run_id)
        else:
            from quadarm.envs.single import QuadArmEnv

            subject = QuadArmEnv(overrides=args.target)
    except (FileNotFoundError, KeyError, ValueError) as err:
        print(f"quadarm.view: error: {str(err).splitlines()[0]}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        if replay_dir is not None:
            view_replay(subject, clock, args.trace)
        else:
            view_live(subject, clock, args.trace)
    except Exception as err:  # noqa: BLE001 - GLFW/GL failures come in many types
        line = str(err).splitlines()[0] if str(err) else type(err).__name__
        print(no_display_line(f"cannot open the viewer ({line})",
                              str(replay_dir) if replay_dir else "RUN_DIR"), file=sys.stderr)
        return EXIT_NO_DISPLAY
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
