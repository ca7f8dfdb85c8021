"""The tip map, its inverse and the split law (quadarm.control.tipspace, docs/tipspace.md):
checked against closed forms, against the model stepped to rest and against its own inverse."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import mujoco
import numpy as np
import pytest
from helpers import cfg_of

from quadarm.config import AirframeConfig, ArmConfig, SimConfig
from quadarm.control import tipspace as ts
from quadarm.control.tendons import tensions
from quadarm.model import build, build_spec, names
from quadarm.runner.episode import run_episode

PHI = np.radians([0.0, 120.0, 240.0])


@pytest.fixture(scope="module")
def tipmap(tmp_path_factory: pytest.TempPathFactory) -> ts.TipMap:
    folder = tmp_path_factory.mktemp("tipmap")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ts.CACHE_ENV, str(folder))
        return ts.tip_map(AirframeConfig(), ArmConfig(), SimConfig())


def _wrap(a: float) -> float:
    return (a + math.pi) % (2.0 * math.pi) - math.pi


def _split(tipmap: ts.TipMap, mode: int, target: np.ndarray, hub: np.ndarray,
           rot: np.ndarray | None = None, g_body: np.ndarray | None = None,
           tol: float = 0.01) -> np.ndarray:
    out = np.empty(7)
    ts.split(mode, tipmap.knots, tipmap.coef, tipmap.g0, tipmap.mu_cap, target, hub,
             np.eye(3) if rot is None else rot, tipmap.g0 if g_body is None else g_body, tol,
             np.empty((3, ts.N_CHAN)), out)
    return out


def test_inverse_returns_the_bend(tipmap: ts.TipMap) -> None:
    """20 random bends: the forward map's tip, inverted, gives back the bend within 1e-3.
    mu starts at 0.05: at the straight arm beta is undefined (every beta is the same tip)."""
    rng = np.random.default_rng(18)
    for _ in range(20):
        mu, beta = rng.uniform(0.05, 1.0), rng.uniform(0.0, 2.0 * math.pi)
        mu_back, beta_back, residual = tipmap.inverse(tipmap.tip(mu, beta))
        assert abs(mu_back - mu) < 1e-3
        assert abs(_wrap(beta_back - beta)) < 1e-3
        assert np.linalg.norm(residual) < 1e-6


def test_straight_arm_hangs_at_the_modelled_offset(tipmap: ts.TipMap) -> None:
    """docs/model.md section 1: flange depth + the links + the tip ball's radius below the hub."""
    frame, arm = AirframeConfig(), ArmConfig()
    depth = frame.flange_depth + arm.segments * arm.segment_length + arm.tip_radius
    np.testing.assert_allclose(tipmap.hanging(), [0.0, 0.0, -depth], atol=1e-12)
    for beta in np.linspace(0.0, 2.0 * math.pi, 7):
        np.testing.assert_allclose(tipmap.tip(0.0, beta), tipmap.hanging(), atol=1e-12)


def test_map_is_where_the_model_comes_to_rest(tipmap: ts.TipMap) -> None:
    """Off the grid, the interpolant agrees with the fixed-base model stepped to rest (an
    independent route: the dynamics with ten times the hinge damping, same equilibria)."""
    built = build(AirframeConfig(), ArmConfig(), SimConfig(), fixed_base=True)
    model = built.model
    model.dof_damping[:] *= 10.0  # damping moves no equilibrium; it only shortens the settling
    data = mujoco.MjData(model)
    for mu, beta in ((0.37, 0.41), (0.83, 2.9), (0.61, 4.7)):
        mujoco.mj_resetData(model, data)
        data.ctrl[built.tendon_actuators] = tensions(mu, beta, PHI, ArmConfig().tension_max)
        for _ in range(10000):
            mujoco.mj_step(model, data)
        assert np.abs(data.qvel).max() < 1e-5
        rest = data.site_xpos[built.tip_site] - data.xpos[built.quad_body]
        assert np.linalg.norm(tipmap.tip(mu, beta) - rest) < 1e-3


