"""The sensing term of the step seam: sensors, the vehicle's EKF and the arm-shape estimator,
run at every sample when ``sensing`` is not ``exact``; the controllers then read the estimates.

:func:`sense_term` (sample k of simulation i, before the feed-forward and the law) samples the
truth, passes each sensor's channel (:func:`quadarm.sensing.sensors.channel_step`: pre-drawn
noise and bias, quantisation, latency), runs the error-state EKF
(:mod:`quadarm.sensing.ekf`: the delivered IMU sample propagates, then a delivered position
fix updates at its stamp) and, when an encoder sample arrives, one Gauss-Newton step of the
shape fit (:func:`quadarm.sensing.shape.estimate`, quasi-static table, tendon lengths). It
writes the estimated ``qpos`` (vehicle pose from the EKF, hinge angles from the shape) and
``qvel`` (EKF velocity, gyro less its estimated bias, hinge rates as the difference of two
shape estimates) and a copy of ``sensordata`` whose flange force/torque is the sensor's: what
the law, ``control.feedforward`` and ``control.tendon_damping`` read instead of the truth
(:func:`quadarm.runner.step.before`). The tip tracker's delivered sample is kept in
``SenseState.tip`` for a tip-space controller.

Conventions that make the ``ideal`` preset (every error zero, no latency) give estimates equal
to the simulated state (docs/sensing.md, "In the loop"): the IMU sample taken at step s holds
the body rate at s and the specific force of the last IMU period, (v_s - v_prev) / T - g,
resolved in the body axes at its start; the EKF integrates position semi-implicitly, as MuJoCo
does (``ekf.E_SEMI``); the filter starts at the known start pose with zero bias estimates.

Noise: :func:`quadarm.sensing.noise.draw` from the trial's seed, so every engine and backend
sees the same numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from quadarm.control.tendons import tensions as allocate
from quadarm.model import build, names
from quadarm.runner import jit
from quadarm.runner.lifecycle import Prepared
from quadarm.sensing import ekf, noise, sensors, shape
from quadarm.sensing.config import SensingConfig

channel_step = jit.inline(sensors.channel_step)
ekf_predict = jit.inline(ekf.ekf_predict)
ekf_fix = jit.inline(ekf.ekf_fix)
shape_estimate = jit.inline(shape.estimate)
shape_forward = jit.inline(shape.forward)
shape_points = jit.inline(shape.points)
jit.inline(ekf.propagate)
jit.inline(ekf.update_position)

SENSORS = ("imu", "position", "encoder", "force_torque", "tip")
IMU, POS, ENC, FT, TIP = range(5)
N_ERR = 2  # logged shape errors: tip (m), the largest along the arm (m)
N_LOG = 7 + 6 + N_ERR  # a logged estimate row: qpos (7), qvel (6) of the vehicle, shape errors
SHAPE_ITERS = 1  # Gauss-Newton steps per encoder sample, warm-started (tracks a moving arm)


class Sense(NamedTuple):
    """What a batch's sensing configs fix (nsim leading axis). ``on`` (nsim,) bool; ``ch``
    (nsim, 5, N_CHANNEL) the channels' period, delay, capacity and quantum; per sensor the
    pre-drawn white noise and bias (nsim, n_samples, dim); ``ekf`` (nsim, N_EKF); the shape
    model ``sp`` (nsim, n_sp), quasi-static table ``tab`` (nsim, rows, 1 + N), ``prof`` (0, 1),
    weights ``wts`` (nsim, 2); hinge ``hq``/``hv`` (2 N,) qpos/qvel addresses; flange sensor
    addresses ``ft_adr`` (2,) (-1: none); the tip site and the vehicle's gravity (3,)."""

    on: np.ndarray
    ch: np.ndarray
    imu_w: np.ndarray
    imu_b: np.ndarray
    pos_w: np.ndarray
    pos_b: np.ndarray
    enc_w: np.ndarray
    enc_b: np.ndarray
    ft_w: np.ndarray
    ft_b: np.ndarray
    tip_w: np.ndarray
    tip_b: np.ndarray
    ekf: np.ndarray
    sp: np.ndarray
    tab: np.ndarray
    prof: np.ndarray
    wts: np.ndarray
    hq: np.ndarray
    hv: np.ndarray
    ft_adr: np.ndarray
    tip_site: int
    start: np.ndarray
    sig0: np.ndarray
    caps: np.ndarray
    n_links: int


