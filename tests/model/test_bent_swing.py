"""The swing modes' dynamics linearised about the bent arm (quadarm/sensing/armfilter.py::
bent_swing_table, bent_model; docs/sensing.md, "The swing about the bend"): at no bend they are
the hanging chain's, and at a held bend the stiffness they give the modes is MuJoCo's own
there, not the hanging chain's."""

from __future__ import annotations

import copy
import math

import mujoco
import numpy as np
import pytest
from helpers import cfg_of

from quadarm.control.tendons import tensions as allocate
from quadarm.model.builder import build
from quadarm.sensing import armfilter, shape
from quadarm.sensing import config as sc

# A coarse table: two commanded directions, five rows, the estimator's 20 s ramp (a shorter one
# lags the equilibrium more: 4 s gives 10 % at the held bend below).
DIRECTIONS, ROWS, RAMP, MODES = 2, 5, 20.0, 4


def _arm(ramp: float, rows: int) -> tuple:
    """prb12's fixed-base build, its tendon map, the hanging modes and a bent swing table of
    ``rows`` rows per ramp of ``ramp`` s."""
    cfg = cfg_of("scenario=mission")
    fixed = build(cfg.airframe, cfg.arm, cfg.sim, fixed_base=True)
    ang = np.radians(cfg.arm.tendon_angles_deg)

    def pull(mu: float, beta: float) -> np.ndarray:
        return allocate(mu, beta, ang, cfg.arm.tension_max, cfg.control.tendon_map)

    ctrl = np.zeros(fixed.model.nu)
    ctrl[fixed.tendon_actuators] = pull(0.0, 0.0)
    hanging = armfilter.swing_model(fixed.model, MODES, ctrl)
    table = armfilter.bent_swing_table(fixed.model, fixed.tendon_actuators, pull, hanging[0],
                                       directions=DIRECTIONS, rows=rows, ramp=ramp)
    return fixed, pull, hanging, table


@pytest.fixture(scope="module")
def cheap() -> tuple:
    """A short ramp of three rows: enough for the straight arm's row (a tenth of a second)."""
    return _arm(0.5, 3)


@pytest.fixture(scope="module")
def arm() -> tuple:
    return _arm(RAMP, ROWS)


