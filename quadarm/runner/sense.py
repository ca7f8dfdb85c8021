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

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import mujoco
import numpy as np

from quadarm.config.sections import SectionArmConfig
from quadarm.control.tendons import tensions as allocate
from quadarm.model import build, names
from quadarm.runner import jit
from quadarm.runner.lifecycle import Prepared
from quadarm.scenarios import drive
from quadarm.sensing import armfilter, ekf, modelerror, noise, sensors, shape
from quadarm.sensing.config import (
    SHAPE_TABLE_DIRECTIONS,
    ArmImuConfig,
    SensingConfig,
    arm_imu_links,
    period_of,
    steps_of,
)

channel_step = jit.inline(sensors.channel_step)
ekf_predict = jit.inline(ekf.ekf_predict)
ekf_fix = jit.inline(ekf.ekf_fix)
shape_estimate = jit.inline(shape.estimate)
shape_forward = jit.inline(shape.forward)
shape_points = jit.inline(shape.points)
jit.inline(ekf.propagate)
jit.inline(ekf.update_position)
jit.inline(ekf.align)
jit.inline(ekf.covariance)
arm_imu_truth = jit.inline(armfilter.imu_truth)
arm_imu_posed = jit.inline(armfilter.imu_truth_posed)
arm_predict = jit.inline(armfilter.predict)
arm_measure = jit.inline(armfilter.measure)
arm_update = jit.inline(armfilter.update)
arm_still = jit.inline(armfilter.still)
arm_hinges = jit.inline(armfilter.hinge_angles)
arm_tip_stats = jit.inline(armfilter.tip_stats)
jit.inline(armfilter.across_nees)
jit.inline(armfilter.listed_products)
jit.inline(armfilter.me_features)
jit.inline(armfilter.me_variances)
arm_model_error = jit.inline(armfilter.model_error)
jit.inline(armfilter.columns)
jit.inline(armfilter.velocities)
jit.inline(armfilter.site)
solve = jit.inline(shape._solve)

SENSORS = ("imu", "position", "encoder", "force_torque", "tip")
SHORT = ("imu", "pos", "enc", "ft", "tip")  # each sensor's prefix in Sense and SenseState
IMU, POS, ENC, FT, TIP = range(5)
N_ERR = 2  # logged shape errors: tip (m), the largest along the arm (m)
N_LOG = 7 + 6 + N_ERR  # a logged estimate row: qpos (7), qvel (6) of the vehicle, shape errors
# With ``sensing.uncertainty`` (or arm IMU samples asked for) the row goes on: the vehicle EKF's
# covariance diagonal (15: dp, dv (m, m/s), dtheta (rad), b_g, b_a), its NEES over position,
# velocity and attitude (9 degrees of freedom), the shape estimator's tip covariance (6: xx yy zz
# xy xz yz, m^2, vehicle axes) and its tip NEES (2 degrees of freedom: the error across the arm,
# armfilter.tip_stats; NaN without arm IMUs);
# then, with ``sensing.arm_imu.log``, each arm IMU's delivered sample (gyro, accel: 6 each).
U_PDIAG, U_NEES, U_TIP = N_LOG, N_LOG + ekf.NE, N_LOG + ekf.NE + 1
N_UNC = ekf.NE + 1 + armfilter.N_TIPLOG
U_SAMPLES = N_LOG + N_UNC
NEES_DOF = 9  # the vehicle NEES's error: position, velocity, attitude
SHAPE_ITERS = 1  # Gauss-Newton steps per encoder sample, warm-started (tracks a moving arm)