class SenseState(NamedTuple):
    """Per-trial memory (nsim leading axis): the channels' rings and last deliveries, the
    truth scratch, the previous IMU sample's velocity and attitude ``prev`` (7,), the EKF's
    state, covariance, ring, epoch and scratch, the estimates ``q`` (nq,), ``v`` (nv,),
    ``sd`` (nsensordata,), the shape fit's coefficients, hinge angles (current, previous, true)
    and scratch, and the last shape errors ``err`` (N_ERR,) m."""

    imu_r: np.ndarray
    pos_r: np.ndarray
    enc_r: np.ndarray
    ft_r: np.ndarray
    tip_r: np.ndarray
    imu: np.ndarray
    pos: np.ndarray
    enc: np.ndarray
    ft: np.ndarray
    tip: np.ndarray
    truth: np.ndarray
    prev: np.ndarray
    x: np.ndarray
    p: np.ndarray
    ring: np.ndarray
    meta: np.ndarray
    work: np.ndarray
    q: np.ndarray
    v: np.ndarray
    sd: np.ndarray
    c: np.ndarray
    th: np.ndarray
    th_prev: np.ndarray
    th_true: np.ndarray
    swork: np.ndarray
    sscratch: np.ndarray
    meas: np.ndarray
    out: np.ndarray
    pts: np.ndarray
    pts_true: np.ndarray
    err: np.ndarray


# --------------------------------------------------------------------------------------------
# The term
# --------------------------------------------------------------------------------------------


@jit.inline
def imu_truth(sn: Sense, ss: SenseState, i: int, k: int, qpos: Any, qvel: Any) -> None:
    """The IMU's true sample at step k into ``ss.truth[i]``: body rate, then the specific
    force of the last IMU period resolved at its start; ``prev`` moves on at sample steps."""
    t, pv = ss.truth[i], ss.prev[i]
    period = int(sn.ch[i, IMU, sensors.CH_PERIOD])
    dt = sn.ekf[i, ekf.E_DT]
    for j in range(3):
        t[j] = qvel[3 + j]
    if k == 0:
        for j in range(3):
            pv[j] = qvel[j]
        for j in range(4):
            pv[3 + j] = qpos[3 + j]
    g, f = sn.ekf[i], t[3:6]
    for j in range(3):  # the mean acceleration over the period, then what the IMU reads of it
        f[j] = (qvel[j] - pv[j]) / dt
    # pv holds the period's start attitude where a qpos holds it (3:7)
    sensors.specific_force(pv, f, g[ekf.E_GX], g[ekf.E_GY], g[ekf.E_GZ], f)
    if k % period == 0:
        for j in range(3):
            pv[j] = qvel[j]
        for j in range(4):
            pv[3 + j] = qpos[3 + j]


@jit.inline
def vehicle_term(k: int, sn: Sense, ss: SenseState, i: int, qpos: Any, qvel: Any) -> None:
    """IMU and position channels, the EKF, and the vehicle's estimated qpos/qvel."""
    imu_truth(sn, ss, i, k, qpos, qvel)
    u = ss.imu[i]
    ki = channel_step(k, ss.truth[i], sn.imu_w[i], sn.imu_b[i], ss.imu_r[i], sn.ch[i, IMU], u)
    x = ss.x[i]
    if ki > 0:  # sample 0 closes no interval: the filter starts at step 0's state
        ekf_predict(x, ss.p[i], ss.ring[i], ss.meta[i], sn.ekf[i], u, ss.work[i])
    z = ss.pos[i]
    kp = channel_step(k, qpos, sn.pos_w[i], sn.pos_b[i], ss.pos_r[i], sn.ch[i, POS], z)
    if kp >= 0:
        stamp = kp * int(sn.ch[i, POS, sensors.CH_PERIOD])
        epoch = stamp // int(sn.ch[i, IMU, sensors.CH_PERIOD])
        ekf_fix(x, ss.p[i], ss.ring[i], ss.meta[i], sn.ekf[i], z, epoch, ss.work[i])
    q, v = ss.q[i], ss.v[i]
    for j in range(3):
        q[j] = x[ekf.XP + j]
        v[j] = x[ekf.XV + j]
        v[3 + j] = u[j] - x[ekf.XBG + j]
    for j in range(4):
        q[3 + j] = x[ekf.XQ + j]