def test_tilted_gravity_is_first_order(tipmap: ts.TipMap) -> None:
    """Apparent gravity tilted by 2.5 and 5 deg: the linear correction T0 + G (g_B - g0) is
    within 5 % of the tilt's effect and its error grows quadratically (ratio about 4)."""
    built = build(AirframeConfig(), ArmConfig(), SimConfig(), fixed_base=True)
    model, data = built.model, mujoco.MjData(built.model)
    mu, beta = 0.5, 0.3
    data.ctrl[built.tendon_actuators] = tensions(mu, beta, PHI, ArmConfig().tension_max)
    errors = []
    for deg in (2.5, 5.0):
        th = math.radians(deg)
        g = 9.81 * np.array([0.0, math.sin(th), -math.cos(th)])
        model.opt.gravity[:] = g
        ts.equilibrium(model, data, model.qpos0)
        rest = data.site_xpos[built.tip_site] - data.xpos[built.quad_body]
        shift = np.linalg.norm(rest - tipmap.tip(mu, beta))
        errors.append(np.linalg.norm(rest - tipmap.tip(mu, beta, g)))
        assert errors[-1] < 0.05 * shift
    assert 3.0 < errors[1] / errors[0] < 5.0


def test_planned_attitude_puts_apparent_gravity_on_the_axis() -> None:
    """A vehicle tilted along its acceleration (the controller's b3) feels gravity along its
    own -z with magnitude |a - g|."""
    g = np.array([0.0, 0.0, -9.81])
    rot, gb = np.empty((3, 3)), np.empty(3)
    for acc, yaw in (((2.0, -1.0, 0.5), 0.3), ((0.0, 3.0, -1.0), -2.0)):
        a = np.array(acc)
        ts.planned_attitude(a, yaw, g, rot)
        np.testing.assert_allclose(rot.T @ rot, np.eye(3), atol=1e-12)
        ts.apparent_gravity(rot, a, g, gb)
        np.testing.assert_allclose(gb, [0.0, 0.0, -np.linalg.norm(a - g)], atol=1e-12)


def test_vehicle_mode_is_the_target_minus_the_hanging_offset(tipmap: ts.TipMap) -> None:
    rng = np.random.default_rng(3)
    for _ in range(5):
        target, hub = rng.uniform(-1, 1, 3) + [0, 0, 1.5], rng.uniform(-1, 1, 3) + [0, 0, 1.5]
        out = _split(tipmap, ts.VEHICLE, target, hub)
        np.testing.assert_allclose(out[:3], target - tipmap.hanging(), atol=1e-12)
        assert out[3] == 0.0 and out[5] == 1.0


def test_coordinated_moves_the_hub_less(tipmap: ts.TipMap) -> None:
    """Targets within 10 cm of the hanging tip: ``coordinated`` never moves the hub more than
    ``vehicle``, and strictly less whenever the target is off the arm's axis (bending from the
    straight arm moves the tip sideways at first order and up only at second order); the tip
    still lands on the target (hub + R T)."""
    rng = np.random.default_rng(7)
    hub = np.array([0.2, -0.1, 1.5])
    rot = np.empty((3, 3))
    ts.planned_attitude(np.zeros(3), 0.4, np.array([0.0, 0.0, -9.81]), rot)
    for _ in range(40):
        offset = rng.normal(size=3)
        offset *= rng.uniform(0.01, 0.10) / np.linalg.norm(offset)
        target = hub + rot @ tipmap.hanging() + offset
        veh = _split(tipmap, ts.VEHICLE, target, hub, rot)
        crd = _split(tipmap, ts.COORDINATED, target, hub, rot)
        travel_v, travel_c = np.linalg.norm(veh[:3] - hub), np.linalg.norm(crd[:3] - hub)
        assert travel_c <= travel_v + 1e-12
        lateral = np.linalg.norm((rot.T @ offset)[:2])
        if lateral > 0.01:
            assert travel_c < travel_v - 1e-4
        tip = crd[:3] + rot @ tipmap.tip(crd[3], crd[4])
        np.testing.assert_allclose(tip, target, atol=1e-9)


def test_arm_mode_holds_the_hub_and_flags_the_unreachable(tipmap: ts.TipMap) -> None:
    hub = np.array([0.0, 0.0, 1.5])
    on_surface = hub + tipmap.tip(0.6, 1.0)
    out = _split(tipmap, ts.ARM, on_surface, hub)
    np.testing.assert_array_equal(out[:3], hub)
    assert out[5] == 1.0 and out[6] < 1e-9
    below = hub + tipmap.hanging() + [0.0, 0.0, -0.05]  # the straight arm is its longest
    out = _split(tipmap, ts.ARM, below, hub)
    assert out[5] == 0.0 and out[6] == pytest.approx(0.05, abs=1e-9)


