"""The learning interface of issue 36: the SB3 adapter carries the environments' keywords
(``action_every``, ``actions``), Gymnasium's and Stable-Baselines3's checkers pass for every
action space the environments offer, and ``actions="references"`` (quadarm.envs.references)
flies the command line's controller on references the actions offset."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")
pytest.importorskip("stable_baselines3")

from gymnasium.vector import AutoresetMode  # noqa: E402

import quadarm.envs  # noqa: E402,F401 - registers the ids
from quadarm.envs import ENV_ID, REACH_ENV_ID, references  # noqa: E402
from quadarm.envs.sb3 import QuadArmSB3VecEnv  # noqa: E402
from quadarm.envs.single import QuadArmEnv  # noqa: E402
from quadarm.envs.vector import QuadArmVectorEnv  # noqa: E402

HOVER = ["scenario=hover", "scenario.duration=0.1"]  # 50 steps at the default 2 ms
REACH = ["scenario.targets=[[0.03,0.0,1.07]]", "scenario.move_time=0.3", "scenario.dwell=0.1"]


def test_the_adapter_holds_actions_as_the_vector_env():
    """``QuadArmSB3VecEnv(action_every=m)`` is the vector environment with the same
    ``action_every`` behind SB3's API: the same observations and summed rewards bit for bit,
    through an episode's end (ceil((n + 1) / m) held steps) and its automatic reset."""
    n, m = 2, 7
    adapter = QuadArmSB3VecEnv(n, HOVER, dtype="float64", action_every=m)
    venv = QuadArmVectorEnv(n, HOVER, autoreset_mode=AutoresetMode.SAME_STEP, action_every=m,
                            record=False)
    assert adapter.venv.action_every == m
    adapter.seed(3)
    assert np.array_equal(adapter.reset(), venv.reset(seed=3)[0])
    steps = -(-(venv.tasks[0].n + 1) // m)
    for j in range(steps + 2):
        a = venv.controller_action() + np.random.default_rng(j).normal(0.0, 0.05, (n, 7))
        obs_a, rew_a, done, infos = adapter.step(a)
        obs_v, rew_v, term, trunc, info_v = venv.step(a)
        assert np.array_equal(obs_a, obs_v) and np.array_equal(rew_a, rew_v.astype(np.float32))
        assert np.array_equal(done, term | trunc)
        assert done.all() == (j == steps - 1), j
        for i in np.flatnonzero(done):
            assert np.array_equal(infos[i]["terminal_observation"], info_v["final_obs"][i])
    # Physics steps counted (quadarm.learn's physics_steps_per_s): each row's n integrations
    # of its episode (the final sample is recorded, not integrated), then two held steps.
    assert venv.physics_steps == adapter.venv.physics_steps == n * (venv.tasks[0].n + 2 * m)


@pytest.mark.slow  # 10-25 s on the shared 2-core machine (plain Python)
@pytest.mark.parametrize("env_id,overrides", [(ENV_ID, HOVER),
                                              (REACH_ENV_ID, [*REACH, "control.tip_gain=20"])])
def test_both_checkers_pass_for_every_action_space(env_id, overrides):
    """Gymnasium's ``check_env`` and SB3's ``check_env`` on each environment with each
    action space (float32, as SB3 trains) and a held action, without a warning."""
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    for kw in [*ACTION_SPACES, {"actions": "references", "observe": "task"}]:
        env = gym.make(env_id, overrides=overrides, dtype="float32", action_every=5,
                       **kw).unwrapped
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env)
            sb3_check_env(env)
        assert [str(w.message) for w in caught] == [], kw


ACTION_SPACES: list[dict[str, str]] = [{}, {"actions": "references"}, {"actions": "hub"}]
TIP = ["control.tip_gain=20"]  # the reach env's references move the tip feedback's target
# The servo-driven two-section arm holding a bend, with a 0.1 mm backlash (plan rows played).
SERVO = ["arm=ftdcr_v4", "scenario=workspace", "scenario.duration=0.12", "scenario.ramp=0.05",
         "scenario.beta_deg=30", "arm.backlash=1e-4"]


def make(env_id, overrides, **kw):
    return gym.make(env_id, overrides=overrides, **kw).unwrapped


