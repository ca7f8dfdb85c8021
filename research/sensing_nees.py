"""Where the dynamic shape estimator's overconfidence comes from (issue 40 section 2,
docs/sensing.md, "Why the shape estimate is overconfident").

A diagnostic, not a study: it flies one mission compiled, returning to Python after every arm
filter sample to record the filter's inputs (the measurements z, the vehicle's body rate and
specific force, the inputs dg, dw) and internals (state, covariance, tip Jacobian), then

- ``decompose``: splits the tip error of the tendon sweep and the figure-eight into the shape
  family's own error (the family member nearest the true hinge angles, least squares over the
  hinges) and the filter's error inside the family; the filter's coordinates against that
  member in its own covariance (a NEES over the n_c shape coordinates); the tip Jacobian at the
  prediction against finite differences at the posterior; the share of the held sweep's error
  that is periodic in the bend direction;
- ``trade``: replays the filter offline on the recorded inputs (the same per-step functions,
  compiled; at the recorded settings the replay equals the flown filter bit for bit, checked)
  with its four model-error terms (``swing_accel``, ``bend_accel``, ``accel_model``,
  ``length_model``) scaled by one factor k, and prints tip RMS (% of L) against NEES per phase.
  The flight does not read the shape estimate (no arm feed-forward in the mission), so the
  replay is the flight's own filter with other numbers;
- ``direction``: the same trade with the one-section arm's quasi-static table extended over the
  bend direction (the package's :func:`quadarm.sensing.shape.direction_table`, as the flown
  ``sensing.shape_table=direction`` reads it; the study first used a prototype of it, sampled
  every 20 steps, which gave the same numbers to 0.01 points of L and 1 of NEES on seeds
  0-3);
- (``bent``, the swing modes' dynamics linearised about the estimated bend, was removed with
  its package code after its measured negative result: docs/sensing.md, "The swing about the
  bend".)

    .venv/bin/python research/sensing_nees.py record OUT.npz sensing=realistic_arm seed=0
    .venv/bin/python research/sensing_nees.py records REC/prb12 0 1 2 -- sensing=realistic_arm
    .venv/bin/python research/sensing_nees.py decompose OUT.npz
    .venv/bin/python research/sensing_nees.py trade L_m REC.npz [REC.npz ...] -- OVERRIDES
    .venv/bin/python research/sensing_nees.py direction 0.48 REC.npz [REC.npz ...] -- K [K ...]

(``trade``: the recordings of one arm, seeds in their file names ``..._s<seed>.npz``, L the
arm's length in m; OVERRIDES the arm, e.g. ``arm=ftdcr_v4_calibrated``.)
"""

from __future__ import annotations

import dataclasses
import re
import sys
from typing import Any

import mujoco
import numpy as np
from scipy.optimize import least_squares

from quadarm.api import compose
from quadarm.config.sensing import period_of
from quadarm.runner import episode, jit, lifecycle, sense, step
from quadarm.sensing import armfilter, sensors, shape

PHASES = {"hover": (0.0, 3.0), "climb": (3.0, 6.0), "figure_eight": (6.0, 22.0),
          "tendon_sweep": (22.0, 32.0), "return": (32.0, 36.0), "whole": (0.0, 36.0)}
CHI2_2 = (0.05064, 7.3778)  # the per-sample two-sided 95 % interval of chi-square(2)
FACTORS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)


def _prepared(overrides: list[str]) -> lifecycle.Prepared:
    """The prepared trial of command-line ``overrides`` (an error episode raises)."""
    p = lifecycle.prepare(compose(overrides))
    if not isinstance(p, lifecycle.Prepared):
        raise SystemExit(f"the trial could not be prepared: {p.message}")
    return p