class Sense(NamedTuple):
    """What a batch's sensing configs fix (nsim leading axis). ``on`` (nsim,) bool; ``ch``
    (nsim, 5, N_CHANNEL) the channels' period, delay, capacity and quantum; per sensor the
    pre-drawn white noise and bias (nsim, n_samples, dim); ``ekf`` (nsim, N_EKF); the shape
    model ``sp`` (nsim, n_sp), quasi-static table ``tab`` (nsim, rows, 1 + N), ``prof`` (0, 1),
    weights ``wts`` (nsim, 2); hinge ``hq``/``hv`` (2 N,) qpos/qvel addresses; flange sensor
    addresses ``ft_adr`` (2,) (-1: none); the tip site; ``q0`` (nq,) the estimated qpos
    before any sample (:func:`quadarm.sensing.shape.initial_estimate`: the world's own
    coordinates, a free payload's, are not estimated and hold the model's ``qpos0``); the
    vehicle's start positions ``start`` (nsim, 3) m.
    The dynamic shape estimator (:mod:`quadarm.sensing.armfilter`, trials with arm IMUs:
    ``aon`` (nsim,) bool): ``unc``/``alog`` (nsim,) whether the filters' uncertainty and the
    arm IMU samples are logged; the arm IMUs' channel ``ach`` (nsim, N_CHANNEL), noise and bias
    ``ai_w``/``ai_b`` (nsim, n_samples, 6 n_imu), their links ``alinks`` (n_imu,); the
    filter's scalars ``af`` (nsim, N_AF), swing modes ``aphi`` (nsim, 2 N, M), transition
    ``afm`` (nsim, n_x, n_x), input ``agm`` (nsim, n_x, 2), process noise ``aqm``
    (nsim, n_x, n_x), model accelerations ``acdd`` (nsim, n_c, n_x + 2) and initial standard
    deviations ``asig`` (nsim, n_x)."""

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
    q0: np.ndarray
    start: np.ndarray
    sig0: np.ndarray
    caps: np.ndarray
    n_links: int
    aon: np.ndarray
    unc: np.ndarray
    alog: np.ndarray
    ach: np.ndarray
    ai_w: np.ndarray
    ai_b: np.ndarray
    alinks: np.ndarray
    af: np.ndarray
    aphi: np.ndarray
    afm: np.ndarray
    agm: np.ndarray
    aqm: np.ndarray
    acdd: np.ndarray
    asig: np.ndarray
    ame: np.ndarray


class SenseState(NamedTuple):
    """Per-trial memory (nsim leading axis): the channels' rings and last deliveries, the
    truth scratch, the previous IMU sample's velocity and attitude ``prev`` (7,), the EKF's
    state, covariance, ring, epoch and scratch, the estimates ``q`` (nq,), ``v`` (nv,),
    ``sd`` (nsensordata,), the shape fit's coefficients, hinge angles (current, previous, true)
    and scratch, and the last shape errors ``err`` (N_ERR,) m. The arm IMUs' ring, delivered
    sample ``ai`` and truth (6 n_imu,), the last sample's site velocities and rotations
    ``ai_prev`` (n_imu, 12); the dynamic estimator's state ``ax`` (n_x,), covariance ``ap``
    (n_x^2,), measurements and scratch; its tip covariance and NEES ``astat`` (N_TIPLOG,); the
    vehicle NEES ``vnees`` (1,) and its scratch."""

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
    ai_r: np.ndarray
    ai: np.ndarray
    ai_t: np.ndarray
    ai_prev: np.ndarray
    ax: np.ndarray
    ap: np.ndarray
    axb: np.ndarray
    apht: np.ndarray
    atmp: np.ndarray
    ahz: np.ndarray
    ahm: np.ndarray
    az: np.ndarray
    acol: np.ndarray
    actmp: np.ndarray
    akin: np.ndarray
    akinc: np.ndarray
    adl: np.ndarray
    adlc: np.ndarray
    atipv: np.ndarray
    atipc: np.ndarray
    athd: np.ndarray
    alv: np.ndarray
    astat: np.ndarray
    vnees: np.ndarray
    vwork: np.ndarray
    amef: np.ndarray


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
def vehicle_term(k: int, sn: Sense, ss: SenseState, i: int, qpos: Any, qvel: Any,
                 record: bool) -> None:
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
    if record and sn.unc[i]:
        vehicle_nees(ss, i, qpos, qvel)


@jit.inline
def vehicle_nees(ss: SenseState, i: int, qpos: Any, qvel: Any) -> None:
    """The EKF's NEES over position, velocity and attitude (9 degrees of freedom) into
    ``ss.vnees[i]``: e^T P_9^-1 e, e the true less the estimated (the attitude as the local
    rotation vector of q_est^-1 q_true), P_9 the covariance's first 9 x 9 block."""
    x, p, a = ss.x[i], ss.p[i], ss.vwork[i]
    e = a[NEES_DOF * (NEES_DOF + 1):]
    for j in range(3):
        e[j] = qpos[j] - x[ekf.XP + j]
        e[3 + j] = qvel[j] - x[ekf.XV + j]
    w, ex, ey, ez = ekf._qmul(x[ekf.XQ], -x[ekf.XQ + 1], -x[ekf.XQ + 2], -x[ekf.XQ + 3],
                              qpos[3], qpos[4], qpos[5], qpos[6])
    if w < 0.0:
        w, ex, ey, ez = -w, -ex, -ey, -ez
    nv = (ex * ex + ey * ey + ez * ez) ** 0.5
    sc = 2.0 * math.atan2(nv, w) / nv if nv > 0.0 else 2.0
    e[6], e[7], e[8] = ex * sc, ey * sc, ez * sc
    n = NEES_DOF
    for r in range(n):
        for c in range(n):
            a[r * (n + 1) + c] = p[r * ekf.NE + c]
        a[r * (n + 1) + n] = e[r]
    solve(a, n)
    v = 0.0
    for r in range(n):
        v += e[r] * a[r * (n + 1) + n]
    ss.vnees[i, 0] = v


