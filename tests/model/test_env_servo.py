"""The environments with servo-driven tendons (``arm.actuation=displacement``, the ``ftdcr_v4``
presets' default): tendon actions are length commands on the range of
:func:`quadarm.envs.core.servo_range`, the servo's backlash acts on them, ``controller_action()``
reproduces the command line, the vector environment row for row, Gymnasium's checker."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

from helpers import assert_rows_follow_singles  # noqa: E402

import quadarm.envs  # noqa: E402,F401 - registers the ids
from quadarm.config.sections import servo_driven  # noqa: E402
from quadarm.envs import core  # noqa: E402
from quadarm.envs.single import QuadArmEnv  # noqa: E402
from quadarm.envs.vector import QuadArmVectorEnv  # noqa: E402
from quadarm.model.sections import play  # noqa: E402
from quadarm.runner.episode import run_episode  # noqa: E402

V4 = ["arm=ftdcr_v4"]  # servo-driven, no friction
# The held bend with the terms that fly on a multi-section arm, the command low-pass and a
# 0.1-mm backlash (about the calibrated arm's): the play and the filter both act.
BEND = [*V4, "scenario=workspace", "scenario.duration=0.3", "scenario.ramp=0.1",
        "scenario.beta_deg=30", "control.feedforward=com", "control.tendon_tau=0.02",
        "arm.backlash=1e-4"]


@pytest.fixture(autouse=True)
def _plain(monkeypatch):
    monkeypatch.setenv("QUADARM_NUMBA", "0")


def _flown(env):
    """An episode driven by ``controller_action()``: (last info, the actions' tendon
    entries (n + 1, n_t))."""
    env.reset(seed=0)
    nr = env.task.built.rotor_actuators.size
    tendons = []
    while True:
        a = env.controller_action()
        tendons.append(a[nr:])
        *_, done, trunc, info = env.step(a)
        if done or trunc:
            return info, np.array(tendons)


def _gap(info, cli):
    ref = {(p, m): v for p, m, v in cli.metrics}
    got = {(p, m): v for p, d in info["metrics"].items() for m, v in d.items()}
    assert got.keys() == ref.keys()
    return ref, got


def _as_the_command_line(env: QuadArmEnv) -> tuple[dict, np.ndarray, Any]:
    """Fly ``env`` by controller_action() and the command line on its config: both ok, every
    metric equal to 1e-9 (as in tension mode). Returns the command line's metrics, the env's
    tendon actions and the command line's episode."""
    info, tendons = _flown(env)
    cli = run_episode(env.cfg)
    assert cli.status == "ok" and info["status"] == "ok"
    ref, got = _gap(info, cli)
    for k, v in ref.items():
        assert got[k] == pytest.approx(v, rel=1e-9, abs=1e-12, nan_ok=True), k
    return ref, tendons, cli


def test_controller_action_reproduces_the_command_line():
    """Lengths, play and low-pass: the command line's metrics to 1e-9, as in tension mode
    (the action's round trip through [-1, 1] and the play's inverse differ from the command
    line's lengths in the last bit: 1e-18 m)."""
    env = QuadArmEnv(overrides=BEND)
    ref, tendons, cli = _as_the_command_line(env)
    assert abs(ref[("final", "tip_lateral_cm")]) > 5.0  # the plan bent the arm
    # The controller's commands lie inside the range (not clipped), and use most of it.
    assert np.abs(tendons).max() < 1.0 and np.abs(tendons).max() > 0.9
    # The flown lengths are the plan's rows, played: the command line's ctrl columns.
    tend = env.task.built.tendon_actuators
    flown = np.asarray(env.log().ctrl)[:, tend]
    assert np.allclose(flown, np.asarray(cli.log.ctrl)[:, tend], rtol=0.0, atol=1e-17)


def test_without_the_play_the_backlash_would_show():
    """The backlash matters here: the command line's rows with and without it differ by half
    of it where the plan moves (so the equality above tests the environments' play)."""
    env = QuadArmEnv(overrides=BEND)
    raw = core.servo_commands(env.task.prepared)
    played = np.asarray(env.task.plan.tensions)
    assert np.array_equal(play(raw, 1e-4), played)
    assert np.abs(played - raw).max() == pytest.approx(0.5e-4, rel=1e-9)