def _level_tips(tipmap: ts.TipMap, mus: np.ndarray, betas: np.ndarray) -> np.ndarray:
    """The interpolant's tips (n, 3) at level gravity, evaluated in numpy (independently of
    the scalar :func:`quadarm.control.tipspace.map_eval`)."""
    knots, coef = tipmap.knots, tipmap.coef
    i = np.clip(np.searchsorted(knots, mus, side="right") - 1, 0, len(knots) - 2)
    t = (mus - knots[i])[:, None, None]
    c = coef[:, i, :3, :]
    poly = ((c[0] * t + c[1]) * t + c[2]) * t + c[3]  # (n, 3, n_harm)
    h = np.arange(coef.shape[3])
    k = (h + 1) // 2
    basis = np.where(h % 2 == 1, np.cos(k * betas[:, None]), np.sin(k * betas[:, None]))
    basis[:, 0] = 1.0
    return np.einsum("nch,nh->nc", poly, basis)


def test_inverse_is_never_beaten_by_a_grid_search(tipmap: ts.TipMap) -> None:
    """Targets anywhere within 30 cm of the hanging tip, most outside the workspace: no bend of
    a 101 x 180 grid over the whole disk mu <= 1 comes nearer than the inverse's bend (the
    solver neither stops on a local minimum here nor stalls on the boundary mu = 1)."""
    mus, betas = np.meshgrid(np.linspace(0.0, 1.0, 101),
                             np.linspace(0.0, 2.0 * math.pi, 180, endpoint=False))
    grid = _level_tips(tipmap, mus.ravel(), betas.ravel())
    np.testing.assert_allclose(grid[7], tipmap.tip(mus.ravel()[7], betas.ravel()[7]), atol=1e-12)
    rng = np.random.default_rng(12)
    for _ in range(40):
        offset = rng.normal(size=3)
        offset *= 0.3 * rng.uniform() ** (1 / 3) / np.linalg.norm(offset)
        target = tipmap.hanging() + offset
        miss = np.linalg.norm(tipmap.inverse(target)[2])
        assert miss <= np.linalg.norm(grid - target, axis=1).min() + 1e-9


def test_inverse_on_the_axis(tipmap: ts.TipMap) -> None:
    """Targets straight above the hanging tip: close above it the straight arm is nearest; far
    above it (beyond the bowl's radius of curvature at its bottom) a ring of bent tips is
    nearer, and the inverse finds it rather than stopping on the axis."""
    for dz in (0.0, 0.05):
        mu, _, residual = tipmap.inverse(tipmap.hanging() + [0.0, 0.0, dz])
        assert mu < 1e-6 and np.linalg.norm(residual) == pytest.approx(dz, abs=1e-9)
    mu, beta, residual = tipmap.inverse(tipmap.hanging() + [0.0, 0.0, 0.2])
    assert mu > 0.5 and np.linalg.norm(residual) < 0.2 - 0.01
    np.testing.assert_allclose(residual, tipmap.tip(mu, beta) - tipmap.hanging() - [0, 0, 0.2],
                               atol=1e-12)