@jit.inline
def arm_dynamic(k: int, sn: Sense, ss: SenseState, i: int, qvel: Any, qpos: Any,
                record: bool) -> None:
    """With arm IMUs: the encoders and the arm IMUs' channels, and at each delivered arm IMU
    sample one step of the dynamic shape estimator (:mod:`quadarm.sensing.armfilter`): predict
    over the IMU period, update on the tendon lengths and the IMUs; its hinge angles and rates
    into the estimated ``qpos``/``qvel``. ``ss.th_true[i]`` holds the true hinge angles."""
    sp, th_true, out, work = sn.sp[i], ss.th_true[i], ss.out[i], ss.swork[i]
    hq, hv = sn.hq, sn.hv
    enc = ss.enc[i]
    posed = k % int(sn.ch[i, ENC, sensors.CH_PERIOD]) == 0
    if posed:
        shape_forward(sp, th_true, work, out)  # the true tendon lengths
        if record:
            shape_points(sp, work, ss.pts_true[i])
    channel_step(k, out, sn.enc_w[i], sn.enc_b[i], ss.enc_r[i], sn.ch[i, ENC], enc)
    ach, af = sn.ach[i], sn.af[i]
    thd = ss.athd[i]
    if k % int(ach[sensors.CH_PERIOD]) == 0:
        for j in range(hv.shape[0]):
            thd[j] = qvel[hv[j]]
        g = sn.ekf[i]
        if posed:  # work holds the true pose already (read only since the forward above)
            arm_imu_posed(sp, thd, sn.alinks, qpos, qvel, g[ekf.E_GX], g[ekf.E_GY],
                          g[ekf.E_GZ], af[armfilter.F_R0:armfilter.F_R0 + 3], k == 0,
                          af[armfilter.F_DT], work, ss.akin[i], ss.adl[i], ss.atipv[i],
                          ss.ai_prev[i], ss.ai_t[i], ss.alv[i])
        else:
            arm_imu_truth(sp, th_true, thd, sn.alinks, qpos, qvel, g[ekf.E_GX], g[ekf.E_GY],
                          g[ekf.E_GZ], af[armfilter.F_R0:armfilter.F_R0 + 3], k == 0,
                          af[armfilter.F_DT], work, out, ss.akin[i], ss.adl[i], ss.atipv[i],
                          ss.ai_prev[i], ss.ai_t[i], ss.alv[i])
    ka = channel_step(k, ss.ai_t[i], sn.ai_w[i], sn.ai_b[i], ss.ai_r[i], ach, ss.ai[i])
    q, v, th = ss.q[i], ss.v[i], ss.th[i]
    x, p = ss.ax[i], ss.ap[i]
    if ka >= 0:
        nx = x.shape[0]
        xv, u = ss.x[i], ss.imu[i]
        ct = ss.actmp[i]
        nt = ct.shape[0]
        fv = ct[nt - 3:]  # the vehicle's bias-corrected specific force (m/s^2, body axes)
        wprev = ct[nt - 6:nt - 3]  # the vehicle's gyro at the last update (rad/s)
        uin = ct[nt - 10:nt - 6]  # the inputs: dg (m/s^2), dw (rad/s^2)
        for j in range(3):
            fv[j] = u[3 + j] - xv[ekf.XBA + j]
        wb = ss.v[i, 3:6]
        dt_f = af[armfilter.F_DT]
        dwx = 0.0 if ka == 0 else (u[0] - wprev[0]) / dt_f
        dwy = 0.0 if ka == 0 else (u[1] - wprev[1]) / dt_f
        dwz = 0.0 if ka == 0 else (u[2] - wprev[2]) / dt_f
        for j in range(3):
            wprev[j] = u[j]
        r0 = af[armfilter.F_R0:armfilter.F_R0 + 3]
        # The apparent gravity at hinge 0 less the hover's: -(f_v + dw x r_0), lateral.
        uin[0] = -fv[0] - (dwy * r0[2] - dwz * r0[1])
        uin[1] = -fv[1] - (dwz * r0[0] - dwx * r0[2])
        uin[2], uin[3] = dwx, dwy
        if ka == 0:
            for r in range(nx):
                x[r] = 0.0
                for c in range(nx):
                    p[r * nx + c] = 0.0
                p[r * nx + r] = sn.asig[i, r] * sn.asig[i, r]
        else:
            arm_predict(x, p, sn.afm[i], sn.agm[i], sn.aqm[i], uin, ss.atmp[i])
        z, ai = ss.az[i], ss.ai[i]
        nt = enc.shape[0]
        for j in range(nt):
            z[j] = enc[j]
        for j in range(ai.shape[0]):
            z[nt + j] = ai[j]
        arm_measure(sp, sn.tab[i], sn.prof, sn.aphi[i], sn.acdd[i], af, sn.alinks, x, wb, fv,
                    uin, th, work, out, ss.acol[i], ct, ss.akin[i], ss.akinc[i], ss.adl[i],
                    ss.adlc[i], ss.atipv[i], ss.atipc[i], ss.ahz[i], ss.ahm[i], ss.alv[i])
        still = k < af[armfilter.F_ALIGN]  # the alignment window: the arm hangs still
        arm_update(x, p, z, ss.ahz[i], ss.ahm[i], af, ss.axb[i], ss.apht[i], still)
        if still:
            arm_still(x, p, af, ss.apht[i])
        arm_hinges(sn.tab[i], sn.prof, sn.aphi[i], x, th)
        col = ss.acol[i]
        nc = col.shape[0]
        for j in range(hq.shape[0]):
            q[hq[j]] = th[j]
            rate = 0.0
            for c in range(nc):
                rate += col[c, j] * x[nc + c]
            v[hv[j]] = rate
        if record:
            shape_forward(sp, th, work, out)
            pts = ss.pts[i]
            shape_points(sp, work, pts)
            arm_tip_stats(p, ss.atipc[i], nc, pts[pts.shape[0] - 1],
                          ss.pts_true[i, pts.shape[0] - 1], ss.astat[i])
            me = sn.ame[i]
            if me[armfilter.ME_ON] > 0.0:  # the reported covariance adds the model error
                arm_model_error(me, x, p, th, wb, uin, int(af[armfilter.F_NB]), nc, still,
                                pts[pts.shape[0] - 1], ss.pts_true[i, pts.shape[0] - 1],
                                ss.astat[i], ss.amef[i])
    if record:
        shape_error(ss.pts[i], ss.pts_true[i], ss.err[i])