def record(path: str, overrides: list[str]) -> None:
    """Fly the trial of ``overrides`` compiled and save the arm filter's record to ``path``."""
    p = _prepared(overrides)
    cfg = p.cfg
    m = p.built.model
    d = mujoco.MjData(m)
    episode.reset(m, d, p.plan.start)
    step.warm(True)
    prm, _ = step.params([p], step.FLY, compiled=True)
    st = step.one_state(d, m.opt.wind, prm)
    lg = step.log(prm, m.nq, m.nv, m.nu, m.nbody, False)
    kern = step.kernels(True)
    mp, dp = step.address(m, True), step.address(d, True)
    chk = step.live_check(d, p.plan.start, cfg.sim.max_distance, episode.CHECK_EVERY, boxed=True)
    fly_chunk = jit.entry(kern.fly_chunk, mp, dp, 0, 0, prm, st, lg, chk)
    sn, ss = prm.sn, st.ss
    per = int(sn.ach[0, sensors.CH_PERIOD])
    nt = ss.actmp.shape[1]
    rec: dict[str, list[np.ndarray]] = {k: [] for k in (
        "t", "x", "p", "tipc", "pts", "pts_true", "th_true", "z", "wb", "fv", "uin")}
    k = 0
    for k1 in range(1, p.plan.steps + 1, per):  # back in Python right after each filter sample
        assert fly_chunk(mp, dp, k, k1, prm, st, lg, chk) >= 0, "the flight diverged"
        k = k1
        rec["t"].append(np.array((k1 - 1) * m.opt.timestep))
        for key, arr in (("x", ss.ax[0]), ("p", ss.ap[0]), ("tipc", ss.atipc[0]),
                         ("pts", ss.pts[0, -1]), ("pts_true", ss.pts_true[0, -1]),
                         ("th_true", ss.th_true[0]), ("z", ss.az[0]), ("wb", ss.v[0, 3:6]),
                         ("fv", ss.actmp[0, nt - 3:]), ("uin", ss.actmp[0, nt - 10:nt - 6])):
            rec[key].append(arr.copy())
    out: dict[str, Any] = {k: np.array(v) for k, v in rec.items()}
    for f in ("sp", "tab", "aphi", "af", "afm", "agm", "aqm", "acdd", "asig"):
        out["C_" + f] = np.asarray(getattr(sn, f)[0])
    out["C_prof"], out["C_alinks"] = np.asarray(sn.prof), np.asarray(sn.alinks)
    np.savez(path, **out)


@jit.numba.njit if jit.AVAILABLE else (lambda f: f)
def _replay(sp, tab, prof, phi, cdd, af, links, fm, gm, qm, sig, zs, wbs, fvs, us,  # noqa: ANN001
            xs, ps, tipcs, tips, steps) -> None:
    """The flown filter's step (runner/sense.py::arm_dynamic) over the recorded inputs: state,
    covariance, tip Jacobian and estimated tip per sample; ``steps`` (n_k,) each sample's
    physics step, inside the alignment window while below ``af[F_ALIGN]`` (0: none)."""
    nk, nx, nc = zs.shape[0], fm.shape[0], cdd.shape[0]
    nl, nt, ni, nz = int(sp[0]), int(af[armfilter.F_NT]), links.shape[0], zs.shape[1]
    nh = 2 * nl
    x, p = np.zeros(nx), np.zeros(nx * nx)
    for r in range(nx):
        p[r * nx + r] = sig[r] ** 2
    tmp, th, work = np.zeros(nx * nx + nx), np.zeros(nh), np.zeros(shape.W_STRIDE * nl)
    out, col, ct = np.zeros(nt + 3), np.zeros((nc, nh)), np.zeros(nh + nc + 13)
    kin, kinc = np.zeros((max(ni, 1), 6)), np.zeros((nc, max(ni, 1), 6))
    dl, dlc, tipv, tipc = np.zeros(nt), np.zeros((nc, nt)), np.zeros(3), np.zeros((nc, 3))
    hz, hm, lv = np.zeros(nz), np.zeros((nz, nx)), np.zeros((nl, 6))
    xb, pht, pts = np.zeros(nx), np.zeros(2 * nx), np.zeros((nl, 3))
    for k in range(nk):
        if k > 0:
            armfilter.predict(x, p, fm, gm, qm, us[k], tmp)
        armfilter.measure(sp, tab, prof, phi, cdd, af, links, x, wbs[k], fvs[k], us[k], th, work,
                          out, col, ct, kin, kinc, dl, dlc, tipv, tipc, hz, hm, lv)
        still = steps[k] < af[armfilter.F_ALIGN]
        armfilter.update(x, p, zs[k], hz, hm, af, xb, pht, still)
        if still:
            armfilter.still(x, p, af, pht)
        armfilter.hinge_angles(tab, prof, phi, x, th)
        shape.forward(sp, th, work, out)
        shape.points(sp, work, pts)
        xs[k], ps[k], tipcs[k], tips[k] = x, p, tipc, pts[nl - 1]