def test_the_calibrated_arm_reproduces_the_command_line():
    """The calibrated preset (fitted backlash, tendon and hinge friction): its friction
    (MuJoCo's ``frictionloss``, a stiff constraint) amplifies the last-bit differences of the
    lengths (1e-18 m) to 2 nm of the tip in 0.2 s (1.7e-6 of tip_y, 2e-8 of the 8.9-cm reach);
    without friction they stay at 1e-16 relative (test above). Tolerance: 1e-6 relative, or
    1e-6 in the metric's unit (cm, deg) for metrics near zero."""
    env = QuadArmEnv(overrides=["arm=ftdcr_v4_calibrated", "scenario=workspace",
                                "scenario.duration=0.2", "scenario.ramp=0.1"])
    assert env.task.play > 0.0
    info, tendons = _flown(env)
    cli = run_episode(env.cfg)
    ref, got = _gap(info, cli)
    for k, v in ref.items():
        assert got[k] == pytest.approx(v, rel=1e-6, abs=1e-6, nan_ok=True), k
    assert np.abs(tendons).max() < 1.0


def test_vector_env_rows_are_the_single_envs():
    """Row i equals a single environment (noisy actions through the play), with the backlash
    randomised per environment and row 1 reset alone mid-episode."""
    rnd = {"arm.backlash": {"dist": "uniform", "rel": 0.5}}
    venv = QuadArmVectorEnv(2, BEND, randomize=rnd, nthread=1)
    singles = [QuadArmEnv(overrides=BEND, randomize=rnd) for _ in range(2)]
    obs, _ = venv.reset(seed=5)
    for i, e in enumerate(singles):
        assert np.array_equal(obs[i], e.reset(seed=5 + i)[0])
    assert venv.tasks[0].play != venv.tasks[1].play
    assert_rows_follow_singles(venv, singles, 40, reset_row_at=25)
    venv.close()


def test_actions_span_the_range_and_hold_the_servos_tension():
    """-1 and +1 command the range's ends; held, a tendon settles at the tension k (L - u)
    (0 to tension_max) of its position actuator, L its length in the model, and +1 leaves a
    tendon slack (no tension), the arm hanging."""
    env = QuadArmEnv(overrides=[*V4, "scenario=hover", "scenario.duration=0.6"])
    t, m, d = env.task, env.model, env.data
    nr, tend = t.built.rotor_actuators.size, t.built.tendon_actuators
    lo, hi = core.servo_range(t.cfg, t.built, core.servo_commands(t.prepared))
    assert np.array_equal(t.lo[nr:], lo)
    assert np.all(hi - lo > 0.003)  # mm of travel: the plan bends each section ~28 deg
    env.reset(seed=0)
    held = np.ones(tend.size)
    held[0], held[5] = -1.0, -0.5  # the first section's tendon 0, the second's tendon 2
    for _ in range(t.n):
        a = env.controller_action()
        a[nr:] = held
        env.step(a)
    u = d.ctrl[tend]
    assert u[0] == lo[0]
    assert u[1] == pytest.approx(hi[1], abs=1e-18)
    tension = -d.actuator_force[tend]
    length = d.ten_length[m.actuator_trnid[tend, 0]]
    k = m.actuator_gainprm[tend, 0]
    assert np.all(np.abs(d.ten_velocity[m.actuator_trnid[tend, 0]]) < 1e-3)  # settled
    expect = np.clip(k * (length - u), 0.0, t.cfg.arm.tension_max)
    assert np.allclose(tension, expect, rtol=1e-9, atol=1e-9)
    assert tension[0] > 1.0 and tension[5] > 0.5  # pulled
    assert np.all(tension[held == 1.0] == 0.0)  # slack


def test_the_observation_shows_the_plans_lengths_normalised_like_actions():
    """The observation's last n_t entries are the plan's length commands before the play,
    through the actions' mapping; the hardest pull of the plan's grid is -1."""
    env = QuadArmEnv(overrides=[*V4, "scenario=workspace", "scenario.duration=0.3",
                                "scenario.ramp=0.1", "scenario.beta_deg=0"])
    t = env.task
    nr, nt = t.built.rotor_actuators.size, t.built.tendon_actuators.size
    obs, _ = env.reset(seed=0)
    u = np.asarray(t.plan.tensions)  # no backlash: the plan's rows themselves
    assert np.array_equal(obs[-nt:], (u[0] - t.lo[nr:]) / t.half[nr:] - 1.0)
    assert np.array_equal(t.tendon_action, core.normalise(u, t.lo[nr:], t.half[nr:]))
    # At mu = 1, beta = 0 (a point of servo_range's grid) a tendon pulls its hardest.
    assert t.tendon_action[-1].min() == pytest.approx(-1.0, abs=1e-12)