@jit.inline
def shape_error(pts: Any, pt: Any, err: Any) -> None:
    """The estimated shape's error against the true one: ``err[0]`` the tip point's distance
    (m), ``err[1]`` the largest over the points. ``pts``, ``pt``: (n_points, 3) in m."""
    worst, last = 0.0, 0.0
    for r in range(pts.shape[0]):
        dx, dy, dz = pts[r, 0] - pt[r, 0], pts[r, 1] - pt[r, 1], pts[r, 2] - pt[r, 2]
        last = (dx * dx + dy * dy + dz * dz) ** 0.5
        worst = max(worst, last)
    err[0], err[1] = last, worst


@jit.inline
def arm_term(k: int, sn: Sense, ss: SenseState, i: int, qpos: Any, qvel: Any, t_cmd: Any,
             sensordata: Any, tip: Any, record: bool) -> None:
    """Encoders and the arm shape (the dynamic estimator with arm IMUs, else the quasi-static
    fit), the flange force/torque sensor and the tip tracker."""
    th_true, hq = ss.th_true[i], sn.hq
    for j in range(hq.shape[0]):
        th_true[j] = qpos[hq[j]]
    if sn.aon[i]:
        arm_dynamic(k, sn, ss, i, qvel, qpos, record)
    else:
        arm_fit(k, sn, ss, i, t_cmd, record)
    wrist_term(k, sn, ss, i, sensordata, tip)


@jit.inline
def arm_fit(k: int, sn: Sense, ss: SenseState, i: int, t_cmd: Any, record: bool) -> None:
    """Without arm IMUs: the encoders and one step of the quasi-static shape fit at each
    delivered encoder sample. ``ss.th_true[i]`` holds the true hinge angles."""
    sp, th_true, out, work = sn.sp[i], ss.th_true[i], ss.out[i], ss.swork[i]
    hq, hv = sn.hq, sn.hv
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
        nt = enc.shape[0]
        for j in range(nt):
            meas[j] = enc[j]
            meas[nt + 6 + j] = t_cmd[j]
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
            shape_points(sp, work, ss.pts[i])
            shape_error(ss.pts[i], ss.pts_true[i], ss.err[i])