@jit.inline
def arm_term(k: int, sn: Sense, ss: SenseState, i: int, qpos: Any, t_cmd: Any,
             sensordata: Any, tip: Any, record: bool) -> None:
    """Encoders and the shape fit, the flange force/torque sensor and the tip tracker."""
    sp, th_true, out, work = sn.sp[i], ss.th_true[i], ss.out[i], ss.swork[i]
    hq, hv = sn.hq, sn.hv
    for j in range(hq.shape[0]):
        th_true[j] = qpos[hq[j]]
    enc = ss.enc[i]
    due = k % int(sn.ch[i, ENC, sensors.CH_PERIOD]) == 0
    if due:
        shape_forward(sp, th_true, work, out)  # the true tendon lengths (MuJoCo's, to 1e-13)
        if record:
            shape_points(sp, work, ss.pts_true[i])
    ke = channel_step(k, out, sn.enc_w[i], sn.enc_b[i], ss.enc_r[i], sn.ch[i, ENC], enc)
    q, v, th, thp = ss.q[i], ss.v[i], ss.th[i], ss.th_prev[i]
    if ke >= 0:
        meas = ss.meas[i]
        for j in range(3):
            meas[j] = enc[j]
            meas[9 + j] = t_cmd[j]
        for j in range(th.shape[0]):
            thp[j] = th[j]
        shape_estimate(sp, sn.tab[i], sn.prof, meas, sn.wts[i], SHAPE_ITERS, ss.c[i], th,
                       work, ss.sscratch[i])
        period_s = int(sn.ch[i, ENC, sensors.CH_PERIOD]) * sn.ekf[i, ekf.E_DT] \
            / int(sn.ch[i, IMU, sensors.CH_PERIOD])
        first = ke == 0
        for j in range(hq.shape[0]):
            q[hq[j]] = th[j]
            v[hv[j]] = 0.0 if first else (th[j] - thp[j]) / period_s
        if record:
            pts, pt = ss.pts[i], ss.pts_true[i]
            shape_points(sp, work, pts)
            worst, last = 0.0, 0.0
            for r in range(pts.shape[0]):
                dx, dy, dz = pts[r, 0] - pt[r, 0], pts[r, 1] - pt[r, 1], pts[r, 2] - pt[r, 2]
                last = (dx * dx + dy * dy + dz * dz) ** 0.5
                worst = max(worst, last)
            ss.err[i, 0], ss.err[i, 1] = last, worst
    sd = ss.sd[i]
    for j in range(sd.shape[0]):
        sd[j] = sensordata[j]
    af, at = sn.ft_adr[0], sn.ft_adr[1]
    if af >= 0:
        tr, ft = ss.truth[i], ss.ft[i]
        for j in range(3):
            tr[j] = sensordata[af + j]
            tr[3 + j] = sensordata[at + j]
        channel_step(k, tr, sn.ft_w[i], sn.ft_b[i], ss.ft_r[i], sn.ch[i, FT], ft)
        for j in range(3):
            sd[af + j] = ft[j]
            sd[at + j] = ft[3 + j]
    channel_step(k, tip, sn.tip_w[i], sn.tip_b[i], ss.tip_r[i], sn.ch[i, TIP], ss.tip[i])


@jit.inline
def sense_term(k: int, sn: Sense, ss: SenseState, i: int, qpos: Any, qvel: Any, t_cmd: Any,
               sensordata: Any, tip: Any, record: bool) -> None:
    """Sample k of simulation i: every sensor and estimator; the estimates into ``ss.q``,
    ``ss.v``, ``ss.sd`` (``t_cmd`` (3,) N: the tendon tensions last commanded, known to the
    controller; ``tip`` (3,) the world tip site)."""
    vehicle_term(k, sn, ss, i, qpos, qvel)
    arm_term(k, sn, ss, i, qpos, t_cmd, sensordata, tip, record)


# --------------------------------------------------------------------------------------------
# Building the records
# --------------------------------------------------------------------------------------------


_TABLES: dict[str, np.ndarray] = {}


def _table(p: Prepared) -> np.ndarray:
    """The quasi-static shape table of the trial's arm (:func:`shape.quasi_static_table`,
    its fixed-base build; cached per arm, airframe, sim and tendon map)."""
    cfg = p.cfg
    key = repr((cfg.arm, cfg.airframe, cfg.sim, cfg.control.tendon_map))
    if key not in _TABLES:
        fixed = build(cfg.airframe, cfg.arm, cfg.sim, fixed_base=True)
        phi = np.radians(cfg.arm.tendon_angles_deg)
        _TABLES[key] = shape.quasi_static_table(
            fixed.model, fixed.tendon_actuators,
            lambda mu: allocate(mu, 0.0, phi, cfg.arm.tension_max, cfg.control.tendon_map))
    return _TABLES[key]


def _pad3(rows: list[np.ndarray], dim: int) -> np.ndarray:
    n = max([len(r) for r in rows] + [1])
    out = np.zeros((len(rows), n, dim))
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