def test_check_env_passes_without_warnings():
    from gymnasium.utils.env_checker import check_env

    env = gym.make("quadarm/QuadArm-v0",
                   overrides=[*V4, "scenario=hover", "scenario.duration=0.04",
                              "arm.backlash=1e-4"]).unwrapped
    assert servo_driven(env.cfg.arm) and env.task.play > 0.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    assert [str(w.message) for w in caught] == []


def test_the_servos_backlash_acts_on_the_actions():
    """Any tendon action goes through the servo's play: the lengths flown equal the command
    line's play operator (:func:`quadarm.model.sections.play`) of the actions' lengths, bit
    for bit; the tendon stays put until the command has moved half the backlash past it."""
    env = QuadArmEnv(overrides=[*V4, "scenario=hover", "scenario.duration=0.1",
                                "arm.backlash=4e-4"])
    t = env.task
    nr, tend = t.built.rotor_actuators.size, t.built.tendon_actuators
    env.reset(seed=0)
    rng = np.random.default_rng(1)
    steps = 40
    # A slow sweep with noise: reversals within and beyond the play.
    sweep = 0.2 * np.sin(np.linspace(0.0, 6.0, steps))[:, None] + rng.normal(0, 0.02,
                                                                              (steps, tend.size))
    flown, cmds = [], []
    for a_t in sweep:
        a = env.controller_action()
        a[nr:] = a_t
        cmds.append(t.lo[nr:] + (a_t + 1.0) * t.half[nr:])
        env.step(a)
        flown.append(env.data.ctrl[tend].copy())
    cmds, flown = np.array(cmds), np.array(flown)
    assert np.array_equal(flown, play(cmds, 4e-4))
    assert np.abs(flown - cmds).max() == pytest.approx(2e-4, rel=1e-9)
    held = np.all(np.diff(flown, axis=0) == 0.0, axis=1)
    assert held.any() and not held.all()


def _in_v4_scale(trial: list[str]) -> list[str]:
    """``trial`` with its reach targets in the v4 arm's scale, as the task suite draws them
    (:func:`quadarm.suite_scale.in_arm_scale`: the offset from the hub's start times the
    arms' length ratio, 0.2245 / 0.526 m). The registry's trials name points beside prb12's
    hanging tip: 0.53 m below the hub, 0.30 m below v4's tip, which a 0.2-s move could reach
    only with 167 deg of tilt (the preflight refuses it); scaled, the point lies 3.4 cm beside
    v4's hanging tip, as prb12's lies 8 cm beside its own."""
    if not any(o.startswith("scenario.targets=") for o in trial):
        return trial
    from quadarm.api import compose
    from quadarm.suite_scale import POSITION, in_arm_scale

    ref = compose([o for o in trial if not o.startswith("arm")])  # prb12: the trial's own
    targets = in_arm_scale([list(t) for t in ref.scenario.targets], POSITION, V4,
                           float(ref.scenario.altitude))
    return [*(o for o in trial if not o.startswith("scenario.targets=")),
            "scenario.targets=[" + ",".join(f"[{x!r},{y!r},{z!r}]" for x, y, z in targets)
            + "]"]


def _servo_trial(term):
    """The term's trial on the servo-driven v4 arm with a 0.1-mm backlash (its reach targets
    in the arm's scale, :func:`_in_v4_scale`), or None where a preflight refuses it on this
    arm."""
    from quadarm.api import compose
    from quadarm.config import ConfigError

    overrides = [*_in_v4_scale(list(term.trial)), *V4, "arm.backlash=1e-4"]
    try:
        cfg = compose(overrides)
    except ConfigError:
        return None
    if cfg.control.tendon_damping > 0.0:
        # prb12's gain is 2.9x this arm's sampled-loop bound: the commands would chatter
        # between the tendon limits, where the single env and the command line (the same
        # numbers up to the action's round trip) part chaotically. Flown, as the task suite
        # flies it, at prb12's fraction of its own bound.
        from quadarm.runner.arm_aware import damping_bound_of

        ref = compose([o for o in overrides if o not in (*V4, "arm.backlash=1e-4")])
        gain = cfg.control.tendon_damping * damping_bound_of(cfg) / damping_bound_of(ref)
        overrides.append(f"control.tendon_damping={gain!r}")
    return overrides


