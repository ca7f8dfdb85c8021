"""The compiled sensing term's cost per part (docs/performance.md, "The batched engine with
sensing on"): one trial flown once (plain Python, step by step) records what the term reads at
every step (qpos, qvel, sensordata, the tip site, the commanded tensions) and the logged
estimate rows; then, in rounds, interleaved, each timed with ``time.thread_time``:

- ``bare``: the bare ``mj_step`` replay of the trial's logged commands (as
  :class:`quadarm.bench.Replay`'s);
- ``term``: a compiled loop of :func:`quadarm.runner.sense.sense_term` and
  :func:`~quadarm.runner.sense.log_estimate` over the recorded inputs, from a fresh
  :class:`~quadarm.runner.sense.SenseState` (its rows are checked equal, byte for byte, to the
  flown trial's estimate log: the open-loop replay is the flown term);
- ``parts``: the same loop written out part by part (vehicle_term, arm_dynamic, wrist_term as
  in this tree's sense.py, calling the same functions) with the processor's cycle counter read
  between the parts (``llvm.readcyclecounter``), converted to microseconds by a calibration against
  ``time.perf_counter`` (the counter runs at a constant rate: it counts wall time, so a
  loaded machine's preemptions land in some part; the medians over rounds are reported).

Prints, per part, microseconds per simulated step (the median over rounds) and the sum.

    QUADARM_NUMBA=1 .venv/bin/python research/sensing_term_cost.py PRESET ROUNDS [overrides]
    e.g. research/sensing_term_cost.py fast 5 sensing=realistic_arm

PRESET: ``fast`` or ``implicitfast`` (:data:`quadarm.bench.PRESETS`); the trial is the short
mission of ``python -m quadarm.bench`` (:data:`quadarm.bench.SHORT_MISSION`, 14 s). The
recorded inputs are kept in ``/tmp/sensing_term_inputs_<PRESET>_<overrides>.npz`` and reused
(so two trees replay the same inputs; delete it after a change to the flight itself).
``SENSING_TERM_EST=FILE.npy`` saves the compiled loop's estimate rows, for a byte comparison
between trees.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from typing import Any

import mujoco
import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from quadarm import bench
from quadarm.api import compose
from quadarm.runner import episode, jit, lifecycle, sense, step
from quadarm.sensing import armfilter, ekf, sensors


@intrinsic
def _cycles(typingctx: Any) -> Any:
    """The processor's cycle counter (``llvm.readcyclecounter``: rdtsc on x86)."""
    sig = types.uint64()

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        fnty = ir.FunctionType(ir.IntType(64), [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.readcyclecounter")
        return builder.call(fn, [])

    return sig, codegen


@numba.njit(nogil=True)
def _spin(n: int) -> float:
    t0 = _cycles()
    s = 0.0
    for j in range(n):
        s += 1.0 / (1.0 + j)
    return float(_cycles() - t0) + s * 0.0


def cycles_per_us() -> float:
    """The cycle counter's rate (cycles per microsecond), against ``time.perf_counter``."""
    _spin(10)
    rates = []
    for _ in range(5):
        t0 = time.perf_counter()
        c = _spin(20_000_000)
        rates.append(c / ((time.perf_counter() - t0) * 1e6))
    return statistics.median(rates)


@numba.njit(nogil=True, _nrt=False, cache=True)
def term_loop(sn: Any, ss: Any, qpos: Any, qvel: Any, tcmd: Any, sd: Any, tip: Any,
              record: bool, est: Any) -> None:
    for k in range(qpos.shape[0]):
        sense.sense_term(k, sn, ss, 0, qpos[k], qvel[k], tcmd[k], sd[k], tip[k], record)
        if est.shape[0] > 0:
            sense.log_estimate(ss, 0, est[k])


PARTS = ("imu truth+channel", "ekf predict", "pos channel+ekf fix (replay)", "vehicle q/v",
         "vehicle NEES", "enc forward (+pts_true)", "enc channel", "arm imu truth",
         "arm imu channel", "arm inputs+predict", "arm measure", "arm update(+still)",
         "arm hinges+q/v", "arm record (forward, points, tip_stats)", "shape error",
         "wrist (ft, tip)", "log row")


@numba.njit(nogil=True, _nrt=False, cache=True)
def parts_loop(sn: Any, ss: Any, qpos: Any, qvel: Any, sd: Any, tip: Any, record: bool,
               est: Any, acc: Any) -> None:
    """sense_term written out (vehicle_term, arm_term with arm IMUs, wrist_term) with the
    cycle counter read between the parts into ``acc`` (len(PARTS),)."""
    i = 0
    for k in range(qpos.shape[0]):
        qp, qv = qpos[k], qvel[k]
        t0 = _cycles()
        # --- vehicle_term
        sense.imu_truth(sn, ss, i, k, qp, qv)
        u = ss.imu[i]
        ki = sense.channel_step(k, ss.truth[i], sn.imu_w[i], sn.imu_b[i], ss.imu_r[i],
                                sn.ch[i, sense.IMU], u)
        t1 = _cycles()
        acc[0] += t1 - t0
        x = ss.x[i]
        if ki > 0:
            sense.ekf_predict(x, ss.p[i], ss.ring[i], ss.meta[i], sn.ekf[i], u, ss.work[i])
        t2 = _cycles()
        acc[1] += t2 - t1
        z = ss.pos[i]
        kp = sense.channel_step(k, qp, sn.pos_w[i], sn.pos_b[i], ss.pos_r[i],
                                sn.ch[i, sense.POS], z)
        if kp >= 0:
            stamp = kp * int(sn.ch[i, sense.POS, sensors.CH_PERIOD])
            epoch = stamp // int(sn.ch[i, sense.IMU, sensors.CH_PERIOD])
            sense.ekf_fix(x, ss.p[i], ss.ring[i], ss.meta[i], sn.ekf[i], z, epoch, ss.work[i])
        t3 = _cycles()
        acc[2] += t3 - t2
        q, v = ss.q[i], ss.v[i]
        for j in range(3):
            q[j] = x[ekf.XP + j]
            v[j] = x[ekf.XV + j]
            v[3 + j] = u[j] - x[ekf.XBG + j]
        for j in range(4):
            q[3 + j] = x[ekf.XQ + j]
        t4 = _cycles()
        acc[3] += t4 - t3
        if record and sn.unc[i]:
            sense.vehicle_nees(ss, i, qp, qv)
        t5 = _cycles()
        acc[4] += t5 - t4
        # --- arm_term / arm_dynamic
        th_true, hq = ss.th_true[i], sn.hq
        for j in range(hq.shape[0]):
            th_true[j] = qp[hq[j]]
        sp, out, work = sn.sp[i], ss.out[i], ss.swork[i]
        hv = sn.hv
        enc = ss.enc[i]
        posed = k % int(sn.ch[i, sense.ENC, sensors.CH_PERIOD]) == 0
        if posed:
            sense.shape_forward(sp, th_true, work, out)
            if record:
                sense.shape_points(sp, work, ss.pts_true[i])
        t6 = _cycles()
        acc[5] += t6 - t5
        sense.channel_step(k, out, sn.enc_w[i], sn.enc_b[i], ss.enc_r[i], sn.ch[i, sense.ENC],
                           enc)
        t7 = _cycles()
        acc[6] += t7 - t6
        ach, af = sn.ach[i], sn.af[i]
        thd = ss.athd[i]
        if k % int(ach[sensors.CH_PERIOD]) == 0:
            for j in range(hv.shape[0]):
                thd[j] = qv[hv[j]]
            g = sn.ekf[i]
            if posed:
                sense.arm_imu_posed(sp, thd, sn.alinks, qp, qv, g[ekf.E_GX], g[ekf.E_GY],
                                    g[ekf.E_GZ], af[armfilter.F_R0:armfilter.F_R0 + 3], k == 0,
                                    af[armfilter.F_DT], work, ss.akin[i], ss.adl[i],
                                    ss.atipv[i], ss.ai_prev[i], ss.ai_t[i], ss.alv[i])
            else:
                sense.arm_imu_truth(sp, th_true, thd, sn.alinks, qp, qv, g[ekf.E_GX],
                                    g[ekf.E_GY], g[ekf.E_GZ],
                                    af[armfilter.F_R0:armfilter.F_R0 + 3], k == 0,
                                    af[armfilter.F_DT], work, out, ss.akin[i], ss.adl[i],
                                    ss.atipv[i], ss.ai_prev[i], ss.ai_t[i], ss.alv[i])
        t8 = _cycles()
        acc[7] += t8 - t7
        ka = sense.channel_step(k, ss.ai_t[i], sn.ai_w[i], sn.ai_b[i], ss.ai_r[i], ach,
                                ss.ai[i])
        t9 = _cycles()
        acc[8] += t9 - t8
        th = ss.th[i]
        xa, p = ss.ax[i], ss.ap[i]
        if ka >= 0:
            nx = xa.shape[0]
            xv = ss.x[i]
            ct = ss.actmp[i]
            nt = ct.shape[0]
            fv = ct[nt - 3:]
            wprev = ct[nt - 6:nt - 3]
            uin = ct[nt - 10:nt - 6]
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
            uin[0] = -fv[0] - (dwy * r0[2] - dwz * r0[1])
            uin[1] = -fv[1] - (dwz * r0[0] - dwx * r0[2])
            uin[2], uin[3] = dwx, dwy
            if ka == 0:
                for r in range(nx):
                    xa[r] = 0.0
                    for c in range(nx):
                        p[r * nx + c] = 0.0
                    p[r * nx + r] = sn.asig[i, r] * sn.asig[i, r]
            else:
                sense.arm_predict(xa, p, sn.afm[i], sn.agm[i], sn.aqm[i], uin, ss.atmp[i])
            za, ai = ss.az[i], ss.ai[i]
            nte = enc.shape[0]
            for j in range(nte):
                za[j] = enc[j]
            for j in range(ai.shape[0]):
                za[nte + j] = ai[j]
            t10 = _cycles()
            acc[9] += t10 - t9
            sense.arm_measure(sp, sn.tab[i], sn.prof, sn.aphi[i], sn.acdd[i], af, sn.alinks,
                              xa, wb, fv, uin, th, work, out, ss.acol[i], ct, ss.akin[i],
                              ss.akinc[i], ss.adl[i], ss.adlc[i], ss.atipv[i], ss.atipc[i],
                              ss.ahz[i], ss.ahm[i], ss.alv[i])
            t11 = _cycles()
            acc[10] += t11 - t10
            still = k < af[armfilter.F_ALIGN]
            sense.arm_update(xa, p, za, ss.ahz[i], ss.ahm[i], af, ss.axb[i], ss.apht[i], still)
            if still:
                sense.arm_still(xa, p, af, ss.apht[i])
            t12 = _cycles()
            acc[11] += t12 - t11
            sense.arm_hinges(sn.tab[i], sn.prof, sn.aphi[i], xa, th)
            col = ss.acol[i]
            nc = col.shape[0]
            for j in range(hq.shape[0]):
                q[hq[j]] = th[j]
                rate = 0.0
                for c in range(nc):
                    rate += col[c, j] * xa[nc + c]
                v[hv[j]] = rate
            t13 = _cycles()
            acc[12] += t13 - t12
            if record:
                sense.shape_forward(sp, th, work, out)
                pts = ss.pts[i]
                sense.shape_points(sp, work, pts)
                sense.arm_tip_stats(p, ss.atipc[i], nc, pts[pts.shape[0] - 1],
                                    ss.pts_true[i, pts.shape[0] - 1], ss.astat[i])
                me = sn.ame[i]
                if me[armfilter.ME_ON] > 0.0:
                    sense.arm_model_error(me, xa, p, th, wb, uin, int(af[armfilter.F_NB]), nc,
                                          still, pts[pts.shape[0] - 1],
                                          ss.pts_true[i, pts.shape[0] - 1], ss.astat[i],
                                          ss.amef[i])
            t14 = _cycles()
            acc[13] += t14 - t13
        else:
            t14 = _cycles()
        if record:
            sense.shape_error(ss.pts[i], ss.pts_true[i], ss.err[i])
        t15 = _cycles()
        acc[14] += t15 - t14
        sense.wrist_term(k, sn, ss, i, sd[k], tip[k])
        t16 = _cycles()
        acc[15] += t16 - t15
        if est.shape[0] > 0:
            sense.log_estimate(ss, 0, est[k])
        acc[16] += _cycles() - t16


def record_inputs(prep: lifecycle.Prepared) -> dict[str, np.ndarray]:
    """Fly ``prep`` in plain Python one step at a time; what the sensing term of each step
    reads, and the flown estimate log."""
    m = prep.built.model
    d = mujoco.MjData(m)
    episode.reset(m, d, prep.plan.start)
    prm, _ = step.params([prep], step.FLY, compiled=False)
    st = step.one_state(d, m.opt.wind, prm)
    lg = step.log(prm, m.nq, m.nv, m.nu, m.nbody, False)
    chk = step.live_check(d, prep.plan.start, prep.cfg.sim.max_distance, episode.CHECK_EVERY,
                          boxed=True)
    n = prep.plan.steps + 1
    rec: dict[str, list[np.ndarray]] = {k: [] for k in ("qpos", "qvel", "sd", "tip", "tcmd")}
    for k in range(n):
        rec["qpos"].append(d.qpos.copy())
        rec["qvel"].append(d.qvel.copy())
        rec["sd"].append(d.sensordata.copy())
        rec["tip"].append(d.site_xpos[prm.tip_site].copy())
        rec["tcmd"].append(st.tendon.out[0].copy())
        if step.fly_chunk(m, d, k, k + 1, prm, st, lg, chk) < 0:
            raise RuntimeError("the flight diverged")
    out = {k: np.ascontiguousarray(np.array(v)) for k, v in rec.items()}
    out["est"] = np.ascontiguousarray(lg.est[:, 0])
    out["ctrl"] = np.ascontiguousarray(lg.ctrl[:n - 1, 0])
    return out


def main(label: str, rounds: int, overrides: list[str]) -> None:
    cfg = compose([f"sim={bench.PRESETS[label]}", *overrides, *bench.SHORT_MISSION])
    prep = lifecycle.prepare(cfg)
    if not isinstance(prep, lifecycle.Prepared):
        raise SystemExit(prep.message)
    m = prep.built.model
    cache = f"/tmp/sensing_term_inputs_{label}_{'_'.join(overrides)}.npz"
    if os.path.exists(cache):
        rec = dict(np.load(cache))
    else:
        rec = record_inputs(prep)
        np.savez(cache, **rec)
    sn = sense.records([prep], held=False)
    n = rec["qpos"].shape[0]
    est = np.zeros((n, sense.log_width(sn)))

    def fresh() -> Any:
        return sense.state(sn, m.nq, m.nv, m.nsensordata)

    term_loop(sn, fresh(), rec["qpos"], rec["qvel"], rec["tcmd"], rec["sd"], rec["tip"], True,
              est)
    if os.environ.get("SENSING_TERM_EST"):  # the compiled rows, for a before/after comparison
        np.save(os.environ["SENSING_TERM_EST"], est)
    same = est.tobytes() == rec["est"].tobytes()
    # The flown trial is plain Python: its shape errors (x ** 0.5) may differ from the
    # compiled ones' in the last bit (numba computes the power as a square root).
    print(f"replayed estimate log equals the flown (plain) one byte for byte: {same}")
    if not same:
        bad = np.argwhere(est != rec["est"])
        print("  first differences (step, column):", bad[:5].tolist())
    acc = np.zeros(len(PARTS), dtype=np.uint64)
    est2 = np.zeros_like(est)
    parts_loop(sn, fresh(), rec["qpos"], rec["qvel"], rec["sd"], rec["tip"], True, est2, acc)
    print(f"parts loop's log equals: {est2.tobytes() == est.tobytes()}")
    rate = cycles_per_us()
    samples: dict[str, list[float]] = {}
    loads = [os.getloadavg()[0]]
    for _ in range(rounds):
        d = bench._start(m, prep.plan)
        c, ctrl, mjs = d.ctrl, rec["ctrl"], mujoco.mj_step
        t0 = time.thread_time()
        for k in range(prep.plan.steps):
            c[:] = ctrl[k]
            mjs(m, d)
        samples.setdefault("bare", []).append((time.thread_time() - t0) / prep.plan.steps * 1e6)
        ss = fresh()
        t0 = time.thread_time()
        term_loop(sn, ss, rec["qpos"], rec["qvel"], rec["tcmd"], rec["sd"], rec["tip"], True,
                  est)
        samples.setdefault("term", []).append((time.thread_time() - t0) / n * 1e6)
        ss = fresh()
        acc[:] = 0
        t0 = time.thread_time()
        parts_loop(sn, ss, rec["qpos"], rec["qvel"], rec["sd"], rec["tip"], True, est2, acc)
        samples.setdefault("parts (sum)", []).append((time.thread_time() - t0) / n * 1e6)
        for j, name in enumerate(PARTS):
            samples.setdefault(name, []).append(float(acc[j]) / rate / n)
        loads.append(os.getloadavg()[0])
    print(f"{label} {' '.join(overrides)}: {n} steps, {rounds} rounds, load {min(loads):.1f}-"
          f"{max(loads):.1f}, counter {rate:.0f} cycles/us; us per step (median, min):")
    for name, v in samples.items():
        print(f"  {name:42s} {statistics.median(v):7.2f} {min(v):7.2f}")
    print(f"  {'sum of parts':42s} "
          f"{sum(statistics.median(samples[p]) for p in PARTS):7.2f}")


if __name__ == "__main__":
    os.environ.setdefault(jit.ENV, "1")
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