def records(preps: Sequence[Prepared], held: bool) -> Sense:
    """The :class:`Sense` of ``preps`` (off for ``exact`` trials and ``held`` loops: small
    inert arrays)."""
    ns = len(preps)
    on = np.array([not held and not p.cfg.sensing.exact for p in preps])
    m = preps[0].built.model
    n_links = preps[0].cfg.arm.segments if on.any() else 0
    if on.any() and m.nq != 7 + 2 * n_links:
        raise ValueError(f"sensing={preps[0].cfg.sensing.preset}: the estimator covers the "
                         "free-flying vehicle and its 2-hinge links only")
    chans = []
    for p, o in zip(preps, on, strict=True):
        cfg = p.cfg.sensing if o else SensingConfig(preset="ideal")
        dur = p.plan.steps * m.opt.timestep if o else 0.0
        chans.append(noise.draw(cfg, p.cfg.seed, dur, m.opt.timestep))
    ch = np.stack([np.stack([c[n].prm for n in SENSORS]) for c in chans])
    arrays: list[np.ndarray] = []
    for n in SENSORS:
        dim = noise.DIMS[n]
        arrays += [_pad3([c[n].white for c in chans], dim), _pad3([c[n].bias for c in chans], dim)]
    g = m.opt.gravity
    grav = (float(g[0]), float(g[1]), float(g[2]))
    eprm = np.stack([ekf.ekf_params(p.cfg.sensing, m.opt.timestep, grav, semi_implicit=True)
                     for p in preps])
    if on.any():
        sp = np.stack([shape.shape_params(p.built.model) for p in preps])
        tab = np.stack([_table(p) for p in preps])
        hq = shape.hinge_qpos(m, n_links)
        hv = np.array([m.jnt_dofadr[m.joint(names.link_joint(k, a)).id]
                       for k in range(n_links) for a in "xy"], dtype=np.int64)
    else:
        sp, tab = np.zeros((ns, 1)), np.zeros((ns, 2, 2))
        hq = hv = np.zeros(0, dtype=np.int64)
    wts = np.zeros((ns, 2))
    for i, p in enumerate(preps):
        e = p.cfg.sensing.encoder
        wts[i, 0] = 1.0 / max((e.noise ** 2 + e.resolution ** 2 / 12.0) ** 0.5, 1e-9)
    b0 = preps[0].built
    ft_adr = np.array([b0.flange_force_adr, b0.flange_torque_adr], dtype=np.int64)
    if ft_adr.min() < 0:
        ft_adr[:] = -1
    caps = np.array([int(ch[:, j, sensors.CH_CAP].max()) for j in range(5)]
                    + [max(ekf.ring_capacity(p.cfg.sensing, m.opt.timestep) for p in preps)],
                    dtype=np.int64)
    start = np.array([p.plan.start for p in preps], dtype=float)
    sig0 = np.stack([ekf.initial_sigma(p.cfg.sensing) for p in preps])
    return Sense._make([on, ch, *arrays, eprm, sp, tab, shape.NO_PROFILE, wts, hq, hv, ft_adr,
                        int(b0.tip_site), start, sig0, caps, n_links])


def state(sn: Sense, nq: int, nv: int, nsd: int) -> SenseState:
    """Zeroed memory for ``sn``'s trials (nq, nv: the model's sizes; nsd its sensordata).
    The filter starts at the known start pose (level, at rest) with zero bias estimates and
    the covariance diag(``sig0``^2)."""
    z = np.zeros
    ns = len(sn.on)
    x = z((ns, ekf.NX))
    x[:, ekf.XP:ekf.XP + 3] = sn.start
    x[:, ekf.XQ] = 1.0
    pm = z((ns, ekf.NP))
    for j in range(ekf.NE):
        pm[:, j * ekf.NE + j] = sn.sig0[:, j] ** 2
    q0 = z((ns, nq))
    q0[:, :3] = sn.start
    q0[:, 3] = 1.0
    nh, nl = sn.hq.size, max(sn.n_links, 1)
    caps = [int(c) for c in sn.caps]
    return SenseState._make([
        *(z((ns, caps[j], noise.DIMS[n])) for j, n in enumerate(SENSORS)),
        *(z((ns, noise.DIMS[n])) for n in SENSORS),
        z((ns, 6)), z((ns, 7)), x, pm, z((ns, caps[5], ekf.R_STRIDE)), z((ns, 1)),
        z((ns, ekf.WORK)), q0, z((ns, nv)), z((ns, nsd)), z((ns, 2)), z((ns, nh)),
        z((ns, nh)), z((ns, nh)), z((ns, shape.W_STRIDE * nl)),
        z((ns, shape.scratch_size(0, table=True))), z((ns, 12)), z((ns, shape.N_OUT)),
        z((ns, nl, 3)), z((ns, nl, 3)), z((ns, N_ERR))])


@jit.inline
def log_estimate(ss: SenseState, i: int, row: Any) -> None:
    """The logged estimate of simulation i into ``row`` (N_LOG,): the vehicle's estimated
    qpos (7) and qvel (6), then the last shape errors (m): tip, largest along the arm."""
    q, v, e = ss.q[i], ss.v[i], ss.err[i]
    for j in range(7):
        row[j] = q[j]
    for j in range(6):
        row[7 + j] = v[j]
    for j in range(N_ERR):
        row[13 + j] = e[j]