def replay(r: Any, p: Any, cfg: Any) -> tuple[np.ndarray, ...]:
    """The filter of arm IMU settings ``cfg`` over the record ``r`` of the prepared trial
    ``p``: (x, P, tip Jacobian, estimated tip) per sample."""
    phi, aq, av, bg = sense._swing(p, 2 * cfg.modes)
    dt = p.built.model.opt.timestep
    period = period_of(cfg.rate, dt) * dt
    af0 = r["C_af"]
    ni, nb, nt = r["C_alinks"].shape[0], int(af0[armfilter.F_NB]), int(af0[armfilter.F_NT])
    f, g, q, cdd, sig = armfilter.filter_arrays(phi, aq, av, bg, cfg, ni, period, nb)
    e = p.cfg.sensing.encoder
    enc_var = e.noise ** 2 + e.resolution ** 2 / 12.0 + e.bias ** 2
    af = armfilter.scalar_params(cfg, enc_var, int(af0[armfilter.F_NL]), ni, period,
                                 af0[armfilter.F_R0:armfilter.F_R0 + 3], af0[armfilter.F_G],
                                 int(af0[armfilter.F_ALIGN]), nb, nt, p.cfg.sensing.align_swing,
                                 p.cfg.sensing.align_rate)
    nk, nx, nc = r["z"].shape[0], f.shape[0], cdd.shape[0]
    xs, ps = np.zeros((nk, nx)), np.zeros((nk, nx * nx))
    tipcs, tips = np.zeros((nk, nc, 3)), np.zeros((nk, 3))
    _replay(r["C_sp"], r["C_tab"], r["C_prof"], phi, cdd, af, r["C_alinks"], f, g, q, sig,
            r["z"], r["wb"], r["fv"], r["uin"], xs, ps, tipcs, tips, sample_steps(r, p))
    return xs, ps, tipcs, tips


def sample_steps(r: Any, p: Any) -> np.ndarray:
    """Each recorded filter sample's physics step (its time over the timestep, rounded)."""
    return np.rint(np.asarray(r["t"]) / p.built.model.opt.timestep).astype(np.int64)


def tip_nees(r: Any, ps: np.ndarray, tipcs: np.ndarray, tips: np.ndarray, rows: np.ndarray
             ) -> np.ndarray:
    """The logged tip NEES (armfilter.tip_stats, 2 dof) at the samples ``rows``."""
    nc, st = tipcs.shape[1], np.zeros(armfilter.N_TIPLOG)
    out = np.zeros(len(rows))
    for j, i in enumerate(rows):
        armfilter.tip_stats(ps[i], tipcs[i], nc, tips[i], r["pts_true"][i], st)
        out[j] = st[6]
    return out