@jit.inline
def wrist_term(k: int, sn: Sense, ss: SenseState, i: int, sensordata: Any, tip: Any) -> None:
    """The flange force/torque sensor (into the estimated ``sensordata``) and the tip
    tracker."""
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
    ``ss.v``, ``ss.sd`` (``t_cmd`` (T,) N: the tendon tensions last commanded, known to the
    controller; ``tip`` (3,) the world tip site)."""
    vehicle_term(k, sn, ss, i, qpos, qvel, record)
    arm_term(k, sn, ss, i, qpos, qvel, t_cmd, sensordata, tip, record)


# --------------------------------------------------------------------------------------------
# Building the records
# --------------------------------------------------------------------------------------------


_TABLES: dict[str, np.ndarray] = {}


def _table(p: Prepared, kind: str) -> np.ndarray:
    """The quasi-static shape table of the trial's arm, its fixed-base build: ``kind`` (the
    value of ``sensing.shape_table``) ``along`` :func:`shape.quasi_static_table` (bends towards +x),
    ``direction`` :func:`shape.direction_table` (over the bend direction); cached per arm,
    airframe, sim, tendon map and kind."""
    cfg = p.cfg
    key = repr((cfg.arm, cfg.airframe, cfg.sim, cfg.control.tendon_map))
    if kind != "along":  # the along table's key as before
        key += f"|{kind}|{SHAPE_TABLE_DIRECTIONS}"
    if key not in _TABLES:
        fixed = build(cfg.airframe, cfg.arm, cfg.sim, fixed_base=True)
        phi = np.radians(cfg.arm.tendon_angles_deg)
        if kind == "direction":
            _TABLES[key] = shape.direction_table(
                fixed.model, fixed.tendon_actuators,
                lambda mu, beta: allocate(mu, beta, phi, cfg.arm.tension_max,
                                          cfg.control.tendon_map),
                directions=SHAPE_TABLE_DIRECTIONS)
        else:
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
    extra = shape.uncovered_arm_joints(m, n_links) if on.any() else []
    if extra:  # quadarm.preflight.check_sensed_model refuses it first, naming the key
        raise ValueError(f"sensing={preps[0].cfg.sensing.preset}: the estimators cover the "
                         f"vehicle and its links' two bend hinges, not the arm joints {extra}")
    n_ten = int(m.ntendon) if on.any() else 3
    chans = []
    for p, o in zip(preps, on, strict=True):
        cfg = p.cfg.sensing if o else SensingConfig(preset="ideal")
        dur = p.plan.steps * m.opt.timestep if o else 0.0
        chans.append(noise.draw(cfg, p.cfg.seed, dur, m.opt.timestep, n_ten))
    ch = np.stack([np.stack([c[n].prm for n in SENSORS]) for c in chans])
    drawn: dict[str, np.ndarray] = {}
    for n, short in zip(SENSORS, SHORT, strict=True):
        dim = n_ten if n == "encoder" else noise.DIMS[n]
        drawn[f"{short}_w"] = _pad3([c[n].white for c in chans], dim)
        drawn[f"{short}_b"] = _pad3([c[n].bias for c in chans], dim)
    g = m.opt.gravity
    grav = (float(g[0]), float(g[1]), float(g[2]))
    eprm = np.stack([ekf.ekf_params(p.cfg.sensing, m.opt.timestep, grav, semi_implicit=True)
                     for p in preps])
    prof = shape.NO_PROFILE
    if on.any():
        sp = np.stack([shape.shape_params(p.built.model) for p in preps])
        if isinstance(preps[0].cfg.arm, SectionArmConfig):  # per section, its uniform bend
            tab = np.zeros((ns, 0, 2))
            prof = shape.section_profiles(sp[0])
        else:  # one section: its own quasi-static table (sensing.shape_table)
            kinds = {p.cfg.sensing.shape_table for p, o in zip(preps, on, strict=True) if o}
            if len(kinds) > 1:  # engine.structure keeps them apart; a direct caller may not
                raise ValueError("sensing.shape_table: the trials of one batch must use the "
                                 f"same table, not {sorted(kinds)}")
            kind = kinds.pop() if kinds else "along"
            tab = np.stack([_table(p, kind) for p in preps])
        hq = shape.hinge_qpos(m, n_links)
        hv = np.asarray(m.jnt_dofadr[shape.hinge_joints(m, n_links)], dtype=np.int64)
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
    q0 = shape.initial_estimate(m, n_links) if on.any() else np.zeros(m.nq)
    return Sense(on=on, ch=ch, **drawn, ekf=eprm, sp=sp, tab=tab, prof=prof,
                 wts=wts, hq=hq, hv=hv, ft_adr=ft_adr, tip_site=int(b0.tip_site), q0=q0,
                 start=start,
                 sig0=sig0, caps=caps, n_links=n_links,
                 **_arm_records(preps, on, n_links, tab.shape[1] > 0, prof.shape[0], n_ten, sp))


_MODELS: dict[str, tuple[np.ndarray, ...]] = {}


def _swing(p: Prepared, modes: int) -> tuple[np.ndarray, ...]:
    """The ``modes`` swing modes of the trial's arm (:func:`armfilter.swing_model`, its
    fixed-base build, the actuators at the commands that hold it straight:
    :func:`quadarm.scenarios.drive.bend_rows` at no bend; cached per arm, airframe, sim and
    mode count)."""
    cfg = p.cfg
    key = repr((cfg.arm, cfg.airframe, cfg.sim, modes))
    if key not in _MODELS:
        fixed = build(cfg.airframe, cfg.arm, cfg.sim, fixed_base=True)
        ctrl = np.zeros(fixed.model.nu)
        ctrl[fixed.tendon_actuators] = drive.bend_rows(cfg, fixed, 0.0, 0.0)
        _MODELS[key] = armfilter.swing_model(fixed.model, modes, ctrl)
    return _MODELS[key]


_FILTERS: dict[str, tuple[np.ndarray, ...]] = {}


def _filter(p: Prepared, modes: int, cfg: ArmImuConfig, n_imu: int, period: float,
            n_base: int) -> tuple[np.ndarray, ...]:
    """The swing modes phi of the trial's arm (:func:`_swing`) and the discrete filter of
    :func:`armfilter.filter_arrays` over them: F, G, Q, the model accelerations and the
    initial standard deviations; cached per :func:`_swing`'s key, arm IMU settings, IMU
    count, period (s) and quasi-static coordinates. The filter's matrix exponentials cost
    about 10 ms a trial, Python holding the GIL while the batched engine's other threads fly
    (the same arrays every time: the cache changes no number)."""
    c = p.cfg
    key = repr((c.arm, c.airframe, c.sim, modes, cfg, n_imu, period, n_base))
    if key not in _FILTERS:
        phi, aq, av, bg = _swing(p, modes)
        _FILTERS[key] = (phi, *armfilter.filter_arrays(phi, aq, av, bg, cfg, n_imu, period,
                                                       n_base))
    return _FILTERS[key]


_HINGE0: dict[bytes, np.ndarray] = {}
# What mj_kinematics reads to place the bodies at qpos0 (the key of _hinge0's cache).
_KINEMATICS = ("jnt_bodyid", "body_parentid", "body_jntnum", "body_jntadr", "body_pos",
               "body_quat", "body_mocapid", "jnt_type", "jnt_qposadr", "jnt_pos", "jnt_axis",
               "qpos0")


def _hinge0(m: Any) -> np.ndarray:
    """Hinge 0 (link 0's origin) from the vehicle's origin (m, vehicle axes), at qpos0; cached
    per the model's kinematic tree (:data:`_KINEMATICS`, byte for byte, and link 0's id): a
    new ``MjData`` per trial cost about 0.9 ms of Python holding the GIL (0.35 us per step of
    a 5-s trial)."""
    link0 = m.body(names.link_body(0)).id
    key = b"".join([np.int64(link0).tobytes()]
                   + [np.ascontiguousarray(getattr(m, f)).tobytes() for f in _KINEMATICS])
    if key not in _HINGE0:
        _HINGE0[key] = _hinge0_of(m)
    return _HINGE0[key].copy()


def _hinge0_of(m: Any) -> np.ndarray:
    """:func:`_hinge0` computed: ``mj_kinematics`` at qpos0."""
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    root = int(m.jnt_bodyid[0])
    link0 = m.body(names.link_body(0)).id
    rot = d.xmat[root].reshape(3, 3)
    return np.asarray(rot.T @ (d.xpos[link0] - d.xpos[root]), dtype=float)


def _arm_records(preps: Sequence[Prepared], on: np.ndarray, n_links: int, table: bool,
                 n_prof: int, n_ten: int, sp: np.ndarray) -> dict[str, Any]:
    """The dynamic shape estimator's fields of :class:`Sense` (inert, small arrays for trials
    without arm IMUs): its quasi-static coordinates are a ``table``'s bend (2) and ``n_prof``
    profiles' (2 each), on an arm of ``n_ten`` tendons; ``sp`` (nsim, n_sp) the trials' shape
    models (:func:`shape.shape_params`)."""
    ns = len(preps)
    aon = np.array([bool(o) and p.cfg.sensing.arm_imus for p, o in zip(preps, on, strict=True)])
    unc = np.array([bool(o) and p.cfg.sensing.uncertainty for p, o in zip(preps, on, strict=True)])
    alog = np.array([bool(a) and p.cfg.sensing.arm_imu.log for p, a in zip(preps, aon,
                                                                          strict=True)])
    first = next((p for p, a in zip(preps, aon, strict=True) if a), None)
    if first is None:
        z = np.zeros
        return dict(aon=aon, unc=unc, alog=alog, ach=z((ns, sensors.N_CHANNEL)),
                    ai_w=z((ns, 1, 0)), ai_b=z((ns, 1, 0)), alinks=z(0, dtype=np.int64),
                    af=z((ns, armfilter.N_AF)), aphi=z((ns, 1, 1)), afm=z((ns, 1, 1)),
                    agm=z((ns, 1, armfilter.N_U)), aqm=z((ns, 1, 1)),
                    acdd=z((ns, 1, 1 + armfilter.N_U)), asig=z((ns, 1)),
                    ame=z((ns, armfilter.N_ME)))
    a0 = first.cfg.sensing.arm_imu
    for p, a in zip(preps, aon, strict=True):
        if a and (p.cfg.sensing.arm_imu.at != a0.at or p.cfg.sensing.arm_imu.modes != a0.modes):
            raise ValueError("sensing.arm_imu: the trials of one batch must carry the same arm "
                             "IMUs (at) and modes")
    ends = shape.section_ends(sp[[bool(a) for a in aon].index(True)])  # first's
    links = np.array(arm_imu_links(list(a0.at), n_links, ends), dtype=np.int64)
    ni = len(links)
    m = first.built.model
    dt = m.opt.timestep
    r0 = _hinge0(m)
    gravity = float(np.linalg.norm(m.opt.gravity))
    chans, rows = [], []
    for p, a in zip(preps, aon, strict=True):
        cfg = p.cfg.sensing.arm_imu if a else a0
        chans.append(noise.draw_arm(cfg, p.cfg.seed, p.plan.steps * dt if a else 0.0, dt, ni))
        period = period_of(cfg.rate, dt) * dt
        n_base = (2 if table else 0) + 2 * n_prof
        phi, f, g, q, cdd, sig = _filter(p if a else first, 2 * a0.modes, cfg, ni, period,
                                         n_base)
        e = p.cfg.sensing.encoder
        enc_var = e.noise ** 2 + e.resolution ** 2 / 12.0 + e.bias ** 2
        align = steps_of(p.cfg.sensing.align_s, dt) if a else 0
        afv = armfilter.scalar_params(cfg, enc_var, n_links, ni, period, r0, gravity, align,
                                      n_base, n_ten, p.cfg.sensing.align_swing,
                                      p.cfg.sensing.align_rate)
        rows.append((afv, phi, f, g, q, cdd, sig))
    ach = np.stack([c.prm for c in chans])
    white = _pad3([c.white for c in chans], 6 * ni)
    bias = _pad3([c.bias for c in chans], 6 * ni)
    filt = ("af", "aphi", "afm", "agm", "aqm", "acdd", "asig")  # the order of rows' tuples
    ame = np.stack([_model_error(p) if a else np.zeros(armfilter.N_ME)
                    for p, a in zip(preps, aon, strict=True)])
    return dict(aon=aon, unc=unc, alog=alog, ach=ach, ai_w=white, ai_b=bias, alinks=links,
                **{f: np.stack([r[j] for r in rows]) for j, f in enumerate(filt)}, ame=ame)


def _model_error(p: Prepared) -> np.ndarray:
    """The model-error covariance's parameters of the trial (``sensing.arm_imu.model_error``,
    :func:`quadarm.sensing.modelerror.vector`; zeros for ``none``); a table that does not
    fit the trial is refused (quadarm.preflight.check_model_error refuses it first)."""
    if p.cfg.sensing.arm_imu.model_error == "none":
        return np.zeros(armfilter.N_ME)
    return modelerror.vector(modelerror.for_trial(p.cfg))


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
    q0 = np.tile(sn.q0, (ns, 1)) if sn.q0.shape[0] == nq else z((ns, nq))
    q0[:, :3] = sn.start
    q0[:, 3] = 1.0
    nh, nl = sn.hq.size, max(sn.n_links, 1)
    # The shape fit's coefficients: a table's bend (2) and two per profile (shape.estimate).
    n_coef = (2 if sn.tab.shape[1] > 0 else 0) + 2 * sn.prof.shape[0]
    nt = sn.enc_w.shape[2]
    caps = [int(c) for c in sn.caps]
    dims = [nt if n == "encoder" else noise.DIMS[n] for n in SENSORS]
    rings = {f"{s}_r": z((ns, caps[j], dims[j])) for j, s in enumerate(SHORT)}
    last = {s: z((ns, dims[j])) for j, s in enumerate(SHORT)}
    return SenseState(
        **rings, **last, truth=z((ns, 6)), prev=z((ns, 7)), x=x, p=pm,
        ring=z((ns, caps[5], ekf.R_STRIDE)), meta=z((ns, ekf.META)), work=z((ns, ekf.WORK)), q=q0,
        v=z((ns, nv)), sd=z((ns, nsd)), c=z((ns, n_coef)), th=z((ns, nh)), th_prev=z((ns, nh)),
        th_true=z((ns, nh)), swork=z((ns, shape.W_STRIDE * nl)),
        sscratch=z((ns, shape.scratch_size(sn.prof.shape[0], table=sn.tab.shape[1] > 0,
                                           tendons=nt))), meas=z((ns, 2 * nt + 6)),
        out=z((ns, nt + 3)), pts=z((ns, nl, 3)), pts_true=z((ns, nl, 3)),
        err=z((ns, N_ERR)), **_arm_state(sn, ns, nl))


def _arm_state(sn: Sense, ns: int, nl: int) -> dict[str, np.ndarray]:
    """The dynamic shape estimator's memory and scratch (:class:`SenseState`'s ``ai_r`` ...
    ``vwork``)."""
    z = np.zeros
    ni = sn.alinks.shape[0]
    nx = sn.afm.shape[1]
    nc = sn.acdd.shape[1]
    nt = sn.enc_w.shape[2]
    nz = nt + 6 * ni
    nh = 2 * nl
    cap = int(sn.ach[:, sensors.CH_CAP].max()) if sn.aon.any() else 1
    return dict(
        ai_r=z((ns, cap, 6 * ni)), ai=z((ns, 6 * ni)), ai_t=z((ns, 6 * ni)),
        ai_prev=z((ns, max(ni, 1), 12)), ax=z((ns, nx)), ap=z((ns, nx * nx)), axb=z((ns, nx)),
        apht=z((ns, 2 * nx)), atmp=z((ns, nx * nx + nx)), ahz=z((ns, nz)), ahm=z((ns, nz, nx)),
        az=z((ns, nz)), acol=z((ns, nc, nh)), actmp=z((ns, nh + nc + 13)),
        akin=z((ns, max(ni, 1), 6)), akinc=z((ns, nc, max(ni, 1), 6)), adl=z((ns, nt)),
        adlc=z((ns, nc, nt)), alv=z((ns, nl, 6)), atipv=z((ns, 3)), atipc=z((ns, nc, 3)),
        athd=z((ns, nh)),
        astat=np.full((ns, armfilter.N_TIPLOG), np.nan), vnees=z((ns, 1)),
        vwork=z((ns, NEES_DOF * (NEES_DOF + 2))), amef=z((ns, armfilter.N_MEF)))


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
    if row.shape[0] > N_LOG:
        pm = ss.p[i]
        for j in range(ekf.NE):
            row[U_PDIAG + j] = pm[j * ekf.NE + j]
        row[U_NEES] = ss.vnees[i, 0]
        st = ss.astat[i]
        for j in range(armfilter.N_TIPLOG):
            row[U_TIP + j] = st[j]
        ai = ss.ai[i]
        if row.shape[0] > U_SAMPLES:
            for j in range(ai.shape[0]):
                row[U_SAMPLES + j] = ai[j]


def log_width(sn: Sense) -> int:
    """Columns of a logged estimate row: N_LOG, then the uncertainty block when any trial asks
    for it or for its arm IMU samples, then the samples (6 per arm IMU)."""
    if not (sn.unc.any() or sn.alog.any()):
        return N_LOG
    return U_SAMPLES + (6 * sn.alinks.shape[0] if sn.alog.any() else 0)
