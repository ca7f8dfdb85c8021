"""What the tip-space scenarios (``reach``, ``trace``) share: from a tip path in the world to
the hub reference and the bend commands the closed loop flies (docs/tipspace_control.md).

The split law (:func:`quadarm.control.tipspace.split`, ``control.tip_mode``) runs at planning
time, on samples every :data:`PLAN_DT` s of the tip path, in two passes: the first with a level
hub, the second with the attitude the geometric controller commands for the first pass's hub
acceleration (:func:`quadarm.control.tipspace.planned_attitude`) and the apparent gravity
the arm then feels. The hub samples and the Cartesian bend (mu cos beta, mu sin beta) are
interpolated with cubic splines to every physics sample; the reference's velocity and
acceleration are central differences of one time step, as for the paper's references.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.interpolate import CubicSpline

from quadarm.config import Config, TraceScenario
from quadarm.config.sections import SectionArmConfig
from quadarm.control.tipspace import (
    TipMap,
    apparent_gravity,
    bend_command,
    planned_attitude,
    tip_map,
)
from quadarm.control.trajectory import Reference, differentiate
from quadarm.model import BuiltModel
from quadarm.scenarios.drive import bend_rows as drive_rows

PLAN_DT = 0.05  # s between split-law samples of a moving target (a split costs ~10 ms in Python)
WORKSPACE_TOL = 0.01  # m: how near the arm alone must reach for a target to be in its workspace


def the_map(cfg: Config) -> TipMap:
    """The tip map of this trial's airframe, arm, gravity and tendon map (cached on disk)."""
    return tip_map(cfg.airframe, cfg.arm, cfg.sim, cfg.control.tendon_map)


@dataclass(frozen=True)
class TipPlan:
    """A tip-space plan at the physics samples t (n,): ``ref`` the hub reference, ``tip`` (n, 3)
    the tip target (world, m), ``mu`` and ``beta`` (n,) the bend (rad), ``tensions``
    (n, n_tendons) the tendon commands (N, or m for servo-driven tendons: :func:`bend_tensions`),
    ``bend`` (n, 8), (n, 8 + 2 n_tendons) for a multi-section arm, the bend correction's rows
    (:func:`bend_rows`, :func:`command_rows`; None when it is off)."""

    ref: Reference
    tip: np.ndarray
    mu: np.ndarray
    beta: np.ndarray
    tensions: np.ndarray
    bend: np.ndarray | None = None


def corrects_bend(cfg: Config) -> bool:
    """Whether the tip feedback corrects the bend (``control.tip_bend`` with ``tip_gain`` on,
    in ``coordinated`` or ``arm`` mode; ``vehicle`` mode keeps the arm straight)."""
    c = cfg.control
    return c.tip_bend and c.tip_gain > 0.0 and c.tip_mode != "vehicle"


def bend_rows(tm: TipMap, t: np.ndarray, uv: np.ndarray, tp: np.ndarray, mu_p: np.ndarray,
              beta_p: np.ndarray, rots: np.ndarray | None = None,
              g_bodies: np.ndarray | None = None) -> np.ndarray:
    """The bend correction's plan rows (n, 8) at the physics samples ``t`` (n,) s: the planned
    Cartesian bend ``uv`` (n, 2) and the world tip Jacobian R d tip / d(u, v) (3 x 2,
    row-major, m; :meth:`TipMap.jacobian`), evaluated at the planning samples ``tp`` (s) with
    their bends ``mu_p``, ``beta_p`` (rad), attitudes ``rots`` (n_p, 3, 3; default level) and
    apparent gravities ``g_bodies`` (n_p, 3; default the level hover's), and linear in time
    between them (the Jacobian changes slowly along a planned bend)."""
    jac = np.empty((len(tp), 6))
    for k in range(len(tp)):
        jb = tm.jacobian(float(mu_p[k]), float(beta_p[k]),
                         None if g_bodies is None else g_bodies[k])
        jac[k] = (jb if rots is None else rots[k] @ jb).ravel()
    out = np.empty((len(t), 8))
    out[:, :2] = uv
    for c in range(6):
        out[:, 2 + c] = np.interp(t, tp, jac[:, c])
    return out


CMD_STEP = 1e-4  # the step in (u, v) of command_rows' central differences (mu is in [0, 1])