class _Family:
    """The filter's shape family (quasi-static coordinates and swing modes) of a record."""

    def __init__(self, r: Any) -> None:
        self.sp, self.tab, self.prof, self.phi = r["C_sp"], r["C_tab"], r["C_prof"], r["C_aphi"]
        self.nl = int(self.sp[shape.S_N])
        self.work, self.out = np.zeros(shape.W_STRIDE * self.nl), np.zeros(shape.n_out(self.sp))
        self.pts = np.zeros((self.nl, 3))

    def hinges(self, c: np.ndarray) -> np.ndarray:
        th = np.zeros(2 * self.nl)
        armfilter.hinge_angles(self.tab, self.prof, self.phi, c, th)
        return th

    def tip(self, th: np.ndarray) -> np.ndarray:
        shape.forward(self.sp, th, self.work, self.out)
        shape.points(self.sp, self.work, self.pts)
        return self.pts[-1].copy()


def decompose(path: str) -> None:
    r = np.load(path)
    fam = _Family(r)
    t, nc, nx = r["t"], r["tipc"].shape[1], r["x"].shape[1]
    for name in ("figure_eight", "tendon_sweep"):
        a, b = PHASES[name]
        rows = np.where((t >= a) & (t < b))[0][::5]
        e_f, e_p, nees_c, jac = [], [], [], []
        for i in rows:
            tt, xf = r["th_true"][i], r["x"][i, :nc]
            cs = least_squares(lambda c, tt=tt: fam.hinges(c) - tt, xf, method="lm").x
            true_tip = fam.tip(tt)
            e_f.append(fam.tip(fam.hinges(xf)) - true_tip)
            e_p.append(fam.tip(fam.hinges(cs)) - true_tip)
            dc = xf - cs
            nees_c.append(dc @ np.linalg.solve(r["p"][i].reshape(nx, nx)[:nc, :nc], dc))
            fd = np.zeros((nc, 3))
            for j in range(nc):
                h = np.zeros(nc)
                h[j] = 1e-6
                fd[j] = (fam.tip(fam.hinges(xf + h)) - fam.tip(fam.hinges(xf - h))) / 2e-6
            jac.append(np.linalg.norm(fd - r["tipc"][i]) / np.linalg.norm(fd))
        ef, ep = np.array(e_f), np.array(e_p)
        cov = ep.T @ ep / len(ep)  # the family's own error, as a tip covariance (from truth)
        nees = tip_nees(r, r["p"], r["tipc"], r["pts"], rows)
        bumped = []
        for i in rows:  # the NEES had the filter known the family's error (an upper bound)
            pb = np.zeros((nc + 3, nc + 3))
            pb[:nc, :nc] = r["p"][i].reshape(nx, nx)[:nc, :nc]
            pb[nc:, nc:] = cov
            tc = np.vstack([r["tipc"][i], np.eye(3)])
            st = np.zeros(armfilter.N_TIPLOG)
            armfilter.tip_stats(pb.ravel(), tc, nc + 3, r["pts"][i], r["pts_true"][i], st)
            bumped.append(st[6])
        sd = np.sqrt(np.mean([np.trace(_tipcov(r["p"][i], r["tipc"][i], nc)) for i in rows]))

        def rms(e: np.ndarray) -> float:
            return float(np.sqrt((e ** 2).sum(1).mean()) * 1e3)

        print(f"{name}: tip RMS {rms(ef):.2f} mm, the filter's own sqrt(tr S) {sd * 1e3:.2f} mm, "
              f"NEES {nees.mean():.1f}")
        print(f"  family's own error (nearest member) {rms(ep):.2f} mm; the filter against that "
              f"member {rms(ef - ep):.2f} mm; coordinate NEES ({nc} dof) "
              f"{np.mean(nees_c):.0f}")
        print(f"  NEES with the family's error added to S: {np.mean(bumped):.1f}; tip Jacobian "
              f"vs finite differences at the posterior: {np.median(jac):.1e} (median, relative)")
    held = (t >= 23.5) & (t < 30.5)  # the sweep's held bend, between its ramps
    e, tt = r["pts"][held] - r["pts_true"][held], t[held]
    w = 2.0 * np.pi * 0.2  # the sweep's rotation, rad/s
    basis = np.column_stack([np.ones_like(tt)] + [f(k * w * tt) for k in (1, 2, 3)
                                                  for f in (np.sin, np.cos)])
    fit = basis @ np.linalg.lstsq(basis, e, rcond=None)[0]
    print(f"held sweep: share of the error power periodic in the bend direction (harmonics "
          f"0-3 of the rotation): {1.0 - ((e - fit) ** 2).sum() / (e ** 2).sum():.2f}")