def _blocks(row: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    o = armfilter.B_DATA
    return (row[o:o + m * m].reshape(m, m), row[o + m * m:o + 2 * m * m].reshape(m, m),
            row[o + 2 * m * m:o + 2 * m * m + m * armfilter.N_U].reshape(m, armfilter.N_U))


def test_at_no_bend_the_table_is_the_hanging_chain(cheap: tuple) -> None:
    # Row 0 of every ramp is the straight arm at the tensions of no bend: swing_model's
    # projected dynamics; bent_model there writes filter_arrays' own F, G, Q and accelerations
    # and leaves the bend's and the biases' blocks as they were.
    fixed, _, (phi, aq, av, bg), table = cheap
    rows = table.shape[0] // DIRECTIONS
    assert table.shape == (DIRECTIONS * rows, armfilter.B_DATA + 2 * MODES ** 2
                           + MODES * armfilter.N_U)
    for j in range(DIRECTIONS):
        a, v, b = _blocks(table[j * rows], MODES)
        np.testing.assert_allclose(a, aq, rtol=0, atol=1e-9 * np.abs(aq).max())
        np.testing.assert_allclose(v, av, rtol=0, atol=1e-9 * np.abs(av).max())
        np.testing.assert_allclose(b, bg, rtol=0, atol=1e-9 * np.abs(bg).max())
    cfg = sc.ArmImuConfig(**{**sc.BMI088.__dict__, "rate": 100.0, "at": [0.5, 1.0]})
    f, g, q, cdd, _ = armfilter.filter_arrays(phi, aq, av, bg, cfg, 2, 0.01)
    bt = armfilter.bent_filter_table(table, phi, cfg, 2, 0.01)
    fm, gm, qm, cm = (np.full_like(x, 7.0) for x in (f, g, q, cdd))
    nb, nc = 2, 2 + MODES
    sel = np.r_[nb:nc, nc + nb:2 * nc]
    blk = np.zeros(bt.shape[1] - armfilter.B_DATA)
    armfilter.bent_model(bt, 0.0, 0.0, nb, fm, gm, qm, cm, blk)
    for got, want in ((fm, f), (qm, q)):
        np.testing.assert_allclose(got[np.ix_(sel, sel)], want[np.ix_(sel, sel)], rtol=0,
                                   atol=1e-9 * np.abs(want).max())
        keep = np.ones(got.shape, bool)
        keep[np.ix_(sel, sel)] = False
        assert np.all(got[keep] == 7.0)  # the rest is the caller's, untouched
    np.testing.assert_allclose(gm[sel], g[sel], rtol=0, atol=1e-9 * np.abs(g).max())
    cols = np.r_[sel, f.shape[0]:f.shape[0] + armfilter.N_U]  # the modes' own and the inputs
    np.testing.assert_allclose(cm[nb:nc][:, cols], cdd[nb:nc][:, cols], rtol=0,
                               atol=1e-9 * np.abs(cdd).max())


@pytest.mark.slow  # two 20 s ramps of the chain: about 10 s on a busy 2-core machine
def test_at_a_held_bend_the_modes_stiffness_is_mujocos_own(arm: tuple) -> None:
    # prb12 held at a large bend (command 0.6 towards tendon 0) until at rest: MuJoCo's own
    # accelerations for a small displacement along each hanging mode, projected on the modes
    # with the mass matrix there, are the bent table's stiffness at that bend (within the
    # table's coarse rows and its ramp's lag behind the equilibrium), and not the hanging
    # chain's.
    fixed, pull, (phi, aq_h, _, _), table = arm
    model = copy.deepcopy(fixed.model)
    model.dof_damping[:] *= 10.0  # settles sooner; damping does not move the equilibrium
    d = mujoco.MjData(model)
    d.ctrl[fixed.tendon_actuators] = pull(0.6, 0.0)
    for _ in range(int(6.0 / model.opt.timestep)):
        mujoco.mj_step(model, d)
    n = phi.shape[0] // 2
    adr = shape.hinge_qpos(model, n)
    q_eq, ctrl = d.qpos.copy(), d.ctrl.copy()
    ax, ay = -q_eq[adr[1::2]].sum(), q_eq[adr[0::2]].sum()  # the bend vector b = (-ty, tx)
    assert math.hypot(ax, ay) > 1.0  # a large bend, rad
    lin = copy.deepcopy(fixed.model)
    lin.dof_frictionloss[:] = 0.0
    lin.tendon_frictionloss[:] = 0.0
    dl = mujoco.MjData(lin)
    dl.ctrl[:] = ctrl
    dof = np.array([lin.jnt_dofadr[j] for j in shape.hinge_joints(lin, n)])

    def qacc(q: np.ndarray) -> np.ndarray:
        dl.qpos[:], dl.qvel[:] = q, 0.0
        mujoco.mj_forward(lin, dl)
        return dl.qacc[dof].copy()

    dl.qpos[:] = q_eq
    mujoco.mj_forward(lin, dl)
    mass = np.zeros((lin.nv, lin.nv))
    mujoco.mj_fullM(lin, dl, mass)
    mh = mass[np.ix_(dof, dof)]
    w = np.linalg.solve(phi.T @ mh @ phi, phi.T @ mh)
    eps = 1e-5
    own = np.zeros((MODES, MODES))
    for k in range(MODES):
        e = np.zeros(lin.nq)
        e[dof] = eps * phi[:, k]
        own[:, k] = w @ (qacc(q_eq + e) - qacc(q_eq - e)) / (2 * eps)
    cfg = sc.ArmImuConfig(**{**sc.BMI088.__dict__, "rate": 100.0, "at": [0.5, 1.0]})
    bt = armfilter.bent_filter_table(table, phi, cfg, 2, 0.01)
    nc, nx = 2 + MODES, 2 * (2 + MODES) + 12
    fm, gm, qm = np.zeros((nx, nx)), np.zeros((nx, armfilter.N_U)), np.zeros((nx, nx))
    cdd = np.zeros((nc, nx + armfilter.N_U))
    armfilter.bent_model(bt, ax, ay, 2, fm, gm, qm, cdd, np.zeros(bt.shape[1] - 3))
    bent = cdd[2:nc, 2:nc]
    err_bent = np.abs(bent - own).max() / np.abs(own).max()
    err_hanging = np.abs(aq_h - own).max() / np.abs(own).max()
    # Measured: 2.3 % against 23 % (5 rows; 3 rows: 5.2 %, the rows' linear interpolation).
    assert err_bent < 0.05 and err_bent < 0.2 * err_hanging, (err_bent, err_hanging)
