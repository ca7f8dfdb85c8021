"""Tip-space control: the arm's tip map, its inverse (inverse statics) and the vehicle/arm split.

The derivation, the measured accuracy and the reasoning behind each choice are in
``docs/tipspace.md``. In short:

- **The tip map** T(mu, beta; g_B) is where the quasi-static arm puts its tip, in the hub frame
  (the vehicle body's frame, origin at the hub centre, m), for the bend command (mu, beta)
  under the apparent gravity g_B (m/s^2, hub frame). The command's tendon commands are the
  flight plan's (:func:`bend_command`): the paper's three-tendon allocation
  (:func:`quadarm.control.tendons.tensions`) for a one-section arm; for an arm of S sections
  the section plan (:mod:`quadarm.control.sections`), which resolves the 2 S bend variables
  into the two of (mu, beta) by one rule (docs/tipspace.md section 8): section j takes the
  moment sqrt(3)/2 ``bend_scale_j`` mu T_b r_j towards beta + ``bend_offset_deg_j``, so by
  default every section carries the same moment, the least-bending-energy way to turn the tip
  by a given angle in zero gravity; in tensions (N) for tension-driven tendons, in the servos'
  tendon-length commands (m) for servo-driven ones. It is solved from the model itself: the
  fixed-base build (the airframe welded level to the world) with the command's tendon
  commands, brought to static equilibrium by Newton's method on MuJoCo's own generalised-force
  balance (``qfrc_smooth + qfrc_constraint = 0`` at zero velocity, joint limits and position
  actuators included; dry friction, whose band has no single equilibrium, taken out), on a
  (mu, beta) grid.
- **Attitude**: the arm is taken as quasi-static under a uniform apparent gravity
  g_B = R^T (g - a) (R the hub's attitude, a its acceleration). The map stores, per grid point,
  the level-hover tip T0 and its exact first-order sensitivity G = dT/dg_B (3 x 3, from the
  implicit-function theorem at the equilibrium), and evaluates T0 + G (g_B - g0_B).
- **The interpolant** is a Fourier series in beta (exact at the grid's beta samples) whose
  coefficients are cubic splines in mu; it is smooth, periodic and has analytic derivatives.
- **The inverse** (:func:`closest_bend`) finds the bend whose tip is nearest a target in the
  hub frame (Levenberg-Marquardt in the Cartesian command (mu cos beta, mu sin beta), which has
  no singularity at the straight arm, on the disk mu <= mu_limit). A target on the map's surface
  returns its own bend; the residual measures how far a target is from the workspace.
- **The split law** (:func:`split`): ``vehicle`` keeps the arm straight and puts the hub at the
  target minus the hanging tip; ``arm`` holds the hub and bends (flagging targets farther than a
  tolerance from the workspace); ``coordinated`` bends to the workspace point nearest the target
  and moves the hub by the remainder, the least hub motion any bend allows.

The per-call functions (:func:`map_eval`, :func:`tip_body`, :func:`closest_bend`,
:func:`split`, :func:`apparent_gravity`, :func:`planned_attitude`, and :func:`bend_jacobian`,
the tip's Jacobian in the Cartesian bend that the tip feedback's bend correction reads) are
written like
:mod:`quadarm.control.arm`: scalar code on arrays with ``register_jitable``, so that plain Python
and numba's compiled step run the same source. The map itself is built once per model
structure with plain MuJoCo calls (:func:`tip_map`) and cached on disk (:func:`cache_dir`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import mujoco
import numpy as np
from scipy.interpolate import CubicSpline

from quadarm.config import AirframeConfig, ArmConfig, RodArmConfig, SimConfig
from quadarm.config.sections import SectionArmConfig
from quadarm.control import sections as plan_sections
from quadarm.control.tendons import tensions
from quadarm.jitable import compiled, compiled_as, register_jitable
from quadarm.model import BuiltModel, build, names
from quadarm.model.sections import hold, pretension

AnyArm = ArmConfig | RodArmConfig | SectionArmConfig

# The split law's modes (``control.tip_mode``), as the integers the compiled step takes.
VEHICLE, ARM, COORDINATED = 0, 1, 2
MODES = {"vehicle": VEHICLE, "arm": ARM, "coordinated": COORDINATED}

# Channels stored per grid point: the tip (3), then G = dT/dg_B row-major (9, s^2).
N_CHAN = 12
GRID_MU = 17  # mu = 0, 1/16, ..., 1
GRID_BETA = 24  # beta = 0, 15, ..., 345 deg
NEWTON_TOL = 1e-10  # N m: the largest generalised-force residual accepted as equilibrium
CACHE_ENV = "QUADARM_TIPMAP_CACHE"  # overrides the cache folder (see cache_dir)
MAP_VERSION = 1  # bump when the stored arrays change meaning (the source hash covers the rest)


# ------------------------------------------------------------------------------------------
# The bend command's tendon commands, for any arm
# ------------------------------------------------------------------------------------------


def bend_command(built: BuiltModel, arm: AnyArm, mapping: str) -> Callable[..., np.ndarray]:
    """The tendon commands (..., n_tendons) of the bends (mu, beta rad; scalars or arrays of
    one shape (...)) that the flight plan writes
    to the tendon actuators of ``built`` (:func:`quadarm.scenarios.drive.bend_rows`): for a
    one-section arm the tensions (N) of the tendon map ``mapping``; for a multi-section arm
    each section's planned moment allocated to its tendons
    (:func:`quadarm.control.sections.tensions`), as tensions (N) when they are
    tension-driven, as the servos' tendon-length commands (m,
    :func:`quadarm.control.sections.displacement_commands`, over the pretension) when they are
    servo-driven (with ``arm.bend_travel_mm``, of the travel plan's tensions:
    :func:`quadarm.control.sections.plan_tensions`). The servos' backlash is a play along the
    command's history, which a static map cannot hold: the map is of the commanded travel
    (the play's centre)."""
    if not isinstance(arm, SectionArmConfig):
        phi = np.radians(np.asarray(arm.tendon_angles_deg, dtype=float))
        t_max = float(arm.tension_max)
        return lambda mu, beta: tensions(mu, beta, phi, t_max, mapping)
    sec = arm
    if sec.actuation == "tension":
        return lambda mu, beta: plan_sections.tensions(mu, beta, sec)
    m = built.model
    rest = np.array(m.tendon_length0[m.actuator_trnid[built.tendon_actuators, 0]])
    base = pretension(sec)
    return lambda mu, beta: plan_sections.displacement_commands(
        plan_sections.plan_tensions(mu, beta, sec, base), sec, rest)


def _frictionless(built: BuiltModel) -> BuiltModel:
    """``built`` with the hinges' and tendons' dry friction taken out (in place, as a model
    of its own): at rest, dry friction holds the arm anywhere in a band round the frictionless
    equilibrium, so Newton's method on the force balance has no single root; the map is that
    band's centre. A model without friction is returned as it is."""
    m = built.model
    if m.dof_frictionloss.any() or m.tendon_frictionloss.any():
        m.dof_frictionloss[:] = 0.0
        m.tendon_frictionloss[:] = 0.0
    return built


# ------------------------------------------------------------------------------------------
# Static equilibrium of the fixed-base arm, from MuJoCo's own force balance
# ------------------------------------------------------------------------------------------


def _residual(model: mujoco.MjModel, data: mujoco.MjData, q: np.ndarray) -> np.ndarray:
    """The generalised force (N m, (nv,)) left over at configuration q and zero velocity:
    springs, tendon tensions, gravity and the joint-limit constraint forces."""
    data.qpos[:] = q
    data.qvel[:] = 0.0
    mujoco.mj_forward(model, data)
    return data.qfrc_smooth + data.qfrc_constraint


def _stiffness(model: mujoco.MjModel, data: mujoco.MjData, q: np.ndarray,
               h: float = 1e-6) -> np.ndarray:
    """dr/dq (N m/rad, (nv, nv)) by central differences."""
    jac = np.empty((model.nv, model.nv))
    for i in range(model.nv):
        qp, qm = q.copy(), q.copy()
        qp[i] += h
        qm[i] -= h
        jac[:, i] = (_residual(model, data, qp) - _residual(model, data, qm)) / (2.0 * h)
    return jac


def equilibrium(model: mujoco.MjModel, data: mujoco.MjData, q0: np.ndarray,
                iterations: int = 60) -> np.ndarray:
    """The static equilibrium (hinge angles, rad, (nq,)) nearest q0 under ``data.ctrl``.

    Newton's method with a backtracking line search on the residual's size. The model must have
    only hinges (nq == nv: the fixed-base arm). Raises RuntimeError when it does not converge.
    """
    if model.nq != model.nv:
        raise ValueError("equilibrium: the model must have hinges only (a fixed-base build)")
    q = np.array(q0, dtype=float)
    r = _residual(model, data, q)
    for _ in range(iterations):
        err = float(np.abs(r).max())
        if err < NEWTON_TOL:
            return q
        step = np.linalg.solve(_stiffness(model, data, q), -r)
        s = 1.0
        while True:
            trial = q + s * step
            rt = _residual(model, data, trial)
            if float(np.abs(rt).max()) < err or s < 1e-6:
                break
            s *= 0.5
        q, r = trial, rt
    raise RuntimeError(f"equilibrium: no convergence (residual {np.abs(r).max():.3g} N m)")


def _tip_and_sensitivity(model: mujoco.MjModel, data: mujoco.MjData, q: np.ndarray,
                         hub: int, tip: int) -> np.ndarray:
    """At an equilibrium q: the tip in the hub frame (3, m) and G = dT/dg (9, row-major, s^2).

    r(q, g) = 0 defines q(g); dq/dg = -(dr/dq)^-1 dr/dg (implicit-function theorem), with dr/dg
    by central differences in the model's gravity (r is affine in g off the joint limits), and
    dT/dg = J_tip dq/dg. The fixed hub is level, so world and hub frames coincide.
    """
    k = _stiffness(model, data, q)
    g0 = model.opt.gravity.copy()
    h = 0.01 * float(np.linalg.norm(g0))
    drdg = np.empty((model.nv, 3))
    for j in range(3):
        col = np.zeros(model.nv)
        for sign in (1.0, -1.0):
            model.opt.gravity[:] = g0
            model.opt.gravity[j] += sign * h
            col += sign * _residual(model, data, q)
        drdg[:, j] = col / (2.0 * h)
    model.opt.gravity[:] = g0
    _residual(model, data, q)
    jac = np.zeros((3, model.nv))
    mujoco.mj_jacSite(model, data, jac, None, tip)
    sens = jac @ np.linalg.solve(k, -drdg)
    out = np.empty(N_CHAN)
    out[:3] = data.site_xpos[tip] - data.xpos[hub]
    out[3:] = sens.ravel()
    return out


# ------------------------------------------------------------------------------------------
# The map: grid, interpolant, cache
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TipMap:
    """The tip map of one model structure (see the module docstring).

    ``knots`` (n_mu,): the mu grid. ``coef`` (4, n_mu - 1, 12, n_harm): per mu interval, the
    cubic polynomial coefficients (highest power first, in mu - knot) of each channel's Fourier
    coefficients [a0, a1, b1, a2, b2, ...] in beta. ``samples`` (n_mu, n_beta, 12): the solved
    grid values (tip, m; G, s^2). ``g0`` (3,): the level hover's gravity in the hub frame
    (m/s^2). ``mu_cap``: the largest mu up to which the tip's lateral distance from the hanging
    tip grows with mu at every grid beta (the workspace's bend limit, at most 1). ``key``: the
    cache key.
    """

    knots: np.ndarray
    coef: np.ndarray
    samples: np.ndarray
    g0: np.ndarray
    mu_cap: float
    key: str

    def tip(self, mu: float, beta: float, g_body: np.ndarray | None = None) -> np.ndarray:
        """The tip (m, (3,), hub frame) for the bend (mu, beta rad) under g_body (m/s^2, hub
        frame; default the level hover's)."""
        g = self.g0 if g_body is None else np.asarray(g_body, dtype=float)
        out = np.empty(3)
        work = np.empty((3, N_CHAN))
        tip_body(self.knots, self.coef, self.g0, mu, beta, g, work, out)
        return out

    def hanging(self) -> np.ndarray:
        """The straight arm's tip in level hover (m, (3,), hub frame)."""
        return self.samples[0, 0, :3].copy()

    def inverse(self, target_body: np.ndarray, g_body: np.ndarray | None = None,
                mu_limit: float | None = None) -> tuple[float, float, np.ndarray]:
        """The bend (mu, beta rad) whose tip is nearest ``target_body`` (m, hub frame), with
        mu <= ``mu_limit`` (default ``mu_cap``), and the residual tip - target (m, (3,))."""
        g = self.g0 if g_body is None else np.asarray(g_body, dtype=float)
        lim = self.mu_cap if mu_limit is None else min(mu_limit, self.mu_cap)
        out = np.empty(5)
        work = np.empty((3, N_CHAN))
        closest_bend(self.knots, self.coef, self.g0, np.asarray(target_body, dtype=float), g,
                     lim, work, out)
        return float(out[0]), float(out[1]), out[2:5].copy()

    def plan(self, mode: str, targets: np.ndarray, hubs: np.ndarray,
             rots: np.ndarray | None = None, g_bodies: np.ndarray | None = None,
             mu_limit: float = 1.0, tol: float = 0.01,
             kernel: Callable[..., None] | None = None) -> np.ndarray:
        """The split law over a path (see :func:`split`): tip ``targets`` and hub references
        (n, 3, world, m), attitudes (n, 3, 3; default level) and apparent gravities (n, 3, hub
        frame; default the level hover's). Returns (n, 7): hub target (3), mu, beta, the
        in-workspace flag, the predicted miss (m). ``kernel``: the :func:`split_path` to call
        (default: numba's compile of it when numba is installed and ``QUADARM_NUMBA`` allows
        it, :func:`quadarm.jitable.compiled`, cached on disk; the plain function otherwise:
        the same numbers either way)."""
        if mode not in MODES:
            raise ValueError(f"control.tip_mode={mode}: must be one of {', '.join(MODES)}")
        targets = np.ascontiguousarray(targets, dtype=float).reshape(-1, 3)
        n = len(targets)
        hubs = np.ascontiguousarray(np.broadcast_to(hubs, (n, 3)), dtype=float)
        rots = np.ascontiguousarray(np.broadcast_to(np.eye(3) if rots is None else rots,
                                                    (n, 3, 3)), dtype=float)
        g = np.ascontiguousarray(np.broadcast_to(self.g0 if g_bodies is None else g_bodies,
                                                 (n, 3)), dtype=float)
        out = np.empty((n, 7))
        # Compiled when numba is there (quadarm.jitable.compiled: the same numbers; a long path
        # of a many-harmonic map took minutes in plain Python, 0.3 s compiled).
        (kernel or compiled(split_path))(MODES[mode], self.knots, self.coef, self.g0,
                               min(mu_limit, self.mu_cap), targets, hubs, rots, g, tol, out)
        return out

    def jacobian(self, mu: float, beta: float, g_body: np.ndarray | None = None) -> np.ndarray:
        """d tip / d(u, v) (m per unit command, (3, 2), hub frame) at the bend (mu, beta rad)
        under g_body (default the level hover's), in the Cartesian command
        (u, v) = mu (cos beta, sin beta): :func:`bend_jacobian` on the map's interpolant."""
        g = self.g0 if g_body is None else np.asarray(g_body, dtype=float)
        out = np.empty((3, 2))
        bend_jacobian(self.knots, self.coef, self.g0, mu, beta, g, np.empty((3, N_CHAN)), out)
        return out

    def in_workspace(self, target_body: np.ndarray, tol: float,
                     g_body: np.ndarray | None = None) -> bool:
        """Whether the arm alone (hub held) puts its tip within ``tol`` (m) of the target."""
        return bool(np.linalg.norm(self.inverse(target_body, g_body)[2]) <= tol)


def fit(knots: np.ndarray, samples: np.ndarray) -> np.ndarray:
    """The interpolant's coefficients (see :class:`TipMap`) from grid samples
    (n_mu, n_beta, C) at beta_j = 2 pi j / n_beta (n_beta even)."""
    n_beta = samples.shape[1]
    if n_beta % 2:
        raise ValueError("fit: the beta grid must have an even number of points")
    spec = np.fft.rfft(samples, axis=1) / n_beta  # (n_mu, n_beta/2 + 1, C)
    half = n_beta // 2
    harm = np.zeros((samples.shape[0], samples.shape[2], n_beta + 1))
    harm[:, :, 0] = spec[:, 0, :].real
    for k in range(1, half + 1):
        scale = 1.0 if k == half else 2.0  # the Nyquist term is real and counted once
        harm[:, :, 2 * k - 1] = scale * spec[:, k, :].real
        harm[:, :, 2 * k] = -scale * spec[:, k, :].imag
    return np.ascontiguousarray(CubicSpline(knots, harm, axis=0).c)


def cache_dir() -> Path:
    """Where maps are stored: ``$QUADARM_TIPMAP_CACHE`` if set, else ``__pycache__/tipmap``
    next to this module (like the numba cache of :mod:`quadarm.runner.jit`)."""
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path(__file__).resolve().parent / "__pycache__" / "tipmap"


def map_key(xml: str, mapping: str, n_mu: int, n_beta: int, plan: str = "") -> str:
    """The cache key: everything that changes the map. The fixed-base model's MJCF holds every
    length, mass, stiffness, range, tendon route, tension limit and the gravity; the tendon
    map, the grid, this module's source (the algorithm) and, for a multi-section arm, its bend
    plan's inputs outside the MJCF (``plan``: :func:`plan_inputs`) complete it."""
    h = hashlib.sha256()
    h.update(xml.encode())
    h.update(json.dumps([mapping, n_mu, n_beta, MAP_VERSION]).encode())
    if plan:
        h.update(plan.encode())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()[:20]


def plan_inputs(arm: AnyArm) -> str:
    """What a multi-section arm's bend plan reads besides its MJCF (every key of the arm:
    the plan's tension scale, each section's ``bend_scale``/``bend_offset_deg``, the
    pretensions), as text for :func:`map_key`; '' for a one-section arm (its tendon map reads
    the MJCF's tension limit and tendon angles only)."""
    if not isinstance(arm, SectionArmConfig):
        return ""
    return json.dumps(asdict(arm), sort_keys=True, default=str)


def solve_grid(built: BuiltModel, arm: AnyArm, mapping: str, n_mu: int,
               n_beta: int) -> tuple[np.ndarray, np.ndarray]:
    """The grid of a fixed-base build: mu knots (n_mu,) and samples (n_mu, n_beta, 12).

    Each beta is swept from the straight arm up in mu, each equilibrium starting from the
    previous one (continuation keeps Newton on the branch the arm reaches by bending)."""
    model = _frictionless(built).model
    data = mujoco.MjData(model)
    command = bend_command(built, arm, mapping)
    knots = np.linspace(0.0, 1.0, n_mu)
    betas = 2.0 * np.pi * np.arange(n_beta) / n_beta
    samples = np.empty((n_mu, n_beta, N_CHAN))
    hub = built.quad_body
    for j, beta in enumerate(betas):
        q = model.qpos0.copy()
        for i, mu in enumerate(knots):
            data.ctrl[:] = 0.0
            hold(model, data, built.tendon_actuators, command(mu, beta))
            q = equilibrium(model, data, q)
            samples[i, j] = _tip_and_sensitivity(model, data, q, hub, built.tip_site)
    return knots, samples


def _mu_cap(knots: np.ndarray, samples: np.ndarray) -> float:
    lateral = np.hypot(samples[:, :, 0] - samples[0, :, 0], samples[:, :, 1] - samples[0, :, 1])
    growing = np.all(np.diff(lateral, axis=0) > 0.0, axis=1)  # (n_mu - 1,)
    last = int(np.argmin(growing)) if not growing.all() else len(growing)
    return float(knots[last])


LOAD_SITE = "tipmap_load"  # the carried load's centre in a loaded map's build


def loaded(built: BuiltModel, mass: float, offset: np.ndarray) -> BuiltModel:
    """The fixed-base ``built`` carrying a load: a point mass ``mass`` (kg) welded to the tip
    ball at ``offset`` (m, (3,), the tip body's frame, from the ball's centre; a grasped
    object is welded so, :func:`quadarm.model.payload.grasp`), a contact-free geom of the tip
    body with the site :data:`LOAD_SITE` at its centre. Its MJCF holds the load, so the map's
    cache key does too."""
    body = built.spec.body(names.TIP_BODY)
    pos = [float(v) for v in offset]
    body.add_geom(name="tipmap_load", type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[1e-3, 0, 0],
                  pos=pos, mass=float(mass), contype=0, conaffinity=0)
    body.add_site(name=LOAD_SITE, pos=pos, size=[1e-3, 0, 0])
    return replace(built, model=built.spec.compile())


def bent_pose(frame: AirframeConfig, arm: AnyArm, sim: SimConfig,
              mapping: str, mu: float, beta: float, g_body: np.ndarray | None = None,
              steps: int = GRID_MU, load: tuple[float, np.ndarray] | None = None
              ) -> tuple[BuiltModel, mujoco.MjData]:
    """The fixed-base (level) arm at its equilibrium for the bend (mu, beta rad) under
    ``g_body`` (m/s^2, hub frame; default ``sim.gravity``), reached by continuation from the
    straight arm in ``steps`` steps of mu (as :func:`solve_grid`); the data's kinematics are of
    that pose (dry friction taken out, as in the map). ``load`` (kg, (3,) m): the arm carrying
    that mass at that offset in the tip body's frame (:func:`loaded`); None: unloaded."""
    fixed = build(frame, arm, sim, fixed_base=True)
    built = _frictionless(fixed if load is None else loaded(fixed, *load))
    model = built.model
    if g_body is not None:
        model.opt.gravity[:] = np.asarray(g_body, dtype=float)
    data = mujoco.MjData(model)
    command = bend_command(built, arm, mapping)
    q = model.qpos0.copy()
    for level in np.linspace(0.0, mu, steps):
        data.ctrl[:] = 0.0
        hold(model, data, built.tendon_actuators, command(float(level), beta))
        q = equilibrium(model, data, q)
    _residual(model, data, q)
    return built, data


def tip_rotation(frame: AirframeConfig, arm: AnyArm, sim: SimConfig,
                 mapping: str, mu: float, beta: float,
                 load: tuple[float, np.ndarray] | None = None) -> np.ndarray:
    """The tip body's attitude (3, 3, hub frame = world, level) at the arm's equilibrium for
    the bend (mu, beta rad) (:func:`bent_pose`), unloaded or carrying ``load`` (kg, (3,) m in
    the tip body's frame), solved directly: the reference that a loaded map's attitude
    approximates (``quadarm.scenarios.pick_place.carried_tilt``)."""
    built, data = bent_pose(frame, arm, sim, mapping, mu, beta, load=load)
    return np.array(data.xmat[built.model.site_bodyid[built.tip_site]].reshape(3, 3))


def direct_tip(frame: AirframeConfig, arm: AnyArm, sim: SimConfig,
               mapping: str, mu: float, beta: float, g_body: np.ndarray) -> np.ndarray:
    """The tip (m, (3,), hub frame) of the unloaded arm's equilibrium for the bend (mu, beta
    rad) under the apparent gravity ``g_body`` (m/s^2, hub frame), solved directly
    (:func:`bent_pose`): the reference the map's first-order gravity correction
    approximates."""
    built, data = bent_pose(frame, arm, sim, mapping, mu, beta, g_body)
    return np.array(data.site_xpos[built.tip_site] - data.xpos[built.quad_body])


def tip_map(frame: AirframeConfig, arm: AnyArm, sim: SimConfig,
            mapping: str = "balanced", n_mu: int = GRID_MU, n_beta: int = GRID_BETA,
            cache: bool = True, load: tuple[float, np.ndarray] | None = None,
            at_load: bool = False) -> TipMap:
    """The tip map of this airframe, arm and gravity (see the module docstring), read from the
    cache when its key is there, otherwise solved (about 400 equilibria, a few seconds) and
    stored. Writes are atomic, so parallel workers can share the folder. ``load`` (kg, (3,) m):
    the map of the arm carrying that mass at that offset from the tip ball (:func:`loaded`;
    None: unloaded); ``at_load``: the map of the load's centre instead of the tip's."""
    built = build(frame, arm, sim, fixed_base=True)
    if load is not None:
        built = loaded(built, load[0], np.asarray(load[1], dtype=float))
        if at_load:
            built = replace(built, tip_site=built.model.site(LOAD_SITE).id)
    key = map_key(built.xml(), mapping + ("@load" if at_load else ""), n_mu, n_beta,
                  plan_inputs(arm))
    path = cache_dir() / f"tipmap-{key}.npz"
    if cache and path.exists():
        with np.load(path) as f:
            knots, samples = f["knots"], f["samples"]
    else:
        knots, samples = solve_grid(built, arm, mapping, n_mu, n_beta)
        if cache:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
            np.savez(tmp, knots=knots, samples=samples)
            os.replace(tmp, path)
    g0 = np.array(sim.gravity, dtype=float)  # the level hub: its frame is the world's
    return TipMap(knots=knots, coef=fit(knots, samples), samples=samples, g0=g0,
                  mu_cap=_mu_cap(knots, samples), key=key)


# ------------------------------------------------------------------------------------------
# Per-call functions (plain Python or numba: scalar code on arrays)
# ------------------------------------------------------------------------------------------


def map_eval_loops(knots, coef, mu: float, beta: float, out) -> None:  # noqa: ANN001 - arrays
    """Every channel and its derivatives at (mu, beta): out[0] the values, out[1] d/dmu,
    out[2] d/dbeta (per rad); ``out`` (3, C). mu outside the knots extrapolates the end
    interval's cubic. The scalar loop that compiled code runs as :func:`map_eval`."""
    n = knots.shape[0]
    i = 0
    while i < n - 2 and mu > knots[i + 1]:
        i += 1
    t = mu - knots[i]
    n_chan = coef.shape[2]
    n_harm = coef.shape[3]
    for c in range(n_chan):
        out[0, c] = 0.0
        out[1, c] = 0.0
        out[2, c] = 0.0
    for h in range(n_harm):
        if h == 0:
            base, dbase = 1.0, 0.0
        else:
            k = float((h + 1) // 2)
            if h % 2 == 1:
                base, dbase = math.cos(k * beta), -k * math.sin(k * beta)
            else:
                base, dbase = math.sin(k * beta), k * math.cos(k * beta)
        for c in range(n_chan):
            c0, c1, c2, c3 = coef[0, i, c, h], coef[1, i, c, h], coef[2, i, c, h], coef[3, i, c, h]
            p = ((c0 * t + c1) * t + c2) * t + c3
            dp = (3.0 * c0 * t + 2.0 * c1) * t + c2
            out[0, c] += p * base
            out[1, c] += dp * base
            out[2, c] += p * dbase


@compiled_as(map_eval_loops)
def map_eval(knots, coef, mu: float, beta: float, out) -> None:  # noqa: ANN001 - arrays
    """:func:`map_eval_loops` in plain Python, in numpy over every channel and harmonic at once
    (about ten times faster; compiled code runs the loop itself): the same products, and each
    channel's sum over the harmonics accumulated in the same order (``np.add.accumulate`` is
    sequential, from a zero column as the loop starts from zero), so the same numbers bit
    for bit."""
    n = knots.shape[0]
    i = 0
    while i < n - 2 and mu > knots[i + 1]:
        i += 1
    t = mu - knots[i]
    n_chan, n_harm = coef.shape[2], coef.shape[3]
    base, dbase = np.empty(n_harm), np.empty(n_harm)
    base[0], dbase[0] = 1.0, 0.0
    for h in range(1, n_harm):
        k = float((h + 1) // 2)
        if h % 2 == 1:
            base[h], dbase[h] = math.cos(k * beta), -k * math.sin(k * beta)
        else:
            base[h], dbase[h] = math.sin(k * beta), k * math.cos(k * beta)
    c0, c1, c2, c3 = coef[0, i], coef[1, i], coef[2, i], coef[3, i]  # (C, n_harm) each
    p = ((c0 * t + c1) * t + c2) * t + c3
    dp = (3.0 * c0 * t + 2.0 * c1) * t + c2
    terms = np.zeros((3, n_chan, n_harm + 1))
    terms[0, :, 1:] = p * base
    terms[1, :, 1:] = dp * base
    terms[2, :, 1:] = p * dbase
    out[:, :n_chan] = np.add.accumulate(terms, axis=2)[:, :, -1]


@register_jitable
def tip_body(knots, coef, g0, mu: float, beta: float, g_body, work, out) -> None:  # noqa: ANN001
    """The tip (m, hub frame) T0 + G (g_B - g0) into ``out`` (3,), and in ``work`` (3, 12)
    the channels of :func:`map_eval` (rows 1-2 of its first three columns are then replaced by
    dT/dmu and dT/dbeta of the gravity-corrected tip)."""
    map_eval(knots, coef, mu, beta, work)
    dg0, dg1, dg2 = g_body[0] - g0[0], g_body[1] - g0[1], g_body[2] - g0[2]
    for r in range(3):
        for a in range(3):
            s = 3 + 3 * a
            work[r, a] += work[r, s] * dg0 + work[r, s + 1] * dg1 + work[r, s + 2] * dg2
    out[0], out[1], out[2] = work[0, 0], work[0, 1], work[0, 2]


JAC_MU_FLOOR = 1e-3  # the smallest mu at which bend_jacobian evaluates the map's derivatives


@register_jitable
def bend_jacobian(knots, coef, g0, mu: float, beta: float, g_body, work, out) -> None:  # noqa: ANN001
    """d tip / d(u, v) (m, (3, 2), hub frame) into ``out`` at the bend (mu, beta rad) under
    ``g_body``, in the Cartesian command (u, v) = mu (cos beta, sin beta); ``work`` (3, 12)
    is scratch.

    The chain rule on the interpolant's analytic derivatives: d/du = cos b d/dmu
    - sin b / mu d/dbeta and d/dv = sin b d/dmu + cos b / mu d/dbeta. d/dbeta vanishes like
    mu at the straight arm, so below :data:`JAC_MU_FLOOR` the derivatives are taken at that
    mu in the same direction: the tip is smooth in (u, v) there, so this errs by O(1e-3) of
    the slope."""
    m = max(mu, JAC_MU_FLOOR)
    tip = np.empty(3)
    tip_body(knots, coef, g0, m, beta, g_body, work, tip)
    cb, sb = math.cos(beta), math.sin(beta)
    for r in range(3):
        out[r, 0] = cb * work[1, r] - sb / m * work[2, r]
        out[r, 1] = sb * work[1, r] + cb / m * work[2, r]


def gravity_tip_coef_loops(coef, g0, g_body, out) -> None:  # noqa: ANN001
    """The interpolant of the gravity-corrected tip T0 + G (g_B - g0) alone: ``out``
    (4, n_mu - 1, 3, n_harm) from the map's ``coef`` (the correction is linear, so it can be
    applied to the coefficients once instead of at every evaluation). The scalar loop that
    compiled code runs as :func:`gravity_tip_coef`."""
    dg0, dg1, dg2 = g_body[0] - g0[0], g_body[1] - g0[1], g_body[2] - g0[2]
    for p in range(coef.shape[0]):
        for i in range(coef.shape[1]):
            for a in range(3):
                s = 3 + 3 * a
                for h in range(coef.shape[3]):
                    out[p, i, a, h] = (coef[p, i, a, h] + coef[p, i, s, h] * dg0
                                       + coef[p, i, s + 1, h] * dg1 + coef[p, i, s + 2, h] * dg2)


@compiled_as(gravity_tip_coef_loops)
def gravity_tip_coef(coef, g0, g_body, out) -> None:  # noqa: ANN001
    """:func:`gravity_tip_coef_loops` in plain Python, in numpy over the whole coefficient
    array at once: each element's sum of the same products in the same order, so the same
    numbers bit for bit."""
    dg0, dg1, dg2 = g_body[0] - g0[0], g_body[1] - g0[1], g_body[2] - g0[2]
    for a in range(3):
        s = 3 + 3 * a
        out[:, :, a, :] = (coef[:, :, a, :] + coef[:, :, s, :] * dg0
                           + coef[:, :, s + 1, :] * dg1 + coef[:, :, s + 2, :] * dg2)


@register_jitable
def _tip3(knots, tc, mu: float, beta: float, work, tip) -> None:  # noqa: ANN001
    """The tip from :func:`gravity_tip_coef`'s coefficients into ``tip`` (3,); ``work``'s first
    three columns hold it and its derivatives (as :func:`map_eval`)."""
    map_eval(knots, tc, mu, beta, work)
    tip[0], tip[1], tip[2] = work[0, 0], work[0, 1], work[0, 2]


@register_jitable
def closest_bend(knots, coef, g0, target, g_body, mu_limit: float, work, out) -> None:  # noqa: ANN001
    """The bend nearest a target: out = (mu, beta rad in [0, 2 pi), residual tip - target (3,
    m)), for ``target`` (3,) in the hub frame, mu <= ``mu_limit``.

    Levenberg-Marquardt on 1/2 |T - target|^2 in the Cartesian command (u, v) = mu (cos beta,
    sin beta), projected on the disk (on its boundary, steps that push outwards slide along it
    in beta); started from the straight arm's linear response pointed
    at the target's lateral offset. ``work`` (3, 12) is scratch.
    """
    tip = np.empty(3)
    tc = np.empty((coef.shape[0], coef.shape[1], 3, coef.shape[3]))
    gravity_tip_coef(coef, g0, g_body, tc)
    # Start: beta towards the lateral offset from the hanging tip, mu from the initial slope.
    _tip3(knots, tc, 0.0, 0.0, work, tip)
    ex, ey = target[0] - tip[0], target[1] - tip[1]
    lat = math.sqrt(ex * ex + ey * ey)
    beta = math.atan2(ey, ex) if lat > 0.0 else 0.0
    _tip3(knots, tc, 0.0, beta, work, tip)
    slope = math.sqrt(work[1, 0] * work[1, 0] + work[1, 1] * work[1, 1])
    mu = min(lat / slope, mu_limit) if slope > 0.0 else 0.0
    if lat < 1e-9:
        # On the axis the straight arm is a stationary point of the distance (a maximum for
        # targets far enough above the hanging tip, where the nearest tips form a ring): start
        # off it, so that the descent can find either.
        mu = min(0.05, mu_limit)
    u, v = mu * math.cos(beta), mu * math.sin(beta)
    lam = 1e-6
    step, gain = 0.0, 0.0
    _tip3(knots, tc, mu, beta, work, tip)
    r0, r1, r2 = tip[0] - target[0], tip[1] - target[1], tip[2] - target[2]
    cost = r0 * r0 + r1 * r1 + r2 * r2
    for _ in range(200):
        # Jacobian in (u, v): d/du = cos b d/dmu - sin b / mu d/dbeta, likewise d/dv. Near the
        # straight arm d/dbeta vanishes like mu, so a floored mu keeps the ratio finite.
        m = max(mu, 1e-9)
        cb, sb = math.cos(beta), math.sin(beta)
        ju0 = cb * work[1, 0] - sb / m * work[2, 0]
        ju1 = cb * work[1, 1] - sb / m * work[2, 1]
        ju2 = cb * work[1, 2] - sb / m * work[2, 2]
        jv0 = sb * work[1, 0] + cb / m * work[2, 0]
        jv1 = sb * work[1, 1] + cb / m * work[2, 1]
        jv2 = sb * work[1, 2] + cb / m * work[2, 2]
        a00 = ju0 * ju0 + ju1 * ju1 + ju2 * ju2
        a01 = ju0 * jv0 + ju1 * jv1 + ju2 * jv2
        a11 = jv0 * jv0 + jv1 * jv1 + jv2 * jv2
        g_u = ju0 * r0 + ju1 * r1 + ju2 * r2
        g_v = jv0 * r0 + jv1 * r1 + jv2 * r2
        # Along the boundary circle mu = mu_limit only beta moves: its Gauss-Newton terms.
        tb0, tb1, tb2 = work[2, 0], work[2, 1], work[2, 2]
        a_b = tb0 * tb0 + tb1 * tb1 + tb2 * tb2 + 1e-300
        g_b = tb0 * r0 + tb1 * r1 + tb2 * r2
        accepted = False
        if a00 + a11 == 0.0:
            break  # no slope in either direction: a stationary point, nothing to descend
        while lam < 1e12:
            d00, d11 = a00 * (1.0 + lam) + 1e-300, a11 * (1.0 + lam) + 1e-300
            det = d00 * d11 - a01 * a01
            if not det > 0.0:
                # Marquardt's scaling (1 + lam) leaves a Jacobian of rank one singular (the
                # straight arm, where d/dbeta vanishes, or one column below the floor): its
                # normal matrix's determinant rounds to zero. Damping more grows the diagonal
                # past the off-diagonal term (or past the floored column), as for a rejected
                # step.
                lam *= 10.0
                continue
            du = -(d11 * g_u - a01 * g_v) / det
            dv = -(d00 * g_v - a01 * g_u) / det
            nu, nv = u + du, v + dv
            nm = math.sqrt(nu * nu + nv * nv)
            if nm > mu_limit and mu >= mu_limit and du * u + dv * v > 0.0:
                # On the boundary and pushed outwards: slide along it (projecting the step
                # back would stall, its tangential part being tiny). A step that points
                # inwards but overshoots through the disk (a target far beyond the arm's
                # reach, where the residual dwarfs the curvature the Gauss-Newton model
                # omits) is no push outwards: it is projected, and damping shortens it.
                nm = mu_limit
                nb = beta - g_b / (a_b * (1.0 + lam))
                nu, nv = nm * math.cos(nb), nm * math.sin(nb)
            else:
                if nm > mu_limit:
                    nu, nv, nm = nu * mu_limit / nm, nv * mu_limit / nm, mu_limit
                nb = math.atan2(nv, nu) if nm > 0.0 else beta
            _tip3(knots, tc, nm, nb, work, tip)
            s0, s1, s2 = tip[0] - target[0], tip[1] - target[1], tip[2] - target[2]
            new = s0 * s0 + s1 * s1 + s2 * s2
            if new <= cost:
                step = math.sqrt((nu - u) * (nu - u) + (nv - v) * (nv - v))
                u, v, mu, beta = nu, nv, nm, nb
                r0, r1, r2, gain, cost = s0, s1, s2, cost - new, new
                lam = max(lam * 0.1, 1e-12)
                accepted = True
                break
            lam *= 10.0
        if not accepted or step < 1e-14 or gain <= 1e-30:
            break
    # Leave work holding the final point's derivatives and report beta in [0, 2 pi).
    _tip3(knots, tc, mu, beta, work, tip)
    beta = beta % (2.0 * math.pi)
    out[0], out[1] = mu, beta
    out[2], out[3], out[4] = tip[0] - target[0], tip[1] - target[1], tip[2] - target[2]


@register_jitable
def split(mode: int, knots, coef, g0, mu_limit: float, target, hub_ref, rot, g_body,  # noqa: ANN001
          tol: float, work, out) -> None:
    """The split law: from a tip target to the hub target and the bend.

    Args:
        mode: :data:`VEHICLE`, :data:`ARM` or :data:`COORDINATED`.
        knots, coef, g0: the map's arrays (:class:`TipMap`).
        mu_limit: the largest bend the arm may take (at most the map's ``mu_cap``).
        target: the tip target (3,), world, m.
        hub_ref: the hub's reference (3,), world, m (the position the hub holds in ``arm``
            mode and moves from in ``coordinated`` mode).
        rot: the hub's attitude (3, 3), body to world.
        g_body: the apparent gravity in the hub frame (3,), m/s^2 (:func:`apparent_gravity`).
        tol: ``arm`` mode's workspace tolerance (m).
        work: scratch (3, 12).
        out: (7,): hub target (3, world, m), mu, beta (rad), in-workspace flag (1.0 or 0.0,
            always 1.0 except in ``arm`` mode), and the tip's predicted miss |residual| (m:
            zero except in ``arm`` mode).
    """
    d0 = target[0] - hub_ref[0]
    d1 = target[1] - hub_ref[1]
    d2 = target[2] - hub_ref[2]
    # The target in the hub frame: R^T d.
    b = np.empty(3)
    for i in range(3):
        b[i] = rot[0, i] * d0 + rot[1, i] * d1 + rot[2, i] * d2
    res = np.empty(5)
    tip = np.empty(3)
    if mode == VEHICLE:
        mu, beta = 0.0, 0.0
        tip_body(knots, coef, g0, 0.0, 0.0, g_body, work, tip)
    else:
        closest_bend(knots, coef, g0, b, g_body, mu_limit, work, res)
        mu, beta = res[0], res[1]
        tip[0], tip[1], tip[2] = res[2] + b[0], res[3] + b[1], res[4] + b[2]
    miss = 0.0
    flag = 1.0
    if mode == ARM:
        for i in range(3):
            out[i] = hub_ref[i]
        miss = math.sqrt(res[2] * res[2] + res[3] * res[3] + res[4] * res[4])
        flag = 1.0 if miss <= tol else 0.0
    else:
        if mode == COORDINATED:
            # The straight arm is a candidate too: never move the hub more than vehicle mode.
            straight = np.empty(3)
            tip_body(knots, coef, g0, 0.0, 0.0, g_body, work, straight)
            e_bent = (tip[0] - b[0]) ** 2 + (tip[1] - b[1]) ** 2 + (tip[2] - b[2]) ** 2
            e_str = ((straight[0] - b[0]) ** 2 + (straight[1] - b[1]) ** 2
                     + (straight[2] - b[2]) ** 2)
            if e_str < e_bent:
                mu, beta = 0.0, 0.0
                tip[0], tip[1], tip[2] = straight[0], straight[1], straight[2]
        # hub = target - R tip: the hub carries the tip onto the target.
        for i in range(3):
            out[i] = target[i] - (rot[i, 0] * tip[0] + rot[i, 1] * tip[1] + rot[i, 2] * tip[2])
    out[3], out[4], out[5], out[6] = mu, beta, flag, miss


@register_jitable
def apparent_gravity(rot, acc, gravity, out) -> None:  # noqa: ANN001
    """g_B = R^T (g - a) (m/s^2, hub frame) into ``out`` (3,): what the quasi-static arm
    feels when its hub, at attitude ``rot`` (3, 3, body to world), accelerates at ``acc``
    (3, world, m/s^2) under ``gravity`` (3, world, m/s^2)."""
    a0, a1, a2 = gravity[0] - acc[0], gravity[1] - acc[1], gravity[2] - acc[2]
    for i in range(3):
        out[i] = rot[0, i] * a0 + rot[1, i] * a1 + rot[2, i] * a2


@register_jitable
def planned_attitude(acc, yaw: float, gravity, out) -> None:  # noqa: ANN001
    """The attitude (3, 3, body to world) into ``out`` that the geometric controller commands
    for the acceleration ``acc`` (3, world, m/s^2) at heading ``yaw`` (rad): b3 along
    a - g, b1 the heading projected (docs/model.md section 2). With it, :func:`apparent_gravity`
    is (0, 0, -|a - g|): a tracking vehicle leans into its acceleration, so its arm sees
    gravity along its own axis and only the magnitude changes."""
    f0, f1, f2 = acc[0] - gravity[0], acc[1] - gravity[1], acc[2] - gravity[2]
    n = math.sqrt(f0 * f0 + f1 * f1 + f2 * f2)
    z0, z1, z2 = f0 / n, f1 / n, f2 / n
    c0, c1 = math.cos(yaw), math.sin(yaw)
    # b2 = b3 x b1c, normalised; b1 = b2 x b3.
    y0, y1, y2 = -z2 * c1, z2 * c0, z0 * c1 - z1 * c0
    m = math.sqrt(y0 * y0 + y1 * y1 + y2 * y2)
    y0, y1, y2 = y0 / m, y1 / m, y2 / m
    x0, x1, x2 = y1 * z2 - y2 * z1, y2 * z0 - y0 * z2, y0 * z1 - y1 * z0
    out[0, 0], out[1, 0], out[2, 0] = x0, x1, x2
    out[0, 1], out[1, 1], out[2, 1] = y0, y1, y2
    out[0, 2], out[1, 2], out[2, 2] = z0, z1, z2


@register_jitable
def split_path(mode: int, knots, coef, g0, mu_limit: float, targets, hubs, rots, g_bodies,  # noqa: ANN001
               tol: float, out) -> None:
    """:func:`split` for every sample of a planned path: ``targets``, ``hubs`` (n, 3),
    ``rots`` (n, 3, 3), ``g_bodies`` (n, 3) into ``out`` (n, 7). The planner's loop; the
    runner may hand a numba-compiled copy to :meth:`TipMap.plan`."""
    work = np.empty((3, coef.shape[2]))
    row = np.empty(7)
    for k in range(targets.shape[0]):
        split(mode, knots, coef, g0, mu_limit, targets[k], hubs[k], rots[k], g_bodies[k], tol,
              work, row)
        for i in range(7):
            out[k, i] = row[i]