def _terms():
    from quadarm import terms

    return [t for t in terms.TERMS if t.env != terms.ENV_ORACLE]


@pytest.mark.slow  # 13 s in all; test_controller_action_reproduces_the_command_line covers
#                   the tendon terms (com feed-forward, low-pass) with the play in make test
@pytest.mark.parametrize("term", _terms(), ids=lambda t: t.name)
def test_every_term_flies_with_servos_as_the_command_line(term):
    """Each registered term's trial that flies on the v4 arm, with servos and a backlash: the
    single environment driven by controller_action() gives the command line's metrics (1e-9,
    as in tension mode, tests/model/test_terms_conformance.py)."""
    overrides = _servo_trial(term)
    if overrides is None:
        pytest.skip(f"{term.name}: its trial is refused on this arm by the preflight")
    _, tendons, _ = _as_the_command_line(QuadArmEnv(overrides=overrides))
    assert np.abs(tendons).max() < 1.0


@pytest.mark.slow
@pytest.mark.parametrize("term", _terms(), ids=lambda t: t.name)
def test_every_term_flies_with_servos_in_the_vector_env(term):
    """As above for the vector environment: two rows, row 1 reset 20 steps into its episode
    (its play and controller restart with it), row 0 autoresetting into a second episode;
    every finished episode gives the command line's metrics."""
    overrides = _servo_trial(term)
    if overrides is None:
        pytest.skip(f"{term.name}: its trial is refused on this arm by the preflight")
    kind = next(o.split("=", 1)[1] for o in overrides if o.startswith("scenario="))
    # A scenario with payload events flies on the rows engine (the batch engine refuses
    # its grasp): the same vector API, each row a single environment.
    engine = "rows" if kind in core.UNSUPPORTED_SCENARIOS else "batch"
    venv = QuadArmVectorEnv(2, overrides, nthread=1, engine=engine)
    venv.reset(seed=0)
    cli = run_episode(venv.cfg)
    ref = {(p, m): v for p, m, v in cli.metrics}
    done = [0, 0]
    for n in range(5000):
        if n == 20:
            venv.reset(options={"reset_mask": [False, True]})
        *_, term_, trunc, info = venv.step(venv.controller_action())
        assert not term_.any()
        for i in np.flatnonzero(trunc):
            got = {(p, m): v[i] for p, d in info["metrics"].items() if not p.startswith("_")
                   for m, v in d.items() if not m.startswith("_")}
            assert got.keys() == ref.keys()
            for k, v in ref.items():
                assert got[k] == pytest.approx(v, rel=1e-9, abs=1e-12, nan_ok=True), k
            done[i] += 1
        if min(done) >= 1 and done[0] >= 2:
            break
    assert done[0] >= 2 and done[1] >= 1
    venv.close()


@pytest.mark.slow  # 7 s, most of it importing torch (tests/model/test_sb3.py pays it anyway)
def test_the_sb3_adapter_steps_the_servo_arm():
    """SB3's adapter over the vector environment: the servo arm's spaces, and the controller's
    actions (float32, as SB3 hands them) step it in range."""
    pytest.importorskip("stable_baselines3")
    from quadarm.envs.sb3 import QuadArmSB3VecEnv

    hover = [*V4, "scenario=hover", "scenario.duration=0.04", "arm.backlash=1e-4"]
    env = QuadArmSB3VecEnv(2, hover)
    single = QuadArmEnv(overrides=hover)
    assert env.action_space.shape == single.action_space.shape
    obs = env.reset()
    assert obs.shape == (2, *single.observation_space.shape)
    for _ in range(5):
        a = env.venv.controller_action().astype(np.float32)
        assert np.all(np.abs(a) <= 1.0)
        obs, _, done, _ = env.step(a)
        assert np.isfinite(obs).all() and not done.any()
    env.close()
