"""What every scenario shares: the plan an episode executes and the log it returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from quadarm.control.trajectory import Reference

if TYPE_CHECKING:
    from quadarm.config import Config
    from quadarm.model import BuiltModel

Metric = tuple[str, str, float]  # (phase, metric, value)


@dataclass(frozen=True)
class Pulse:
    """A constant world-frame force (N), (3,), on a body's centre of mass for steps
    [start, stop)."""

    body: int
    force: np.ndarray
    start: int
    stop: int


@dataclass(frozen=True)
class Plan:
    """Everything an episode needs, sampled at t_k = k dt for k = 0..n (n + 1 samples).

    ``tensions`` (n + 1, 3) are tendon commands (N) or None for slack tendons. ``tip``
    (n + 1, 3): the tip's world target (m) of the tip-space scenarios (``control.tip_gain``
    feeds back its error), None for the others. ``events``: (sample k, ``"grasp"`` or
    ``"release"``) switches of the payload weld before step k (the ``payload`` scenario), or
    ``"capture"``: a grasp only if the tip is within ``capture_radius`` (m) of the payload's
    centre plus ``grasp_offset`` (m, world) and it is not held yet (``pick_place``).
    ``bend`` (n + 1, 8): with ``control.tip_bend``, the planned Cartesian bend (u, v) and the
    world tip Jacobian d tip / d(u, v) (3 x 2, row-major, m) the feedback's bend correction
    reads (:func:`quadarm.scenarios.tip.bend_rows`), None otherwise; ``bend_mu_max`` the
    largest bend the correction may command (the map's workspace edge). ``yaw`` (n + 1,)
    rad: a heading reference the flight controller follows (``scenario=replay``'s
    ``yaw_ref``), None for the others (the law's fixed heading).
    """

    t: np.ndarray
    ref: Reference
    start: np.ndarray  # (3,) initial hub position, m
    tensions: np.ndarray | None = None
    pulses: tuple[Pulse, ...] = ()
    phases: dict[str, tuple[float, float]] = field(default_factory=dict)
    tip: np.ndarray | None = None
    events: tuple[tuple[int, str], ...] = ()
    capture_radius: float = 0.0
    grasp_offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    # > 0: a capture checks the closed weld's step and stiffens it down to this time constant
    # (s) if it grows (quadarm.model.world.steady_weld); 0: the weld as built.
    weld_floor: float = 0.0
    # With weld_floor: the check asks the trial's closed loop (a look-ahead of the loop that
    # flies it, quadarm.model.world.closed_growth), not the step with the commands held.
    weld_closed: bool = False
    bend: np.ndarray | None = None
    bend_mu_max: float = 1.0
    yaw: np.ndarray | None = None  # (n + 1,) rad: the heading reference (None: the law's own)
    # (4,) the vehicle's attitude quaternion (w, x, y, z) at the start (scenario=replay's
    # logged one); None: level, heading 0, as every other trial starts.
    attitude: np.ndarray | None = None
    # (n_arm_q,) the arm's joint positions at the start, after the vehicle's 7 (scenario=replay's
    # settled start, scenario.start_shape); None: the keyframe's straight arm.
    arm_qpos: np.ndarray | None = None

    @property
    def steps(self) -> int:
        return len(self.t) - 1


@dataclass
class Log:
    """Signals at every sample t_k (row k): state and the commands computed from it.

    Shapes: t (n+1,), qpos (n+1, nq), qvel (n+1, nv), tip (n+1, 3) world tip-site position,
    ctrl (n+1, nu). ``rotor_ids``/``tendon_ids`` index the ctrl columns. With world objects,
    ``contact`` (n+1, n_objects, 5): per object the number of contacts with the arm, the net
    force (N, world frame) it exerts on the arm, the number of contacts with the airframe
    (:mod:`quadarm.runner.contact`); for the touch task ``force`` (n+1, 6): the force loop's
    phase (0 approach, 1 hold, 2 withdraw), setpoint (N), measured normal force (N) and the
    reference it gave the law (m, (3,)). None otherwise.
    """

    t: np.ndarray
    qpos: np.ndarray
    qvel: np.ndarray
    tip: np.ndarray
    ctrl: np.ndarray
    rotor_ids: np.ndarray
    tendon_ids: np.ndarray
    contact: np.ndarray | None = None
    force: np.ndarray | None = None
    # With sensing (not exact): (n+1, 15) the controllers' estimates, the vehicle's qpos (7)
    # and qvel (6), then the shape estimate's tip and largest errors along the arm (m).
    est: np.ndarray | None = None
    # With servo-driven tendons (arm.actuation=displacement, whose ctrl columns are length
    # commands in m): (n+1, n_tendons) the tension (N, >= 0) each tendon held during step k
    # (the last row repeats the last step's). None with force-driven tendons (ctrl is the
    # tension).
    tension: np.ndarray | None = None
    # With the servo model (arm.servo): (n+1, n_tendons, 2) each servo's travel (m, the pull
    # r theta of its horn, the commands' unit) and the load torque on its horn (N m, spool
    # lever x tension); quadarm.model.servo's L_TRAVEL, L_TORQUE. None otherwise.
    servo: np.ndarray | None = None

    @property
    def position(self) -> np.ndarray:
        return self.qpos[:, :3]

    def rotation(self) -> np.ndarray:
        """Body-to-world rotation matrices, (n+1, 3, 3)."""
        return quat_to_mat(self.qpos[:, 3:7])

    def tilt_deg(self) -> np.ndarray:
        """Angle between body z and world z (deg), (n+1,)."""
        qx, qy = self.qpos[:, 4], self.qpos[:, 5]
        return np.degrees(np.arccos(np.clip(1.0 - 2.0 * (qx * qx + qy * qy), -1.0, 1.0)))

    def tip_lateral(self) -> np.ndarray:
        """World-horizontal distance from hub to tip (m), (n+1,)."""
        d = self.tip[:, :2] - self.position[:, :2]
        return np.hypot(d[:, 0], d[:, 1])

    def tip_body(self) -> np.ndarray:
        """Tip position relative to the hub in the body frame (m), (n+1, 3)."""
        rel = self.tip - self.position
        return np.einsum("nji,nj->ni", self.rotation(), rel)

    def tensions(self) -> np.ndarray:
        """The tendons' tensions (N), (n+1, n_tendons), in either drive: the commands of
        force-driven tendons, the logged tensions of servo-driven ones."""
        if self.tension is not None:
            return self.tension
        return self.ctrl[:, self.tendon_ids]

    def truncated(self, rows: int) -> Log:
        return Log(self.t[:rows], self.qpos[:rows], self.qvel[:rows], self.tip[:rows],
                   self.ctrl[:rows], self.rotor_ids, self.tendon_ids,
                   None if self.contact is None else self.contact[:rows],
                   None if self.force is None else self.force[:rows],
                   None if self.est is None else self.est[:rows],
                   None if self.tension is None else self.tension[:rows],
                   None if self.servo is None else self.servo[:rows])


def quat_to_mat(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) from unit quaternions (..., 4) in (w, x, y, z) order."""
    w, x, y, z = np.moveaxis(np.asarray(q, dtype=float), -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def times(duration: float, dt: float) -> np.ndarray:
    """Sample times 0, dt, ..., n dt with n = round(duration / dt)."""
    n = int(round(duration / dt))
    return np.arange(n + 1) * dt


def error_m(log: Log, plan: Plan) -> np.ndarray:
    """Position error norm |p_d - p| (m), (n+1,)."""
    return np.linalg.norm(plan.ref.p[: len(log.t)] - log.position, axis=1)


def tracking_metrics(log: Log, plan: Plan, phase: str, mask: np.ndarray) -> list[Metric]:
    """Table II's statistics over the samples in ``mask``."""
    if not mask.any():
        return []
    e = error_m(log, plan)[mask] * 100.0
    u = log.ctrl[mask][:, log.rotor_ids]
    return [
        (phase, "rms_cm", float(np.sqrt(np.mean(e * e)))),
        (phase, "max_cm", float(e.max())),
        (phase, "tilt_max_deg", float(log.tilt_deg()[mask].max())),
        (phase, "tip_lateral_max_cm", float(log.tip_lateral()[mask].max() * 100.0)),
        (phase, "thrust_min_n", float(u.min())),
        (phase, "thrust_max_n", float(u.max())),
    ]


@runtime_checkable
class Scenario(Protocol):
    """What a scenario module provides (``quadarm/scenarios/<kind>.py``)."""

    def plan(self, cfg: Config, built: BuiltModel) -> Plan:
        """What to fly: the reference, tendon commands and force pulses, sampled every
        ``sim.timestep`` over ``scenario.duration``."""
        ...

    def metrics(self, cfg: Config, plan: Plan, log: Log) -> list[Metric]:
        """What to report from a finished log: (phase, metric, value) triples."""
        ...
