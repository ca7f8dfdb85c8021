"""The quasi-static shape table over the bend direction (``sensing.shape_table=direction``,
quadarm/sensing/shape.py::direction_table, docs/sensing.md "The table over the bend
direction"): it is the table along +x where the arm bends towards +x, it fits a bend between
two tendons better than the table along +x turned to that direction, and the default (``along``)
leaves a sensed flight and its run id as they were."""

from __future__ import annotations

import copy
import math

import mujoco
import numpy as np
import pytest
from helpers import cfg_of, fly_switch

from quadarm.config import ConfigError
from quadarm.control.tendons import tensions as allocate
from quadarm.model.builder import build
from quadarm.runner import episode, jit, lifecycle, sense
from quadarm.sensing import shape

# The estimator's ramp (20 s: a shorter one lags the equilibrium more), coarser in direction
# and size than its table (41 rows, 24 directions).
RAMP, ROWS, DIRECTIONS = 20.0, 21, 8


@pytest.fixture(scope="module")
def arm() -> tuple:
    """prb12's fixed-base build, its tendon map at a bend direction, and both tables."""
    cfg = cfg_of("scenario=mission")
    fixed = build(cfg.airframe, cfg.arm, cfg.sim, fixed_base=True)
    phi = np.radians(cfg.arm.tendon_angles_deg)

    def pull(mu: float, beta: float) -> np.ndarray:
        return allocate(mu, beta, phi, cfg.arm.tension_max, cfg.control.tendon_map)

    along = shape.quasi_static_table(fixed.model, fixed.tendon_actuators,
                                     lambda mu: pull(mu, 0.0), ramp=RAMP, rows=ROWS)
    over = shape.direction_table(fixed.model, fixed.tendon_actuators, pull,
                                 directions=DIRECTIONS, ramp=RAMP, rows=ROWS)
    return cfg, fixed, pull, along, over