def command_rows(cfg: Config, built: BuiltModel, rows: np.ndarray) -> np.ndarray:
    """The bend correction's plan rows ``rows`` (n, 8) (:func:`bend_rows`), for a multi-section
    arm followed by each tendon command's d/du, then d/dv (n, 2 n_tendons; N or m per unit
    command) at the planned Cartesian bend (the rows' first two columns): the central
    differences of the plan's own commands (:func:`quadarm.control.tipspace.bend_command`,
    before the servos' play), so that the step's first-order commands
    (:func:`quadarm.control.tipfeedback.linear_commands`) are the plan's to O(CMD_STEP^2)
    inside an allocation sector. A one-section arm's rows are returned as they are (its step
    allocates the corrected bend exactly)."""
    if not isinstance(cfg.arm, SectionArmConfig):
        return rows
    command = bend_command(built, cfg.arm, cfg.control.tendon_map)
    u, v = rows[:, 0], rows[:, 1]

    def at(du: float, dv: float) -> np.ndarray:
        a, b = u + du, v + dv
        return np.asarray(command(np.clip(np.hypot(a, b), 0.0, 1.0), np.arctan2(b, a)))

    h = CMD_STEP
    d_u = (at(h, 0.0) - at(-h, 0.0)) / (2.0 * h)
    d_v = (at(0.0, h) - at(0.0, -h)) / (2.0 * h)
    return np.ascontiguousarray(np.hstack([rows, d_u, d_v]))


def split_samples(cfg: Config, tm: TipMap, targets: np.ndarray, hub_ref: np.ndarray,
                  acc: np.ndarray | None = None) -> np.ndarray:
    """The split law at the tip ``targets`` (m, (n, 3), world) from the hub references
    ``hub_ref`` ((n, 3) or (3,)), for a hub accelerating at ``acc`` (m/s^2, (n, 3); None:
    at rest, level). Returns (n, 7) as :meth:`TipMap.plan`."""
    if acc is None:
        return tm.plan(cfg.control.tip_mode, targets, hub_ref, mu_limit=cfg.control.tip_mu_limit,
                       tol=WORKSPACE_TOL)
    rots, gb = attitudes(cfg, acc)
    return tm.plan(cfg.control.tip_mode, targets, hub_ref, rots, gb,
                   mu_limit=cfg.control.tip_mu_limit, tol=WORKSPACE_TOL)


