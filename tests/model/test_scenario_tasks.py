"""The registry of scenario tasks (:mod:`quadarm.scenarios.tasks`): every scenario kind of the
config schema and of ``conf/scenario/`` has a task, a module and its YAML (a half-registered
scenario fails here); the loops run the tasks' events alike, so that payload and pick-and-place
trials batch bit for bit like the others, and the single environment flies their grasps as the
command line does."""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from quadarm import scenarios
from quadarm.api import compose
from quadarm.config import EVENTS, GROUNDED, SCENARIOS
from quadarm.model.payload import Payload
from quadarm.runner import engine, episode, lifecycle
from quadarm.scenarios import tasks

ROOT = Path(__file__).resolve().parents[2]
KINDS = sorted(SCENARIOS)
PAYLOAD = ("scenario=payload", "scenario.duration=0.6", "scenario.grasp_at=0.1",
           "scenario.release_at=0.4")
# The weld's check off: a checked weld flies alone (quadarm.runner.engine.alone).
PICK_PLACE = ("world=pedestal", "scenario=pick_place", "scenario.move_time=1.0",
              "scenario.dwell=0.5", "scenario.hold=0.5", "scenario.tail=0.5",
              "world.payload.grasp_check=off")


@functools.cache
def _load(overrides: tuple[str, ...]):
    return compose(list(overrides))


def test_every_scenario_has_a_task_a_module_and_a_yaml():
    yamls = {p.stem for p in (ROOT / "conf" / "scenario").glob("*.yaml")}
    places = {"quadarm/scenarios/tasks.py::TASKS": set(tasks.TASKS),
              "quadarm/config/schemas/scenarios.py::SCENARIOS": set(SCENARIOS),
              "conf/scenario/<kind>.yaml": yamls}
    every = set().union(*places.values())
    for place, kinds in places.items():
        for kind in sorted(every - kinds):
            pytest.fail(f"scenario {kind!r}: missing from {place.replace('<kind>', kind)}: add "
                        "it there (docs/architecture.md, 'Add a scenario')", pytrace=False)
    for kind in KINDS:
        t = tasks.task(kind)
        assert t.kind == kind
        if importlib.util.find_spec(f"quadarm.scenarios.{kind}") is None:
            pytest.fail(f"scenario {kind!r}: no module quadarm/scenarios/{kind}.py: add it with "
                        "plan(cfg, built) and metrics(cfg, plan, log) (docs/architecture.md, "
                        "'Add a scenario')", pytrace=False)
        module = scenarios.get(kind)
        for hook in ("plan", "metrics"):
            if not callable(getattr(module, hook, None)):
                pytest.fail(f"quadarm/scenarios/{kind}.py: no function {hook}: add it "
                            "(docs/architecture.md, 'Add a scenario')", pytrace=False)
        assert t.module is module
        text = (ROOT / "conf" / "scenario" / f"{kind}.yaml").read_text()
        if not re.search(rf"^\s*- {kind}_schema\s*$", text, re.M):
            pytest.fail(f"conf/scenario/{kind}.yaml: its defaults list does not start from its "
                        f"schema: add '  - {kind}_schema' before '  - _self_'", pytrace=False)


def test_the_tasks_flags_agree_with_the_config():
    assert {k for k, t in tasks.TASKS.items() if t.grounded} == set(GROUNDED)
    assert {k for k, t in tasks.TASKS.items() if t.weld} == set(EVENTS)
    for kind in KINDS:  # a task's flags are the only way a loop knows a scenario
        if kind not in tasks.TASKS:
            pytest.fail(f"scenario {kind!r}: missing from quadarm/scenarios/tasks.py::TASKS: "
                        "add it there (docs/architecture.md, 'Add a scenario')", pytrace=False)
        t = tasks.task(kind)
        assert not (t.grounded and (t.force_loop or t.payload)), kind


def test_a_kind_without_a_task_is_refused_in_one_line():
    with pytest.raises(KeyError, match="has no task"):
        tasks.task("juggle")