def test_towards_x_the_direction_table_is_the_table_along_x(arm: tuple) -> None:
    # The ramp commanded towards +x (towards tendon 0) is the along-x table's own ramp: for a
    # bend vector along +x both give the same hinge angles, inside and beyond the tables.
    _, fixed, _, along, over = arm
    n = (over.shape[1] - shape.D_COLS) // 2
    assert over.shape == (DIRECTIONS * ROWS, 2 * n + shape.D_COLS) and along.shape[1] == 1 + n
    a, b = np.zeros(2 * n), np.zeros(2 * n)
    for big_a in np.linspace(0.05, 1.2 * along[-1, 0], 9):
        shape.hinges(along, shape.NO_PROFILE, np.array([big_a, 0.0]), a)
        shape.hinges(over, shape.NO_PROFILE, np.array([big_a, 0.0]), b)
        np.testing.assert_allclose(b, a, rtol=0.0, atol=1e-12 * max(1.0, np.abs(a).max()))
    # At each ramp's own direction and grid node the table gives that ramp's recorded bends,
    # along and across the direction, whatever ramp lies beside it.
    for j in range(DIRECTIONS):
        blk = over[j * ROWS:(j + 1) * ROWS]
        own = blk[0, 2 * n + 1]
        co, so = math.cos(own), math.sin(own)
        for r in (ROWS // 2, ROWS - 1):
            shape.hinges(over, shape.NO_PROFILE, blk[r, 0] * np.array([co, so]), b)
            bx, by = -b[1::2], b[0::2]  # each hinge's bend vector (-theta_y, theta_x)
            np.testing.assert_allclose(bx * co + by * so, blk[r, 1:n + 1], atol=1e-12)
            np.testing.assert_allclose(-bx * so + by * co, blk[r, n + 1:2 * n + 1], atol=1e-12)


def _held(fixed, pull, mu: float, beta: float) -> mujoco.MjData:  # noqa: ANN001
    """The fixed-base arm ramped to the command ``mu`` towards ``beta`` (as the tables are,
    hinge damping x10) and held until it settles."""
    m = copy.deepcopy(fixed.model)
    m.dof_damping[:] *= 10.0
    d = mujoco.MjData(m)
    steps = int(round(RAMP / m.opt.timestep))
    for s in range(steps + int(round(8.0 / m.opt.timestep))):
        d.ctrl[fixed.tendon_actuators] = pull(mu * min(1.0, (s + 1) / steps), beta)
        mujoco.mj_step(m, d)
    assert np.abs(d.qvel).max() < 1e-3  # at rest
    return d


def _tip_error(sp, tab, lengths, tip_true, n: int) -> float:  # noqa: ANN001
    """The quasi-static fit of the tendon lengths alone (the torque residual's weight 0) with
    the table ``tab``: its tip's distance from the true tip (m)."""
    nt = shape.n_tendons(sp)
    meas = np.zeros(2 * nt + 6)
    meas[:nt] = lengths
    c, th, work = np.zeros(2), np.zeros(2 * n), np.zeros(shape.W_STRIDE * n)
    shape.estimate(sp, tab, shape.NO_PROFILE, meas, np.array([1e4, 0.0]), 40, c, th, work,
                   np.zeros(shape.scratch_size(0, table=True, tendons=nt)))
    pts = np.zeros((n, 3))
    shape.points(sp, work, pts)
    return float(np.linalg.norm(pts[-1] - tip_true))


def _fits(fixed, pull, along, over, mu: float, beta: float) -> tuple[float, float]:  # noqa: ANN001
    """The tip errors (m) of the two tables' fits of the arm held at ``mu`` towards ``beta``."""
    sp = shape.shape_params(fixed.model)
    n = int(sp[shape.S_N])
    d = _held(fixed, pull, mu, beta)
    th = np.array(d.qpos[shape.hinge_qpos(fixed.model, n)])
    work, out, pts = np.zeros(shape.W_STRIDE * n), np.zeros(shape.n_out(sp)), np.zeros((n, 3))
    shape.forward(sp, th, work, out)
    np.testing.assert_allclose(out[:3], d.ten_length[:3], atol=1e-12)  # MuJoCo's lengths
    shape.points(sp, work, pts)
    tip = pts[-1].copy()
    return (_tip_error(sp, along, d.ten_length[:3], tip, n),
            _tip_error(sp, over, d.ten_length[:3], tip, n))


@pytest.mark.parametrize("deg", [60.0, 180.0])
def test_a_held_large_bend_between_two_tendons_is_fitted_closer(arm: tuple, deg: float) -> None:
    # Tendons at 0, 120, 240 degrees: towards 60 or 180 degrees (between two tendons; between
    # the direction table's ramps at 45 and 90, or on its ramp at 180) the arm bends otherwise
    # than towards a tendon. Held at the command 0.9 (a total bend of about 2.1 rad, the
    # mission's tendon sweep holds 2.1-2.6), its tendon lengths fitted with each table: the
    # direction table's tip is the closer. (At 0.5, about 1.1 rad, the two are within 0.2 mm of
    # each other, either side: docs/sensing.md.)
    cfg, fixed, pull, along, over = arm
    assert list(cfg.arm.tendon_angles_deg) == [0.0, 120.0, 240.0]
    e_along, e_over = _fits(fixed, pull, along, over, 0.9, math.radians(deg))
    assert e_over < e_along, (e_along, e_over)


def test_towards_a_tendon_both_tables_fit_alike(arm: tuple) -> None:
    # Towards +x (tendon 0) the direction table is the along table: the same fit.
    _, fixed, pull, along, over = arm
    e_along, e_over = _fits(fixed, pull, along, over, 0.9, 0.0)
    assert e_over == pytest.approx(e_along, abs=1e-9)


SHORT = ("scenario=disturbance", "scenario.duration=1.2", "scenario.start=0.3",
         "sensing=realistic")


@pytest.mark.slow  # a sensed flight twice (make test's budget; make test-all runs it)
def test_the_default_leaves_a_sensed_flight_and_its_id_unchanged(monkeypatch) -> None:
    # ``along`` (the default) is the table the estimator always used: a flight naming it is the
    # flight without the key, bit for bit, under the same run id; ``direction`` changes the
    # shape estimate and the id, not the vehicle's estimate (the default law does not read the
    # arm's shape).
    monkeypatch.setattr(sense, "SHAPE_TABLE_DIRECTIONS", DIRECTIONS)  # a cheaper table
    (id0, a), (id1, b), (id2, c) = fly_switch(SHORT, {
        "absent": (), "along": ("sensing.shape_table=along",),
        "direction": ("sensing.shape_table=direction",)})
    assert id0 == id1 != id2
    for field in ("qpos", "qvel", "ctrl", "est"):
        assert np.array_equal(getattr(a.log, field), getattr(b.log, field)), field
    ma, mb = {(p, k): v for p, k, v in a.metrics}, {(p, k): v for p, k, v in b.metrics}
    assert ma.keys() == mb.keys()
    assert all(mb[key] == v or (np.isnan(v) and np.isnan(mb[key])) for key, v in ma.items())
    np.testing.assert_array_equal(c.log.est[:, 0:13], a.log.est[:, 0:13])
    assert not np.array_equal(c.log.est[:, 13:], a.log.est[:, 13:])  # the shape errors


@pytest.mark.slow  # numba's compile of the sensed loop: minutes on a busy 2-core machine
@pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")
@pytest.mark.parametrize("preset", ["realistic", "realistic_arm"])
def test_compiled_equals_plain_with_the_direction_table(monkeypatch, preset: str) -> None:
    # The table is read inside the compiled step seam (the quasi-static fit, and the dynamic
    # estimator's bend coordinates and their columns): compiled equals plain Python bit for bit.
    monkeypatch.setattr(sense, "SHAPE_TABLE_DIRECTIONS", DIRECTIONS)
    short = (*SHORT[:3], "scenario.duration=0.5", f"sensing={preset}",
             "sensing.shape_table=direction", "seed=5")
    eps = [episode.run_episode(cfg_of(*short, f"runner.compiled={c}")) for c in ("true", "false")]
    for name in ("qpos", "qvel", "ctrl", "est"):
        assert np.array_equal(getattr(eps[0].log, name), getattr(eps[1].log, name)), name


def test_a_multi_section_arm_has_no_table_either_way() -> None:
    # Per-section constant curvature, no table: the key changes nothing on such an arm.
    tabs = []
    for table in ("along", "direction"):
        p = lifecycle.prepare(cfg_of("arm=ftdcr_v4_calibrated", *SHORT,
                                     f"sensing.shape_table={table}"))
        assert isinstance(p, lifecycle.Prepared)
        tabs.append(sense.records([p], held=False).tab)
    assert tabs[0].shape[1] == 0 and np.array_equal(tabs[0], tabs[1])


def test_an_unknown_table_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError) as err:
        cfg_of("sensing=realistic", "sensing.shape_table=sideways")
    assert str(err.value).startswith("sensing.shape_table=sideways") and "\n" not in str(
        err.value)