@pytest.mark.slow  # compiles the planner's loop (make test's budget; make test-all runs it)
def test_compiled_plan_runs_the_same_source(tipmap: ts.TipMap) -> None:
    """The planner's loop compiled by numba gives the plain function's numbers, in every mode,
    for tilted hubs under their apparent gravity; each row is :func:`split` of its sample."""
    numba = pytest.importorskip("numba")
    compiled = numba.njit(cache=True)(ts.split_path)
    rng = np.random.default_rng(5)
    n = 4
    hubs = rng.uniform(-0.5, 0.5, (n, 3)) + [0.0, 0.0, 1.5]
    targets = hubs + tipmap.hanging() + rng.uniform(-0.08, 0.08, (n, 3))
    acc = rng.uniform(-2.0, 2.0, (n, 3))
    g = np.array([0.0, 0.0, -9.81])
    rots, gbs = np.empty((n, 3, 3)), np.empty((n, 3))
    for k in range(n):
        ts.planned_attitude(acc[k], 0.3 * k, g, rots[k])
        ts.apparent_gravity(rots[k], np.zeros(3), g, gbs[k])  # the tilted hub, not accelerating
    for mode, code in ts.MODES.items():
        plain = tipmap.plan(mode, targets, hubs, rots, gbs)
        fast = tipmap.plan(mode, targets, hubs, rots, gbs, kernel=compiled)
        np.testing.assert_allclose(fast, plain, rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(plain[1], _split(tipmap, code, targets[1], hubs[1], rots[1],
                                                       gbs[1]))


def test_cache_key_and_reuse(tipmap: ts.TipMap, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The key changes with the arm's structure and not otherwise; a stored map is read, not
    solved again (a marked copy under the key comes back marked)."""
    frame, sim = AirframeConfig(), SimConfig()

    def key(arm: ArmConfig, mapping: str = "balanced") -> str:
        return ts.map_key(build(frame, arm, sim, fixed_base=True).xml(), mapping,
                          ts.GRID_MU, ts.GRID_BETA)

    assert key(ArmConfig()) == tipmap.key
    assert key(replace(ArmConfig(), stiffness=0.07)) != tipmap.key
    assert key(ArmConfig(), "legacy") != tipmap.key
    monkeypatch.setenv(ts.CACHE_ENV, str(tmp_path))
    marked = tipmap.samples.copy()
    marked[:, :, 2] += 1.0
    np.savez(tmp_path / f"tipmap-{tipmap.key}.npz", knots=tipmap.knots, samples=marked)
    again = ts.tip_map(frame, ArmConfig(), sim)
    np.testing.assert_allclose(again.hanging(), tipmap.hanging() + [0.0, 0.0, 1.0], atol=1e-12)


def test_split_accounts_for_a_tilted_hub(tipmap: ts.TipMap) -> None:
    """A hub held tilted by 5 deg (the airframe welded at that attitude): the bend that ``arm``
    mode computes with the hub's attitude and apparent gravity puts the model's resting tip
    within 3 mm of the target; planned as if gravity were along the hub's axis, it misses by
    more than 2 cm (the soft arm swings towards gravity almost like a pendulum)."""
    th = math.radians(5.0)
    quat = [math.cos(th / 2), math.sin(th / 2), 0.0, 0.0]
    spec = build_spec(AirframeConfig(), ArmConfig(), SimConfig(), fixed_base=True)
    spec.body(names.QUAD_BODY).quat = quat
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    hub, rot = data.xpos[1].copy(), data.xmat[1].reshape(3, 3).copy()
    g = np.asarray(SimConfig().gravity, dtype=float)
    g_body = rot.T @ g
    target = hub + rot @ tipmap.tip(0.55, 2.2, g_body)
    tip_site = model.site(names.TIP_SITE).id
    actuators = [model.actuator(names.tendon_actuator(i)).id for i in range(3)]
    misses = []
    for gb in (g_body, tipmap.g0):
        out = _split(tipmap, ts.ARM, target, hub, rot, gb, tol=0.05)
        data.ctrl[:] = 0.0
        data.ctrl[actuators] = tensions(out[3], out[4], PHI, ArmConfig().tension_max)
        ts.equilibrium(model, data, model.qpos0)
        misses.append(np.linalg.norm(data.site_xpos[tip_site] - target))
    assert misses[0] < 0.003
    assert misses[1] > 0.02


def test_plan_refuses_an_unknown_mode(tipmap: ts.TipMap) -> None:
    with pytest.raises(ValueError, match="control.tip_mode=hub"):
        tipmap.plan("hub", np.zeros(3), np.zeros(3))


def test_map_holds_in_hovering_flight(tipmap: ts.TipMap) -> None:
    """The free-flying vehicle hovering with a held bend (``scenario=workspace``, 8 s): over
    the last second the tip, read in the hub frame, is where the fixed-base map says, within
    1 mm (the hover's apparent gravity is the level one; the arm has stopped swinging)."""
    mu, beta = 0.8, 1.0
    ep = run_episode(cfg_of("scenario=workspace", f"scenario.mu={mu}",
                            f"scenario.beta_deg={math.degrees(beta)}", "scenario.duration=8"))
    assert ep.status == "ok" and ep.log is not None
    last = ep.log.t >= ep.log.t[-1] - 1.0
    measured = ep.log.tip_body()[last].mean(axis=0)
    assert np.linalg.norm(measured - tipmap.tip(mu, beta)) < 1e-3