def fly(env, policy, seed=0):
    """One episode of ``policy(env, i)``: (observations, rewards, last info)."""
    seen, rewards = [env.reset(seed=seed)[0]], []
    while True:
        o, r, te, tr, info = env.step(policy(env, len(rewards)))
        seen.append(o)
        rewards.append(r)
        if te or tr:
            return np.array(seen), rewards, info


def zero(env, i):
    return env.controller_action()


@pytest.mark.parametrize("env_id,overrides,m", [
    (ENV_ID, HOVER, 1), (ENV_ID, HOVER, 7), (ENV_ID, SERVO, 5),
    (REACH_ENV_ID, [*REACH, *TIP], 10),
])
def test_a_zero_reference_action_flies_the_command_line(env_id, overrides, m):
    """actions="references" with the zero action (``controller_action()``): the command line's
    closed loop bit for bit at any ``action_every`` (the references are held, the controller
    runs at every physics step): the same logged states and commands and the same metrics as
    ``python -m quadarm`` (``api.simulate``) on the same config."""
    from quadarm import api

    env = make(env_id, overrides, actions="references", action_every=m)
    assert env.action_space.shape == (references.action_size(env.cfg, env_id == REACH_ENV_ID),)
    _, _, info = fly(env, zero)
    cli = api.simulate(env.cfg)
    assert info["status"] == cli.status == "ok"
    lg, theirs = env.log(), cli.episode.log
    for name in ("qpos", "qvel", "ctrl", "tip"):
        assert np.array_equal(getattr(lg, name), getattr(theirs, name)), name
    rows = cli.metrics[["phase", "metric", "value"]].itertuples(index=False)
    for phase, metric, value in rows:
        assert np.array_equal(info["metrics"][phase][metric], value, equal_nan=True), metric


def test_a_bend_offset_adds_its_moment_to_the_plan():
    """Closed form of the bend offset's allocation (quadarm.envs.references.bend_commands):
    on a tension-driven three-section arm the offset tensions are >= 0 and the moment each
    section carries (sum of T_i r_i n_i over the tendons passing it) is the requested
    sqrt(3)/2 mu_s bend_tension r_s (cos beta_s, sin beta_s), mu projected onto <= 1; on the
    paper's one-section arm the resultant sum T_i n_i of the balanced map is
    sqrt(3)/2 mu tension_max towards beta."""
    from quadarm.api import compose
    from quadarm.control import sections as plan_sections
    from quadarm.control.tendons import resultant

    cfg = compose(["arm=ftdcr_v4", "arm.actuation=tension"])
    rng = np.random.default_rng(0)
    n_s = references.n_sections(cfg)
    uv = rng.uniform(-1.0, 1.0, (64, n_s, 2))
    t = references.bend_commands(cfg, uv)
    assert (t >= 0.0).all()
    mu = np.hypot(uv[..., 0], uv[..., 1])
    want = uv / np.maximum(mu, 1.0)[..., None]
    r = np.array([s.tendons.offset for s in cfg.arm.sections])
    want = np.sqrt(3.0) / 2.0 * cfg.arm.bend_tension * r[:, None] * want
    np.testing.assert_allclose(plan_sections.carried(t, cfg.arm), want, atol=1e-12)
    assert not references.bend_commands(cfg, np.zeros((n_s, 2))).any()

    paper = compose([])
    uv1 = rng.uniform(-0.7, 0.7, (32, 1, 2))
    t1 = references.bend_commands(paper, uv1)
    res = resultant(t1, np.radians(paper.arm.tendon_angles_deg))
    np.testing.assert_allclose(res, np.sqrt(3.0) / 2.0 * paper.arm.tension_max * uv1[:, 0],
                               atol=1e-12)


