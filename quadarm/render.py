"""Replay a stored run with MuJoCo's offscreen renderer: still frames, the paper's Fig. 1
panel and MP4 videos.

A run directory holds the exact simulated model (``model.mjb``, MuJoCo's binary model, bit for
bit; or ``trials/<run_id>/model.mjb`` per trial; folders written before it existed have only
``model.xml``, whose numbers MuJoCo rounds to about 6 digits) and the full logged state
(``timeseries.parquet``: hub position ``x, y, z``, attitude ``qw, qx, qy, qz`` and every arm
joint angle in a column named after the joint). Replaying sets ``qpos`` from those columns by
joint name and calls ``mj_forward``, so nothing is re-simulated and the pictures show exactly
what was logged. A model with motor lag (``airframe.motor_tau`` > 0) also has an actuator state
(the produced thrusts); it is not in the time series and not needed here: the pictures depend on
``qpos`` only.

Rendering is headless: unless ``MUJOCO_GL`` is set, this module selects ``egl`` before MuJoCo
is imported, and the command line retries in a fresh process with ``osmesa`` if no EGL
context can be created. MuJoCo reads ``MUJOCO_GL`` once, at import, so a program that imported
``mujoco`` before this module must set it itself.

    python -m quadarm.render RUN_DIR                      # Fig. 1 panel of a mission run
    python -m quadarm.render RUN_DIR --frames 1.0,5.5     # frames at chosen times (s)
    python -m quadarm.render RUN_DIR --video run.mp4      # needs: pip install 'quadarm[video]'
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Choose a headless OpenGL backend before MuJoCo is imported (it reads MUJOCO_GL then).
AUTO_GL = "MUJOCO_GL" not in os.environ
if AUTO_GL and "mujoco" not in sys.modules:
    os.environ["MUJOCO_GL"] = "egl"

from quadarm.gl import missing_library, require  # noqa: E402

if __name__ == "__main__":
    require("quadarm.render")  # one line, not PyOpenGL's traceback, when the library is missing
elif missing_library():
    raise ImportError(missing_library())

import mujoco  # noqa: E402
import pandas as pd  # noqa: E402

from quadarm.config import DEFAULT_STORE, MISSION_PHASE_TIMES  # noqa: E402
from quadarm.results import io  # noqa: E402

BACKENDS = ("egl", "osmesa")
EXIT_COULD_NOT_RUN = 1  # the CLI's code for "could not run" (3 means failed trials there)
FREE_COLUMNS = ("x", "y", "z", "qw", "qx", "qy", "qz")
MISSION_KEYS = tuple(f"scenario.{k}" for k in MISSION_PHASE_TIMES)


class GLUnavailable(RuntimeError):
    """No OpenGL context could be created for offscreen rendering."""


def probe_backend(name: str, timeout: float = 60.0) -> bool:
    """True when a fresh Python process can render with ``MUJOCO_GL=name``."""
    code = ("import mujoco\n"
            "m = mujoco.MjModel.from_xml_string('<mujoco><worldbody><geom size=\".1\"/>"
            "</worldbody></mujoco>')\n"
            "r = mujoco.Renderer(m, 8, 8); d = mujoco.MjData(m); mujoco.mj_forward(m, d)\n"
            "r.update_scene(d); assert r.render().shape == (8, 8, 3)\n")
    env = {**os.environ, "MUJOCO_GL": name}
    try:
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def available_backend() -> str | None:
    """The first headless backend of ``egl``, ``osmesa`` that works here, or None."""
    return next((b for b in BACKENDS if probe_backend(b)), None)


@dataclass
class View:
    """A free camera following the hub: it looks at the hub lowered by ``drop`` m (the middle
    of the hanging arm) from ``distance`` m, at ``azimuth``/``elevation`` deg."""

    distance: float = 1.6
    azimuth: float = 135.0
    elevation: float = -12.0
    drop: float = 0.25


def load_model(path: Path | str) -> mujoco.MjModel:
    """A stored model: ``.mjb`` (MuJoCo's binary, exact) or MJCF text."""
    path = Path(path)
    if path.suffix == ".mjb":
        return mujoco.MjModel.from_binary_path(str(path))
    return mujoco.MjModel.from_xml_path(str(path))


class Replay:
    """The stored state of one trial, posed in its stored model.

    ``run_dir`` is a run (job) directory; ``run_id`` picks a trial when the job has several
    (default: the first trial that has a time series). The trial's own model is taken from
    ``model`` (a ``.mjb`` or ``.xml`` file) if given, else from the trial store
    (``RUN_DIR/trials/<run_id>/`` for jobs run from Python, ``outputs/trials/<run_id>/`` under
    the working directory for the command line's store), else the job's (the first trial's
    model); in each folder ``model.mjb`` (exact) before ``model.xml`` (older folders).
    """

    def __init__(self, run_dir: Path | str, run_id: str | None = None,
                 model: Path | str | None = None) -> None:
        self.run_dir = Path(run_dir)
        series = self.run_dir / io.TIMESERIES
        if not series.exists():
            raise FileNotFoundError(f"{series}: no time series (was the run made with "
                                    "runner.timeseries=none?)")
        self.trials: list[str] = []  # the job's trials with a time series, in file order
        if run_id is None:
            import pyarrow.parquet as pq

            ids = pq.read_table(series, columns=["run_id"]).column("run_id").to_pylist()
            self.trials = list(dict.fromkeys(str(i) for i in ids))
            run_id = self.trials[0]
        self.run_id = run_id
        folders = [self.run_dir / "trials" / run_id, Path(DEFAULT_STORE) / run_id, self.run_dir]
        candidates = [Path(model)] if model is not None else [
            f / name for f in folders for name in (io.MODEL_MJB, io.MODEL_XML)]
        self.model_path = next((c for c in candidates if c.exists()), candidates[-1])
        self.model = load_model(self.model_path)  # exact (model.mjb) where the folder has it
        # What frames are drawn with: the same scene with a sky behind it (visual_model needs
        # an MjSpec, which only the MJCF text gives; poses are copied over, so drawing from the
        # rounded XML changes nothing visible).
        xml = self.model_path.with_name(io.MODEL_XML)
        self.visual = (visual_model(mujoco.MjSpec.from_file(str(xml))) if xml.exists()
                       else self.model)
        self.data = mujoco.MjData(self.model)
        self.series = pd.read_parquet(series, filters=[("run_id", "==", run_id)]).sort_values(
            "t", ignore_index=True)
        if self.series.empty:
            raise KeyError(f"run {run_id} has no samples in {series}")
        runs = self.run_dir / io.RUNS
        rows = pd.read_parquet(runs) if runs.exists() else pd.DataFrame()
        hit = rows[rows["run_id"] == run_id] if "run_id" in rows else rows
        self.run = hit.iloc[0] if len(hit) else pd.Series(dtype=object)
        self._columns = self._qpos_columns()
        self._qpos = self.series[[c for _, c in self._columns]].to_numpy(float)
        self._adr = np.array([a for a, _ in self._columns])

    def _qpos_columns(self) -> list[tuple[int, str]]:
        """(qpos address, column) for every coordinate of the model."""
        m = self.model
        out: list[tuple[int, str]] = []
        for j in range(m.njnt):
            adr = int(m.jnt_qposadr[j])
            kind = int(m.jnt_type[j])
            if kind == int(mujoco.mjtJoint.mjJNT_FREE):
                out += [(adr + i, c) for i, c in enumerate(FREE_COLUMNS)]
            elif kind in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
                out.append((adr, m.joint(j).name))
            else:
                raise ValueError(f"joint {m.joint(j).name}: ball joints are not logged")
        missing = [c for _, c in out if c not in self.series]
        if missing:
            raise KeyError(f"time series lacks the state columns {missing[:5]}")
        return out

    @property
    def times(self) -> np.ndarray:
        """Sample times (s), shape (n,)."""
        return self.series["t"].to_numpy(float)

    def pose(self, t: float) -> mujoco.MjData:
        """Set the state of the sample nearest to time ``t`` (s) and compute kinematics."""
        k = int(np.argmin(np.abs(self.times - t)))
        self.data.qpos[self._adr] = self._qpos[k]
        self.data.time = float(self.times[k])
        mujoco.mj_forward(self.model, self.data)
        return self.data

    def mission_moments(self) -> list[tuple[str, float]]:
        """Fig. 1's moments for a mission run: hover, the figure-eight at its largest tip
        offset, and four moments of the tendon sweep a quarter revolution apart once the bend
        is at full magnitude."""
        if not all(k in self.run for k in MISSION_KEYS):
            raise ValueError("not a mission run: give the frame times with --frames")
        hover, climb, eight, sweep, _ = (float(self.run[k]) for k in MISSION_KEYS)
        t8 = hover + climb
        seg = self.series[(self.series["t"] >= t8) & (self.series["t"] <= t8 + eight)]
        t_eight = float(seg["t"].iloc[int(np.argmax(seg["tip_lateral_cm"].to_numpy()))])
        t_sweep = t8 + eight
        ramp = float(self.run.get("scenario.sweep_ramp", 1.5))
        quarter = 0.25 / float(self.run.get("scenario.sweep_rate", 0.2))
        moments = [("(a) hover", hover / 2), ("(b) figure-eight", t_eight)]
        for i in range(4):
            t = min(t_sweep + ramp + i * quarter, t_sweep + sweep)
            moments.append((f"({'cdef'[i]}) tendon sweep", t))
        return moments


SKY = ([0.42, 0.6, 0.85], [0.93, 0.95, 0.98])  # zenith and horizon colours of the backdrop


def visual_model(spec: mujoco.MjSpec) -> mujoco.MjModel:
    """The model to draw: ``spec`` compiled with a sky (a gradient skybox, unless it has one)
    behind the scene, so that frames show no black void above the horizon. Textures change
    nothing in the state or its dynamics, and the simulated model (and its ``model.xml``) is
    never touched: ``spec`` is copied first."""
    spec = mujoco.MjSpec.from_string(spec.to_xml())
    if not any(t.type == mujoco.mjtTexture.mjTEXTURE_SKYBOX for t in spec.textures):
        spec.add_texture(name="quadarm_sky", type=mujoco.mjtTexture.mjTEXTURE_SKYBOX,
                         builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT, rgb1=SKY[0],
                         rgb2=SKY[1], width=256, height=256)
    _checker_floor(spec)
    return spec.compile()


FLOOR = ([0.80, 0.82, 0.85], [0.62, 0.65, 0.70])  # the checker's two greys


def _checker_floor(spec: mujoco.MjSpec) -> None:
    """Give every plane without a material a checker texture (1 m tiles of 2 x 2 squares,
    softly self-lit) and the scene a light from above when it has none, so that the floor
    reads as a floor (an untextured plane seen at a grazing angle renders nearly black) and
    the vehicle's height above it shows."""
    planes = [g for g in spec.geoms
              if g.type == mujoco.mjtGeom.mjGEOM_PLANE and not g.material]
    if not planes:
        return
    spec.add_texture(name="quadarm_floor", type=mujoco.mjtTexture.mjTEXTURE_2D,
                     builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER, rgb1=FLOOR[0], rgb2=FLOOR[1],
                     width=256, height=256)
    # Some emission: the camera looks along the floor, which the lights hit at a grazing
    # angle far from the vehicle.
    mat = spec.add_material(name="quadarm_floor", texrepeat=[1.0, 1.0], texuniform=True,
                            reflectance=0.05, emission=0.4)
    mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "quadarm_floor"
    for g in planes:
        g.material = "quadarm_floor"
        g.rgba = [1.0, 1.0, 1.0, 1.0]
    if not spec.lights:
        spec.worldbody.add_light(name="quadarm_sun", pos=[0.0, 0.0, 6.0], dir=[0.0, 0.0, -1.0],
                                 directional=True, diffuse=[0.6, 0.6, 0.6],
                                 specular=[0.1, 0.1, 0.1])


def make_renderer(model: mujoco.MjModel, width: int, height: int) -> mujoco.Renderer:
    """An offscreen renderer; raises :class:`GLUnavailable` when no GL context exists."""
    try:
        return mujoco.Renderer(model, height=height, width=width)
    except Exception as err:  # the GL stack reports failures with many exception types
        raise GLUnavailable(gl_problem(err)) from err


def gl_problem(err: BaseException) -> str:
    """One line for a failure to create a GL context: for a missing EGL or OSMesa library it
    names the library and its Debian package (PyOpenGL reports it as an import or attribute
    error several frames deep)."""
    from quadarm.gl import GL_LIBRARIES

    backend = os.environ.get("MUJOCO_GL", "")
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    lib = GL_LIBRARIES.get(backend)
    missing = isinstance(err, ImportError | AttributeError) or any(
        w in text for w in ("Unable to load", "cannot open shared object", "not found"))
    if lib is not None and missing:
        return (f"MUJOCO_GL={backend} needs the lib{lib[0]} library, which could not be loaded "
                f"(Debian/Ubuntu: apt-get install {lib[1]}): {text}")
    return f"no offscreen OpenGL context (MUJOCO_GL={backend}): {text}"


def _camera(data: mujoco.MjData, view: View) -> mujoco.MjvCamera:
    cam = mujoco.MjvCamera()
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    cam.lookat[:] = data.qpos[:3] - np.array([0.0, 0.0, view.drop])
    cam.distance, cam.azimuth, cam.elevation = view.distance, view.azimuth, view.elevation
    return cam


def frames(replay: Replay, times: Sequence[float] | np.ndarray, width: int = 480, height: int = 480,
           view: View | None = None) -> Iterator[np.ndarray]:
    """RGB images, each (height, width, 3) uint8, of the replayed state at ``times`` (s)."""
    view = view or View()
    renderer = make_renderer(replay.visual, width, height)
    shown = mujoco.MjData(replay.visual)
    try:
        for t in times:
            data = replay.pose(t)
            shown.qpos[:] = data.qpos
            mujoco.mj_kinematics(replay.visual, shown)
            renderer.update_scene(shown, camera=_camera(shown, view))
            yield renderer.render().copy()
    finally:
        renderer.close()


def panel(replay: Replay, moments: Sequence[tuple[str, float]], path: Path | str,
          width: int = 480, height: int = 480, view: View | None = None) -> Path:
    """A row-wise panel of labelled frames (Fig. 1 style) as PNG."""
    from matplotlib.figure import Figure

    images = list(frames(replay, [t for _, t in moments], width, height, view))
    cols = min(3, len(images))
    rows = -(-len(images) // cols)
    fig = Figure(figsize=(3.2 * cols, 3.4 * rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols)).ravel()
    for ax in axes:
        ax.axis("off")
    for ax, img, (label, t) in zip(axes, images, moments, strict=False):
        ax.imshow(img)
        ax.set_title(f"{label}, t = {t:.2f} s", fontsize=8)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path


def video(replay: Replay, path: Path | str, fps: float = 30.0, speed: float = 1.0,
          width: int = 640, height: int = 480, view: View | None = None) -> Path:
    """An MP4 (H.264) of the whole run at ``speed`` x real time. Needs ``imageio`` with
    ``imageio-ffmpeg`` (the ``video`` extra)."""
    try:
        import imageio.v2 as imageio
    except ImportError as err:
        raise RuntimeError("MP4 output needs imageio and imageio-ffmpeg: "
                           "pip install 'quadarm[video]'") from err
    t = replay.times
    times = np.arange(t[0], t[-1] + 1e-9, speed / fps)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with imageio.get_writer(path, fps=fps, codec="libx264", quality=7,
                            macro_block_size=16) as writer:
        for img in frames(replay, times, width, height, view):
            writer.append_data(img)  # type: ignore[attr-defined]  # imageio's v2 writer
    return path


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring)."""
    args_in = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(prog="python -m quadarm.render",
                                description="Render frames or a video of a stored run.")
    p.add_argument("run_dir", type=Path, help="a run directory (with model.mjb or "
                   "model.xml, and timeseries.parquet)")
    p.add_argument("--run-id", default=None, help="trial of a multi-trial job")
    p.add_argument("--model", type=Path, default=None,
                   help="the trial's model.mjb or model.xml (default: found in the trial "
                        "store)")
    p.add_argument("--frames", default=None,
                   help="comma-separated times (s); default: Fig. 1's moments of a mission")
    p.add_argument("--panel", type=Path, default=None,
                   help="panel PNG (default: RUN_DIR/fig1_frames.png or RUN_DIR/frames.png)")
    p.add_argument("--video", type=Path, default=None, help="also write an MP4 of the run")
    p.add_argument("--fps", type=float, default=30.0)
    p.add_argument("--speed", type=float, default=1.0, help="video time per real second")
    p.add_argument("--width", type=int, default=480)
    p.add_argument("--height", type=int, default=480)
    args = p.parse_args(args_in)
    try:
        replay = Replay(args.run_dir, args.run_id, args.model)
        if len(replay.trials) > 1:
            print(f"quadarm.render: {args.run_dir} holds {len(replay.trials)} trials; drawing "
                  f"the first, --run-id {replay.run_id} (others: "
                  f"{', '.join(replay.trials[1:4])}{', ...' if len(replay.trials) > 4 else ''})",
                  file=sys.stderr)
        if args.frames:
            times = [float(v) for v in args.frames.split(",") if v.strip()]
            moments = [(f"({chr(97 + i)})", t) for i, t in enumerate(times)]
            out = args.panel or args.run_dir / "frames.png"
        else:
            moments = replay.mission_moments()
            out = args.panel or args.run_dir / "fig1_frames.png"
        written = [panel(replay, moments, out, args.width, args.height)]
        if args.video:
            written.append(video(replay, args.video, args.fps, args.speed))
    except GLUnavailable as err:
        if AUTO_GL and os.environ.get("MUJOCO_GL") == "egl":
            print(f"quadarm.render: {err}; retrying with osmesa", file=sys.stderr)
            env = {**os.environ, "MUJOCO_GL": "osmesa"}
            return subprocess.call([sys.executable, "-m", "quadarm.render", *args_in], env=env)
        print(f"quadarm.render: error: {err}", file=sys.stderr)
        return EXIT_COULD_NOT_RUN
    except (FileNotFoundError, KeyError, ValueError, RuntimeError) as err:
        print(f"quadarm.render: error: {err}", file=sys.stderr)
        return 2
    for w in written:
        print(w)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
