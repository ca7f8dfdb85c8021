"""Why the pick and place diverges at the grasp with the calibrated v4 arm and MuJoCo's default
weld, and not with prb12 (docs/tipspace.md, "The grasp weld"): fly the short pick and place
(legs of 1 s, the shipped weld) to a little past the grasp, then at a state ``dk`` samples after
it, with the commands held,

- the weld rows' true inverse inertia, J M^-1 J^T (1/kg, 1/(kg m^2)), against the diagonal
  MuJoCo scales the weld's regulariser R with (``efc_diagA``: the bodies' ``body_invweight0``);
- the eigenvalues of one physics step's transition (``mjd_transitionFD``), the largest growing
  oscillatory one per 2 ms (the free hub's real drift modes left out), for weld time constants
  ``tcs`` at the 2 ms and 1 ms steps, and at 0.02 s with the weld's impedance lowered so that
  its regulariser matches the true inverse inertia of its lateral rows.

    .venv/bin/python research/grasp_weld_modes.py arm=ftdcr_v4_calibrated
    .venv/bin/python research/grasp_weld_modes.py arm=prb12
"""

from __future__ import annotations

import sys

import mujoco
import numpy as np

from quadarm.api import compose
from quadarm.model.payload import Payload
from quadarm.runner import episode, lifecycle
from quadarm.scenarios import pick_place

SHORT = ["world=pedestal", "scenario=pick_place", "scenario.move_time=1.0",
         "scenario.dwell=0.5", "scenario.hold=0.5", "scenario.tail=0.5"]
TCS = (0.04, 0.02, 0.015, 0.01, 0.007, 0.005, 0.004)


def worst(m: mujoco.MjModel, d: mujoco.MjData) -> tuple[float, float]:
    """The largest |eigenvalue| of the step's transition among the oscillatory ones, per 2 ms,
    and its frequency (Hz)."""
    nx = 2 * m.nv + m.na
    a = np.zeros((nx, nx))
    mujoco.mjd_transitionFD(m, d, 1e-6, 1, a, None, None, None)
    ev = np.linalg.eigvals(a)
    osc = ev[np.abs(np.angle(ev)) > 1e-3]
    i = int(np.argmax(np.abs(osc)))
    dt = m.opt.timestep
    return float(abs(osc[i]) ** (0.002 / dt)), float(abs(np.angle(osc[i])) / (2 * np.pi * dt))


def main(over: list[str], dk: int = 5) -> None:
    p = lifecycle.prepare(compose([*SHORT, *over]))
    assert isinstance(p, lifecycle.Prepared)
    out = episode.fly(p)
    m = p.built.model
    k, _ = pick_place.grasp_sample(p.plan, out.log, Payload.of(m).qpos_adr)
    assert k is not None and k + dk < len(out.log.t), "no grasp, or the flight ended before"
    weld = m.equality("payload_grasp").id
    print(f"{over}: grasp at {out.log.t[k]:.3f} s; the flight: {out.failure or 'flew'}")
    d = mujoco.MjData(m)
    m.opt.jacobian = mujoco.mjtJacobian.mjJAC_DENSE  # to read efc_J; the physics is the same
    solref, solimp = m.eq_solref[weld].copy(), m.eq_solimp[weld].copy()

    def at(kk: int) -> None:
        d.qpos[:] = out.log.qpos[kk]
        d.qvel[:] = out.log.qvel[kk]
        d.ctrl[:] = out.log.ctrl[kk]
        d.eq_active[:] = 0
        d.eq_active[weld] = 1
        mujoco.mj_forward(m, d)

    at(k + dk)
    rows = [i for i in range(d.nefc)
            if d.efc_type[i] == mujoco.mjtConstraint.mjCNSTR_EQUALITY and d.efc_id[i] == weld]
    jac = d.efc_J.reshape(d.nefc, m.nv)[rows].copy()
    x = np.zeros_like(jac)
    mujoco.mj_solveM(m, d, x, jac)
    print("weld rows (x y z, rx ry rz): true J M^-1 J^T", np.round(np.diag(jac @ x.T), 1))
    print("                             MuJoCo's diagA ", np.round(d.efc_diagA[rows], 1))
    for dt in (0.002, 0.001):
        m.opt.timestep = dt
        for tc in TCS:
            m.eq_solref[weld] = [tc, 1.0]
            at(k + dk)
            g, f = worst(m, d)
            print(f"dt={dt} tc={tc:.3f}: worst oscillatory |lambda| per 2 ms {g:.5f} at {f:.2f} Hz")
    m.opt.timestep = 0.002
    m.eq_solref[weld] = solref
    m.eq_solimp[weld][:2] = [0.44, 0.44]
    at(k + dk)
    g, f = worst(m, d)
    print(f"dt=0.002 tc={solref[0]:.3f} impedance 0.44: {g:.5f} at {f:.2f} Hz")
    m.eq_solimp[weld] = solimp


if __name__ == "__main__":
    main(sys.argv[1:])