def attitudes(cfg: Config, acc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The planned attitudes (n, 3, 3) and apparent gravities (n, 3, m/s^2, hub frame) of a
    hub accelerating at ``acc`` (n, 3, m/s^2, world) (:func:`planned_attitude`)."""
    n = len(acc)
    g = np.asarray(cfg.sim.gravity, dtype=float)
    rots, gb = np.empty((n, 3, 3)), np.empty((n, 3))
    for k in range(n):
        planned_attitude(acc[k], 0.0, g, rots[k])
        apparent_gravity(rots[k], acc[k], g, gb[k])
    return rots, gb


def bend_tensions(cfg: Config, built: BuiltModel, mu: np.ndarray, beta: np.ndarray
                  ) -> np.ndarray:
    """The tendon commands (n, n_tendons) of the bends (mu (n,), beta (n,) rad), mu clipped to
    [0, 1], for any arm (:func:`quadarm.scenarios.drive.bend_rows`, the commands the tip map
    was solved with, :func:`quadarm.control.tipspace.bend_command`): tensions (N) of
    ``control.tendon_map`` for a one-section arm and of each section's plan for a multi-section
    one; the servos' tendon-length commands (m) for servo-driven tendons, so that the plan
    commands travels, not tensions."""
    return np.asarray(drive_rows(cfg, built, np.clip(mu, 0.0, 1.0), beta), dtype=float)


def follow(cfg: Config, built: BuiltModel, tm: TipMap, t: np.ndarray,
           tip_at: Callable[[np.ndarray], np.ndarray],
           hub_home: np.ndarray) -> tuple[TipPlan, np.ndarray]:
    """The plan that puts the tip on the moving target ``tip_at(times) -> (n, 3)`` (world, m)
    at the physics samples ``t`` (s), with the hub moving from ``hub_home`` (m, (3,)): the split
    on samples every :data:`PLAN_DT` s (level, then with the planned attitude), splines to
    every sample. Also returns the split's rows at the planning samples (m, 7)."""
    dt = float(t[1] - t[0])
    n_plan = int(np.ceil((t[-1] - t[0]) / PLAN_DT)) + 1
    tp = t[0] + np.arange(n_plan) * PLAN_DT
    targets = tip_at(tp)
    rows = split_samples(cfg, tm, targets, hub_home)
    acc = CubicSpline(tp, rows[:, :3], bc_type="clamped")(tp, 2)
    rows = split_samples(cfg, tm, targets, hub_home, acc)
    hub = CubicSpline(tp, rows[:, :3], bc_type="clamped")
    uv = np.stack([rows[:, 3] * np.cos(rows[:, 4]), rows[:, 3] * np.sin(rows[:, 4])], 1)
    bend = CubicSpline(tp, uv, bc_type="clamped")
    ref = differentiate(lambda x: hub(np.clip(x, tp[0], tp[-1])), t, dt)
    u = bend(t)
    mu, beta = np.hypot(u[:, 0], u[:, 1]), np.arctan2(u[:, 1], u[:, 0])
    rows_bend = None
    if corrects_bend(cfg):
        rots, gb = attitudes(cfg, acc)
        rows_bend = command_rows(cfg, built, bend_rows(tm, t, u, tp, rows[:, 3], rows[:, 4],
                                                       rots, gb))
    return TipPlan(ref, tip_at(t), mu, beta, bend_tensions(cfg, built, mu, beta),
                   rows_bend), rows


def tip_error(log_tip: np.ndarray, target: np.ndarray) -> np.ndarray:
    """|tip - target| (m), (n,), for logged tips and targets (n, 3)."""
    return np.asarray(np.linalg.norm(log_tip - target[: len(log_tip)], axis=1))


def hub_travel(position: np.ndarray) -> float:
    """How far the hub went (m): the largest distance of the logged positions (n, 3) from the
    first. (A path length would add up the hover's jitter; this measures the excursion.)"""
    return float(np.linalg.norm(position - position[0], axis=1).max())


N_CURVE = 4096  # samples of a closed curve for its arc-length table


def curve(sc: TraceScenario) -> np.ndarray:
    """The path's points (m, (N, 3), world) densely enough that linear interpolation by arc
    length is exact to < 1e-7 m on the curved paths; the polyline's vertices as they are."""
    c = np.asarray(sc.center, dtype=float)
    if sc.path == "polyline":
        return np.asarray(sc.points, dtype=float)
    h = sc.size / 2
    s = np.linspace(0.0, 2 * np.pi, N_CURVE + 1)
    if sc.path == "circle":
        a, b = h * np.cos(s), h * np.sin(s)
    elif sc.path == "figure_eight":
        a, b = h * np.sin(s), h / 2 * np.sin(2 * s)
    else:  # line, centred
        a, b = np.array([-h, h]), np.zeros(2)
    e1 = np.array([1.0, 0.0, 0.0])
    e2 = np.array([0.0, 1.0, 0.0]) if sc.plane == "horizontal" else np.array([0.0, 0.0, 1.0])
    return c + a[:, None] * e1 + b[:, None] * e2


def check_workspace(cfg: Config) -> None:
    """The preflight's check of ``control.tip_mode=arm`` (the hub holds, so only targets in the
    arm's workspace can be reached): a ``reach`` with no target within :data:`WORKSPACE_TOL`
    of the workspace, or a ``trace`` whose path leaves it, is refused, naming the first target
    (or path point) outside. Nothing is checked in the other modes (they always reach)."""
    from quadarm.config import ConfigError, ReachScenario, TraceScenario

    sc = cfg.scenario
    if cfg.control.tip_mode != "arm" or not isinstance(sc, ReachScenario | TraceScenario):
        return
    tm = the_map(cfg)
    home = np.array([0.0, 0.0, sc.altitude])
    if isinstance(sc, ReachScenario):
        targets = np.asarray(sc.targets, dtype=float)
        rows = split_samples(cfg, tm, targets, home)
        if not rows[:, 5].any():
            raise ConfigError("scenario.targets[0]", [float(v) for v in targets[0]],
                              "no target is in the arm's workspace (control.tip_mode=arm: "
                              f"within {WORKSPACE_TOL * 100:g} cm of a tip the arm reaches "
                              "with the hub held); use tip_mode=coordinated or vehicle")
        return
    pts = curve(sc)
    pts = pts[np.linspace(0, len(pts) - 1, min(len(pts), 33)).astype(int)]
    rows = split_samples(cfg, tm, pts, home)
    out = np.flatnonzero(rows[:, 5] == 0.0)
    if len(out):
        p = [round(float(v), 4) for v in pts[out[0]]]
        raise ConfigError("scenario.path", sc.path,
                          f"leaves the arm's workspace at {p} (control.tip_mode=arm: the arm "
                          f"alone misses it by {rows[out[0], 6] * 100:.1f} cm); use "
                          "tip_mode=coordinated or vehicle")