def _tipcov(p: np.ndarray, tipc: np.ndarray, nc: int) -> np.ndarray:
    nx = int(round(np.sqrt(p.size)))
    return tipc.T @ p.reshape(nx, nx)[:nc, :nc] @ tipc


def trade(length: float, paths: list[str], overrides: list[str],
          factors: tuple[float, ...] = FACTORS, direction: bool = False) -> None:
    res: dict[float, list[list[tuple[float, float, float]]]] = {k: [] for k in factors}
    table = None
    for path in paths:
        seed = int(re.search(r"_s(\d+)\.npz$", path).group(1))  # type: ignore[union-attr]
        r = dict(np.load(path))
        p = _prepared(["sensing=realistic_arm", f"seed={seed}", *overrides])
        if direction:
            table = sense._table(p, "direction") if table is None else table
            r["C_tab"] = table
        base = p.cfg.sensing.arm_imu
        t = r["t"]
        for k in factors:
            cfg = dataclasses.replace(base, swing_accel=k * base.swing_accel,
                                      bend_accel=k * base.bend_accel,
                                      accel_model=k * base.accel_model,
                                      length_model=k * base.length_model)
            xs, ps, tipcs, tips = replay(r, p, cfg)
            if k == 1.0 and not direction:  # the flown settings: the flown filter
                assert np.array_equal(xs, r["x"]) and np.array_equal(ps, r["p"]), path
            row = []
            for name in ("hover", "figure_eight", "tendon_sweep", "whole"):
                a, b = PHASES[name]
                rows = np.where((t >= a) & (t < b))[0]
                err = tips[rows] - r["pts_true"][rows]
                nees = tip_nees(r, ps, tipcs, tips, rows)
                row.append((float(np.sqrt((err ** 2).sum(1).mean()) / length * 100),
                            float(nees.mean()),
                            float(np.mean((nees > CHI2_2[0]) & (nees < CHI2_2[1])))))
            res[k].append(row)
    print("k | hover: tip RMS % L, NEES, share in 95 % | figure-eight: same | tendon sweep | "
          "whole")
    for k in factors:
        m = np.array(res[k]).mean(0)
        print(f"{k:g} | " + " | ".join(f"{m[j, 0]:.2f} {m[j, 1]:.1f} {m[j, 2]:.2f}"
                                       for j in range(4)))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "record":
        record(args[0], args[1:])
    elif cmd == "records":  # OUT_PREFIX SEED [SEED ...] -- OVERRIDES: one process, seeds in turn
        split = args.index("--") if "--" in args else len(args)
        for s_ in args[1:split]:
            record(f"{args[0]}_s{s_}.npz", [*args[split + 1:], f"seed={s_}"])
            print(f"recorded {args[0]}_s{s_}.npz", flush=True)
    elif cmd == "decompose":
        decompose(args[0])
    elif cmd == "trade":
        split = args.index("--") if "--" in args else len(args)
        trade(float(args[0]), args[1:split], args[split + 1:])
    elif cmd == "direction":  # shape.hinges reads a direction table by its width
        split = args.index("--") if "--" in args else len(args)
        trade(float(args[0]), args[1:split], [],
              tuple(float(k) for k in args[split + 1:]) or (1.0,), direction=True)
    else:
        raise SystemExit(f"unknown command {cmd!r}: record, decompose, trade or direction")