def test_reference_offsets_move_the_hub_heading_and_tip():
    """A held reference action on a 2 s hover: the hub settles on the plan plus the position
    offset (within 1 cm: the paper's gains close a 5 cm step's last millimetres by their
    integral, about 4 mm left at 2 s) and turns to the heading offset (0.3 rad, within
    1e-3 rad); a bend offset on the paper's arm turns the tip, seen from the hub, towards its
    beta (within 0.05 rad)."""
    import math

    env = make(ENV_ID, ["scenario=hover", "scenario.duration=2.0"], actions="references",
               action_every=10, record=True)
    a = np.zeros(env.action_space.shape)
    a[:4] = [0.5, 0.0, -0.5, 0.6]
    fly(env, lambda e, i: a)
    q = env.log().qpos[-1]
    shift = q[:3] - env.task.plan.ref.p[-1]
    np.testing.assert_allclose(shift, references.HUB_RANGE * a[:3], atol=0.01)
    w, x, y, z = q[3:7]
    yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    assert yaw == pytest.approx(references.YAW_RANGE * a[3], abs=1e-3)
    for beta in (0.0, 2.0):
        a = np.zeros(env.action_space.shape)
        a[4:6] = [0.8 * math.cos(beta), 0.8 * math.sin(beta)]
        fly(env, lambda e, i, a=a: a)
        lg = env.log()
        rel = lg.tip[-1] - lg.qpos[-1, :3]
        assert math.atan2(rel[1], rel[0]) == pytest.approx(beta, abs=0.05)
        assert math.hypot(rel[0], rel[1]) > 0.1  # a bend, not the straight arm's jitter


@pytest.mark.slow  # 10-25 s on the shared 2-core machine (plain Python)
@pytest.mark.parametrize("env_id,overrides", [
    (ENV_ID, SERVO), (REACH_ENV_ID, [*REACH, *TIP])])
def test_vector_rows_are_single_envs_with_references(env_id, overrides):
    """The vector environment with references actions held for 4 samples: row i is the single
    environment seeded s + i given the same actions, bit for bit (observations, rewards,
    ends, metrics), through an automatic reset (SAME_STEP) with drawn episode lengths (rows
    end inside a held step, rebuild their models and restart their controllers)."""
    n_env, m = 2, 4
    kw = dict(overrides=overrides, action_every=m, actions="references",
              randomize={"scenario.duration" if env_id == ENV_ID else "scenario.dwell":
                         {"dist": "choice", "values": [0.1, 0.12] if env_id == ENV_ID
                          else [0.1, 0.14]}})
    venv = gym.make_vec(env_id, num_envs=n_env, vectorization_mode="vector_entry_point",
                        autoreset_mode="SameStep", **kw).unwrapped
    singles = [make(env_id, **kw) for _ in range(n_env)]
    obs, _ = venv.reset(seed=8)
    for i, env in enumerate(singles):
        assert np.array_equal(env.reset(seed=8 + i)[0], obs[i])
    ended = 0
    for n in range(150):
        if ended >= 3:
            break
        actions = np.random.default_rng(n).uniform(-0.5, 0.5, (n_env, venv._na))
        obs, rew, term, trunc, info = venv.step(actions)
        for i, env in enumerate(singles):
            o, r, te, tr, inf = env.step(actions[i])
            assert r == rew[i] and (te, tr) == (term[i], trunc[i]), (n, i)
            if te or tr:
                ended += 1
                assert np.array_equal(info["final_obs"][i], o)
                got = info["final_info"]["metrics"]
                for phase, values in inf["metrics"].items():
                    for name, value in values.items():
                        assert np.array_equal(got[phase][name][i], value, equal_nan=True)
                o = env.reset()[0]
            assert np.array_equal(o, obs[i]), (n, i)
    assert ended >= 3
    venv.close()


def test_references_refusals():
    """One line naming the keyword: an unknown action kind, the reach env's references
    without the tip feedback they move, and references with sensed observations."""
    with pytest.raises(ValueError, match="actions='bogus': must be one of rotors, references"):
        make(ENV_ID, HOVER, actions="bogus")
    with pytest.raises(ValueError, match="control.tip_gain > 0"):
        make(REACH_ENV_ID, REACH, actions="references")
    with pytest.raises(ValueError, match="observe='sensed'"):
        make(ENV_ID, [*HOVER, "sensing=realistic"], actions="references", observe="sensed")