def test_pulses_are_set_and_cleared_at_their_samples():
    from quadarm.scenarios.common import Pulse

    xfrc = np.zeros((3, 6))
    pulses = (Pulse(1, np.array([1.0, 2.0, 3.0]), 2, 5),)
    seen = []
    for k in range(7):
        tasks.apply_pulses(xfrc, pulses, k)
        seen.append(xfrc[1, :3].copy())
    assert [float(s[0]) for s in seen] == [0, 0, 1, 1, 1, 0, 0]
    assert not xfrc[[0, 2]].any()


def _equal(a, b):
    for name in ("qpos", "qvel", "tip", "ctrl"):
        assert np.array_equal(getattr(a.log, name), getattr(b.log, name)), name
    assert [m[:2] for m in a.metrics] == [m[:2] for m in b.metrics]
    np.testing.assert_array_equal([v for *_, v in a.metrics], [v for *_, v in b.metrics])


@pytest.mark.parametrize("over", [PAYLOAD, pytest.param(PICK_PLACE, marks=pytest.mark.slow)],
                         ids=["payload", "pick_place"])
def test_payload_trials_batch_bit_for_bit(over, monkeypatch):
    """Two trials in one batch (the second grasps at another time, or with another capture
    radius, so their welds differ), each equal to its one-trial flight; each row's weld is
    its own."""
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    other = (("scenario.grasp_at=0.2",) if "scenario=payload" in over
             else ("scenario.capture_radius=0.02",))
    cfgs = [_load(over), _load((*over, *other))]
    assert engine.wants_batch("batch", 1, cfgs) == [True, True]
    preps = [lifecycle.prepare(c) for c in cfgs]
    from quadarm.runner.batch import fly_batch

    outs = fly_batch(preps, 1)
    for p, o in zip(preps, outs, strict=True):
        assert o.failure is None and not o.error
        batched = lifecycle.score(p, o, 0.0)
        one = episode.run_episode(p.cfg)
        assert batched.status == one.status
        _equal(batched, one)
    if "scenario=payload" not in over:
        return
    # Held between grasp and release: the tip-to-ball distance stays put (a rigid weld), in
    # each row from its own grasp on.
    pl = Payload.of(preps[0].built.model)
    for p, o in zip(preps, outs, strict=True):
        (k_grasp, _), (k_release, _) = p.plan.events
        gap = np.linalg.norm(o.log.tip - o.log.qpos[:, pl.qpos_adr:pl.qpos_adr + 3], axis=1)
        held = gap[k_grasp + 1:k_release]
        assert held.max() - held.min() < 1e-3


@pytest.mark.parametrize("over", [PAYLOAD, pytest.param(PICK_PLACE, marks=pytest.mark.slow)],
                         ids=["payload", "pick_place"])
def test_the_env_flies_the_grasp_as_the_command_line(over, monkeypatch):
    """The single environment driven by ``controller_action()`` runs the task's events (the
    grasp, the release): its metrics are the command line's."""
    pytest.importorskip("gymnasium")
    from quadarm.envs.single import QuadArmEnv

    monkeypatch.setenv("QUADARM_NUMBA", "0")
    env = QuadArmEnv(overrides=list(over))
    env.reset(seed=0)
    while True:
        *_, done, trunc, info = env.step(env.controller_action())
        if done or trunc:
            break
    log = env.log()
    cli = episode.run_episode(env.cfg)
    ref = {(p, m): v for p, m, v in cli.metrics}
    got = {(p, m): v for p, d in info["metrics"].items() for m, v in d.items()}
    assert got.keys() == ref.keys() and ref
    for k, v in ref.items():
        assert got[k] == pytest.approx(v, rel=1e-9, abs=1e-12, nan_ok=True), k
    pl = Payload.of(env.model)  # the ball followed the tip (it was grasped), as on the CLI
    np.testing.assert_allclose(log.qpos[:, pl.qpos_adr:pl.qpos_adr + 3],
                               cli.log.qpos[:, pl.qpos_adr:pl.qpos_adr + 3], rtol=0, atol=1e-9)
