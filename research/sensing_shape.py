"""Offline arm-shape error during the mission's tendon sweep (issue 19's target: tip error
<= 3 % of L with the default preset).

Flies ``scenario=mission`` with today's code (exact state feedback), reads the logged states
and commands back from Parquet, and for every ``--every``-th step of the tendon sweep
re-creates what the arm's sensors would read: MuJoCo's ``ten_length`` and flange force/torque
sensor from ``mj_forward`` at the logged state and commands, then the sensing preset's encoder
quantisation, noise and bias and the force/torque sensor's noise and bias (seeded per trial as in
the loop). Each shape estimator of ``quadarm.sensing.shape`` then estimates the hinge angles, and
the error is measured at the tip site and at every hinge, in % of the backbone length L.

    .venv/bin/python research/sensing_shape.py [--out DIR] [--preset realistic] [--every 10]
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import pandas as pd

from quadarm.api import compose
from quadarm.config import MISSION_PHASES
from quadarm.control.tendons import tensions as allocate
from quadarm.model import names
from quadarm.model.builder import build
from quadarm.model.chain import chain_of
from quadarm.results import io
from quadarm.runner.study import run
from quadarm.sensing import config as sc
from quadarm.sensing import noise, shape
from quadarm.sensing.sensors import channel_step


def estimators(cfg, sp: np.ndarray, n: int) -> dict[str, tuple[np.ndarray, np.ndarray, bool]]:  # noqa: ANN001
    """name -> (table, profiles, use the torque)."""
    fixed = build(cfg.airframe, cfg.arm, cfg.sim, fixed_base=True)
    phi = np.radians(cfg.arm.tendon_angles_deg)
    table = shape.quasi_static_table(
        fixed.model, fixed.tendon_actuators,
        lambda mu: allocate(mu, 0.0, phi, cfg.arm.tension_max, cfg.control.tendon_map))
    m = fixed.model
    stiff = np.array([m.jnt_stiffness[m.joint(names.link_joint(k, "x")).id] for k in range(n)])
    lin = shape.profiles(sp, stiff, float(np.linalg.norm(cfg.sim.gravity)))
    return {"pcc": (shape.NO_TABLE, shape.uniform_profile(n), False),
            "linear": (shape.NO_TABLE, lin[:1], False),
            "linear+wrench": (shape.NO_TABLE, lin, True),
            "quasi-static": (table, shape.NO_PROFILE, False),
            "quasi-static+wrench": (table, lin[1:], True)}


@dataclass
class Sweep:
    """The nominal mission's time series and the flying model (with the flange sensor) it
    replays into: the shape parameters ``sp``, ``n`` links, the hinges' qpos addresses
    ``adr`` and time-series columns ``cols``, and the tendon sweep's samples ``sweep`` from its
    start time ``start`` (s)."""

    cfg: Any
    ts: pd.DataFrame
    built: Any
    m: mujoco.MjModel
    d: mujoco.MjData
    sp: np.ndarray
    n: int
    adr: np.ndarray
    cols: list[str]
    sweep: pd.DataFrame
    start: float


def mission_sweep(out: Path) -> Sweep:
    """:class:`Sweep` of the nominal mission, flown into ``out`` unless it is there."""
    cfg = compose(["scenario=mission"])
    if not (out / io.TIMESERIES).exists():
        run(cfg, out)
    ts = io.read_timeseries(out)
    built = build(cfg.airframe, cfg.arm, cfg.sim, flange_sensor=True)
    m = built.model
    sp = shape.shape_params(m)
    n = int(sp[shape.S_N])
    i = MISSION_PHASES.index("tendon_sweep")
    edges = np.concatenate([[0.0], np.cumsum(cfg.scenario.phase_times)])
    sweep = ts[(ts.t >= edges[i] - 1e-9) & (ts.t < edges[i + 1] - 1e-9)]
    return Sweep(cfg, ts, built, m, mujoco.MjData(m), sp, n, shape.hinge_qpos(m, n),
                 [names.link_joint(k, a) for k in range(n) for a in "xy"], sweep,
                 float(edges[i]))


def measure(out: Path, preset: str, every: int, seed: int) -> pd.DataFrame:
    sw = mission_sweep(out)
    cfg, ts, built, m, d = sw.cfg, sw.ts, sw.built, sw.m, sw.d
    sp, n, adr, cols = sw.sp, sw.n, sw.adr, sw.cols
    dofs = [int(m.jnt_dofadr[m.joint(c).id]) for c in cols]
    scfg = sc.preset(preset)
    sc.check(scfg, cfg.sim.timestep)
    dt = cfg.sim.timestep
    ch = noise.draw(scfg, seed, float(ts.t.iloc[-1]), dt)
    enc, ft = ch["encoder"], ch["force_torque"]
    if enc.delay or ft.delay or enc.period != 1 or ft.period != 1:
        raise SystemExit("this offline measurement samples every step without latency")
    rows = sw.sweep.iloc[::every]
    length = chain_of(cfg.arm).length
    q = max(scfg.encoder.resolution, 1e-9)
    sig_l = math.sqrt(scfg.encoder.noise ** 2 + q * q / 12.0)
    w_t = 1.0 / max(scfg.force_torque.torque_noise, 1e-9)
    est = estimators(cfg, sp, n)
    state = {k: np.zeros(2 * p.shape[0] + (2 if len(t) else 0)) for k, (t, p, _) in est.items()}
    work, pts_t, pts_e = np.zeros(12 * n), np.zeros((n, 3)), np.zeros((n, 3))
    fwd, lens, wrench = np.zeros(shape.N_OUT), np.zeros(3), np.zeros(6)
    out_rows = []
    for j, (_, row) in enumerate(rows.iterrows()):
        step = int(round(row.t / dt))
        d.qpos[:7] = [row.x, row.y, row.z, row.qw, row.qx, row.qy, row.qz]
        d.qvel[:6] = [row.vx, row.vy, row.vz, row.wx, row.wy, row.wz]
        for a, dof, c in zip(adr, dofs, cols, strict=True):
            d.qpos[a], d.qvel[dof] = row[c], row[c + "_vel"]
        for k, a in enumerate(built.rotor_actuators):
            d.ctrl[a] = row[f"rotor{k}_n"]
        for k, a in enumerate(built.tendon_actuators):
            d.ctrl[a] = row[f"tension_{names.TENDON_LETTERS[k]}_n"]
        mujoco.mj_forward(m, d)
        th_true = d.qpos[adr].copy()
        fa, ta = built.flange_force_adr, built.flange_torque_adr
        truth_w = np.concatenate([d.sensordata[fa:fa + 3], d.sensordata[ta:ta + 3]])
        channel_step(step, d.ten_length[:3].copy(), enc.white, enc.bias, enc.ring, enc.prm, lens)
        channel_step(step, truth_w, ft.white, ft.bias, ft.ring, ft.prm, wrench)
        meas = np.concatenate([lens, wrench, d.ctrl[built.tendon_actuators]])
        shape.forward(sp, th_true, work, fwd)
        shape.points(sp, work, pts_t)
        for name, (tab, prof, torque) in est.items():
            c = state[name]
            th = np.zeros(2 * n)
            scratch = np.zeros(shape.scratch_size(prof.shape[0], len(tab) > 0))
            shape.estimate(sp, tab, prof, meas, np.array([1.0 / sig_l, w_t if torque else 0.0]),
                           20 if j == 0 else 6, c, th, work, scratch)
            shape.points(sp, work, pts_e)
            err = np.linalg.norm(pts_e - pts_t, axis=1) / length * 100.0
            out_rows.append((name, row.t, err[-1], err.max()))
    return pd.DataFrame(out_rows, columns=["estimator", "t", "tip_pct", "max_pct"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("outputs/sensing_shape"))
    ap.add_argument("--preset", default="realistic")
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    frame = measure(args.out, args.preset, args.every, args.seed)
    t0 = frame.t.min()
    frame["second"] = np.floor(frame.t - t0).astype(int)
    summary = frame.groupby("estimator").agg(
        tip_mean=("tip_pct", "mean"), tip_median=("tip_pct", "median"),
        tip_rms=("tip_pct", lambda v: float(np.sqrt(np.mean(v ** 2)))),
        tip_max=("tip_pct", "max"), along_max=("max_pct", "max"))
    print(summary.round(2).to_string())
    print("\ntip error (% L) per second of the sweep, mean:")
    print(frame.pivot_table(index="second", columns="estimator", values="tip_pct",
                            aggfunc="mean").round(2).to_string())


if __name__ == "__main__":
    main()