@pytest.mark.slow
def test_compiled_references_are_the_plain_ones(monkeypatch):
    """The references written into the compiled seam's records (numpy rows) fly what the plain
    records (nested lists) fly, bit for bit, held for 10 samples on the servo-driven arm."""
    from quadarm.runner import jit

    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")

    def episode(numba: str):
        monkeypatch.setenv("QUADARM_NUMBA", numba)
        env = make(ENV_ID, SERVO, actions="references", action_every=10)
        return fly(env, lambda e, i: np.random.default_rng(i).uniform(-1, 1, e._shape))

    a, b = episode("1"), episode("0")
    assert np.array_equal(a[0], b[0]) and a[1] == b[1]
    assert a[2]["metrics"] == b[2]["metrics"]


@pytest.mark.parametrize("env_id,overrides,kw", [
    (ENV_ID, [*HOVER, "scenario=disturbance", "scenario.start=0.02", "scenario.length=0.02",
              "scenario.force=3"], {}),
    (REACH_ENV_ID, [*REACH, *TIP], {"actions": "references", "action_every": 3}),
])
def test_the_task_layout_is_the_state_in_the_hub_frame(env_id, overrides, kw):
    """observe="task" against the default observation of the same flight (same seeds and
    actions): the same rewards and ends bit for bit; its entries are the default's errors
    rotated into the hub frame by MuJoCo's own quaternion-to-matrix (mju_quat2Mat, an
    independent reference) and divided by the documented scales (quadarm.envs.features), the
    joint angles and rates scaled, and the last action the clipped one (zeros after reset)."""
    import mujoco

    from quadarm.envs import features as ft

    task = make(env_id, overrides, observe="task", **kw)
    state = make(env_id, overrides, **kw)
    o_t, _ = task.reset(seed=1)
    o_s, _ = state.reset(seed=1)
    assert task.observation_space.shape == o_t.shape and state.layout == "state"
    na = task.action_space.shape[0]
    nq, nv = task.model.nq, task.model.nv
    for i in range(60):
        rot = np.zeros(9)
        mujoco.mju_quat2Mat(rot, o_s[6:10])
        rt = rot.reshape(3, 3).T  # world -> hub
        np.testing.assert_allclose(o_t[0:3] * ft.HUB, rt @ o_s[0:3], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(o_t[3:6] * ft.VEL, rt @ o_s[3:6], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(o_t[6:9], rt @ [0.0, 0.0, 1.0], atol=1e-15)
        j = 14  # after errors, up, heading, body rate
        np.testing.assert_allclose(o_t[j:j + nq - 7] * ft.JOINT, o_s[10:3 + nq], atol=1e-15)
        last = o_t[j + nq - 7 + nv - 6 + 6 + state.task.ff.shape[1] - 6:][:na]
        a = np.random.default_rng(i).uniform(-1.3, 1.3, na)
        if i == 0:
            assert not last.any()
        if env_id == ENV_ID:
            a = state.controller_action() + 0.05 * a
        o_t, r_t, te_t, tr_t, _ = task.step(a)
        o_s, r_s, te_s, tr_s, _ = state.step(a)
        assert r_t == r_s and (te_t, tr_t) == (te_s, tr_s), i
        if te_s or tr_s:
            break
        last = o_t[j + nq - 7 + nv - 6 + 6 + state.task.ff.shape[1] - 6:][:na]
        assert np.array_equal(last, np.clip(a, -1.0, 1.0))
    if env_id == REACH_ENV_ID:  # the tip's entries: the default's, in the hub frame
        rot = np.zeros(9)
        mujoco.mju_quat2Mat(rot, o_s[6:10])
        rt = rot.reshape(3, 3).T
        np.testing.assert_allclose(o_t[-6:-3] * ft.TIP, rt @ o_s[-6:-3], atol=1e-14)
        np.testing.assert_allclose(o_t[-3:] * ft.TARGET, rt @ o_s[-3:], atol=1e-14)


@pytest.mark.slow  # 10-25 s each on the shared 2-core machine (plain Python)
@pytest.mark.parametrize("kw", [
    dict(overrides=[*REACH, "sensing=realistic"], observe="task_sensed"),
    # The exact task layout builds its observation at the last held sample only (the
    # learned reach row's environment): 201 samples, so the last step holds one sample.
    dict(overrides=REACH, observe="task", actions="hub")], ids=["task_sensed", "task_hub"])
def test_task_layout_vector_rows_are_single_envs(kw):
    """observe="task_sensed" and "task" (hub actions) on the reach task, action_every=4: row
    i of the vector environment is the single environment seeded s + i, bit for bit
    (observations with the last actions, rewards), through the episode's end."""
    kw = dict(kw, action_every=4)
    venv = gym.make_vec(REACH_ENV_ID, num_envs=2, vectorization_mode="vector_entry_point",
                        **kw).unwrapped
    singles = [make(REACH_ENV_ID, **kw) for _ in range(2)]
    obs, _ = venv.reset(seed=5)
    for i, env in enumerate(singles):
        assert np.array_equal(env.reset(seed=5 + i)[0], obs[i])
    na = venv.single_action_space.shape[0]
    for n in range(-(-(singles[0].task.n + 1) // 4)):
        actions = venv.controller_action() + np.random.default_rng(n).normal(0, 0.05, (2, na))
        obs, rew, term, trunc, _ = venv.step(actions)
        for i, env in enumerate(singles):
            o, r, te, tr, _ = env.step(actions[i])
            assert np.array_equal(o, obs[i]) and r == rew[i], (n, i)
            assert (te, tr) == (term[i], trunc[i])
    assert trunc.all()
    venv.close()


def _batch_equals_cli(venv, policy) -> list[dict]:
    """Fly every environment of ``venv`` (SAME_STEP autoreset) through its first episode with
    ``policy(venv)``; assert each one's metrics are ``api.simulate``'s of its config, bit for
    bit; return them."""
    from quadarm import api

    venv.reset(seed=0)
    first: dict[int, dict] = {}
    while len(first) < venv.num_envs:
        _, _, term, trunc, info = venv.step(policy(venv))
        for i in np.flatnonzero(term | trunc):
            if int(i) not in first:
                assert info["final_info"]["status"][i] == "ok"
                first[int(i)] = {p: {m: v[i] for m, v in d.items() if not m.startswith("_")}
                                 for p, d in info["final_info"]["metrics"].items()
                                 if not p.startswith("_")}
    for i, t in enumerate(venv.tasks):
        cli = api.simulate(t.cfg)
        for phase, metric, value in cli.metrics[["phase", "metric", "value"]].itertuples(
                index=False):
            assert np.array_equal(first[i][phase][metric], value, equal_nan=True), (i, metric)
    return [first[i] for i in range(venv.num_envs)]


@pytest.mark.slow  # 10-25 s on the shared 2-core machine (plain Python)
def test_a_task_draw_flies_in_one_batch_with_the_cli_metrics():
    """``per_env``: three of the reach task's targets in one batch (references, zero action,
    held 10 samples) and two gust seeds of a gusty hover (the controller's actions): each
    environment's episode metrics are ``python -m quadarm``'s for its own config, bit for bit,
    and the gust seeds give different flights."""
    import json

    from quadarm import learn

    _, draw = learn.task_overrides("task_reach")
    targets = [draw[0], draw[5], draw[11]]

    reach = gym.make_vec(REACH_ENV_ID, num_envs=3, vectorization_mode="vector_entry_point",
                         overrides=[*TIP, "scenario.move_time=0.4", "scenario.dwell=0.1"],
                         per_env=[[f"scenario.targets={json.dumps(t)}"] for t in targets],
                         actions="references", action_every=10,
                         autoreset_mode="SameStep").unwrapped
    assert [t.cfg.scenario.targets for t in reach.tasks] == targets
    _batch_equals_cli(reach, lambda v: v.controller_action())

    gusty = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="vector_entry_point",
                         overrides=[*HOVER, "aero=gusty"], per_env=[["seed=1"], ["seed=2"]],
                         autoreset_mode="SameStep").unwrapped
    one, two = _batch_equals_cli(gusty, lambda v: v.controller_action())
    assert one["whole"]["rms_cm"] != two["whole"]["rms_cm"]


def test_per_env_refusals():
    """One line naming ``per_env``: a list per environment, overrides not a config, and
    models of one batch share their sizes."""
    from quadarm.api import compose

    with pytest.raises(ValueError, match="per_env: one list of overrides per environment"):
        QuadArmVectorEnv(2, HOVER, per_env=[[]])
    with pytest.raises(ValueError, match="per_env: .*pass overrides, not config"):
        QuadArmVectorEnv(1, config=compose(HOVER), per_env=[[]])
    with pytest.raises(ValueError, match="per_env: environment 1's model has nq="):
        QuadArmVectorEnv(2, HOVER, per_env=[[], ["arm.segments=10"]])


def _fit_json(path, cfg) -> dict:
    """An identify ``fit.json`` for ``cfg``'s sectioned arm: a few of the arm's keys (one tied
    over the sections, one list entry), a bench key, a key fitted exactly (stderr 0)."""
    import json

    secs = cfg.arm.sections
    record = {
        "values": {"sections.0.youngs_modulus": secs[0].youngs_modulus,
                   "sections.*.mass": secs[0].mass,
                   "sections.1.tendons.travel_scales.2": 1.0,
                   "sections.2.tendons.stiffness": secs[2].tendons.stiffness,
                   "registration.rx": 0.01, "backlash": 1e-4},
        "stderr": {"sections.0.youngs_modulus": 0.05 * secs[0].youngs_modulus,
                   "sections.*.mass": 0.001, "sections.1.tendons.travel_scales.2": 0.02,
                   "sections.2.tendons.stiffness": 0.1 * secs[2].tendons.stiffness,
                   "registration.rx": 0.002, "backlash": 0.0}}
    path.write_text(json.dumps(record))
    return record


def test_identified_randomisation_draws_the_fit_standard_errors(tmp_path):
    """``randomize={"arm": {"dist": "identified", "fit": fit.json}}``: each fitted arm key is
    drawn normal around the config's value with the fit's standard error (sample mean and
    standard deviation over 400 draws within 4.5 sigma of their sampling spread), a key
    fitted once for every section moves every section by the same draw, the bench's keys and
    exact fits are not drawn, ``scale`` scales the spread, and the draws combine with the
    other keys (motor lag) in the runner's syntax."""
    from quadarm.api import compose
    from quadarm.envs.core import Randomizer

    cfg = compose(["arm=ftdcr_v4_calibrated", "scenario=hover", "scenario.duration=0.02"])
    fit = _fit_json(tmp_path / "fit.json", cfg)
    spec = {"arm": {"dist": "identified", "fit": str(tmp_path / "fit.json")},
            "airframe.motor_tau": {"dist": "uniform", "low": 0.01, "high": 0.03}}
    from quadarm.runner.trials import draw

    rnd = Randomizer(cfg, spec)
    assert "arm.registration.rx" not in rnd.spec and "arm.backlash" not in rnd.spec
    rng = np.random.default_rng(3)
    n = 2000
    for name, se in fit["stderr"].items():
        key = "arm." + name.replace("*", "0")
        if name.startswith("registration") or se == 0.0:
            assert key not in rnd.spec
            continue
        nominal = rnd.nominal[key]
        x = np.array([draw(rnd.spec[key], nominal, rng) for _ in range(n)])
        assert abs(x.mean() - nominal) < 4.5 * se / np.sqrt(n), name
        assert abs(x.std(ddof=1) / se - 1.0) < 4.5 / np.sqrt(2 * (n - 1)), name
    drawn = [rnd.draw(rng)[1] for _ in range(5)]  # whole configs: the tied key, motor lag
    masses = np.array([[d[f"arm.sections.{j}.mass"] for j in range(3)] for d in drawn])
    shift = masses - [s.mass for s in cfg.arm.sections]
    np.testing.assert_allclose(shift, shift[:, :1].repeat(3, axis=1), atol=1e-15)
    assert (shift != 0.0).all()
    taus = np.array([d["airframe.motor_tau"] for d in drawn])
    assert 0.01 <= taus.min() and taus.max() <= 0.03

    half = Randomizer(cfg, {"arm": {**spec["arm"], "scale": 0.5}})
    assert half.spec["arm.sections.0.youngs_modulus"]["std"] == pytest.approx(
        0.5 * fit["stderr"]["sections.0.youngs_modulus"])
    with pytest.raises(ValueError, match=r"randomize.arm.fit=.*not an identify fit.json"):
        Randomizer(cfg, {"arm": {"dist": "identified", "fit": str(tmp_path / "none.json")}})


@pytest.mark.slow
def test_the_env_flies_the_identified_draws(tmp_path):
    """The environment with the identified entry: each reset builds the drawn arm (the drawn
    modulus in its config), ``reset(seed)`` reproduces the draw."""
    from quadarm.api import compose

    over = ["arm=ftdcr_v4_calibrated", "scenario=hover", "scenario.duration=0.02"]
    _fit_json(tmp_path / "fit.json", compose(over))
    env = make(ENV_ID, over, randomize={"arm": {"dist": "identified",
                                                "fit": str(tmp_path / "fit.json")}})
    _, info = env.reset(seed=2)
    e = info["drawn"]["arm.sections.0.youngs_modulus"]
    assert env.task.cfg.arm.sections[0].youngs_modulus == e
    assert env.reset(seed=2)[1]["drawn"] == info["drawn"]
    assert env.reset(seed=3)[1]["drawn"] != info["drawn"]


def test_a_hub_action_is_the_references_hub_slice():
    """``actions="hub"``: the references action's hub offset alone (heading and bends zero),
    bit for bit, at a held action; on the reach task it needs no tip feedback, and its zero
    action flies the command line's ``nominal`` reach (the same logged states and metrics)."""
    from quadarm import api

    kw = dict(action_every=5, record=True)
    hub = make(ENV_ID, HOVER, actions="hub", **kw)
    refs = make(ENV_ID, HOVER, actions="references", **kw)
    assert hub.action_space.shape == (3,)
    a = np.array([0.5, -0.2, 0.3])
    fly(hub, lambda e, i: a)
    fly(refs, lambda e, i: np.concatenate((a, np.zeros(refs.action_space.shape[0] - 3))))
    for name in ("qpos", "ctrl", "tip"):
        assert np.array_equal(getattr(hub.log(), name), getattr(refs.log(), name)), name
    reach = make(REACH_ENV_ID, REACH, actions="hub", action_every=10)
    assert reach.cfg.control.tip_gain == 0.0
    _, _, info = fly(reach, zero)
    cli = api.simulate(reach.cfg)
    assert np.array_equal(reach.log().qpos, cli.episode.log.qpos)
    for phase, metric, value in cli.metrics[["phase", "metric", "value"]].itertuples(
            index=False):
        assert np.array_equal(info["metrics"][phase][metric], value, equal_nan=True), metric


def test_a_repeated_draw_reuses_its_task_and_flies_the_same():
    """A draw from a few values (the learned reach row's targets) builds each value's task
    once: rows and episodes that draw it share it, and every row still equals the single
    environment seeded s + i bit for bit through several episodes; a gusty draw (whose
    model the gust term writes into) is built afresh each time."""
    rnd = {"scenario.duration": {"dist": "choice", "values": [0.04, 0.06]}}
    kw = dict(overrides=HOVER, randomize=rnd, action_every=3)
    venv = QuadArmVectorEnv(3, autoreset_mode=AutoresetMode.SAME_STEP, nthread=1, **kw)
    singles = [QuadArmEnv(**kw) for _ in range(3)]
    obs, _ = venv.reset(seed=4)
    for i, env in enumerate(singles):
        assert np.array_equal(env.reset(seed=4 + i)[0], obs[i])
    built = {}
    for n in range(30):  # 3-5 episodes a row
        actions = venv.controller_action() + np.random.default_rng(n).normal(0, 0.05, (3, 7))
        obs, rew, term, trunc, info = venv.step(actions)
        for i, env in enumerate(singles):
            o, r, te, tr, _ = env.step(actions[i])
            if te or tr:
                o = env.reset()[0]
            assert np.array_equal(o, obs[i]) and r == rew[i], (n, i)
        for i, t in enumerate(venv.tasks):  # one task per drawn duration, ever
            assert built.setdefault(venv.drawn[i]["scenario.duration"], t) is t
    assert len(built) == 2 and len(venv._task_cache.tasks) == 2
    venv.close()
    gusty = QuadArmVectorEnv(2, [*HOVER, "aero=gusty"], randomize=rnd, nthread=1)
    gusty.reset(seed=0)
    assert gusty._task_cache.tasks == {}
    gusty.close()
