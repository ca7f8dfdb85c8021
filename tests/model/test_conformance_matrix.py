"""One conformance matrix (issue 35, section 5): arm kinds x scenarios x per-step terms. Each
cell composes and flies a short trial, or is refused for the physical reason its registry
records: a term's ``needs`` (:data:`quadarm.terms.TERMS`) or a scenario's
(:data:`quadarm.scenarios.tasks.TASKS`), over the arm traits of
:data:`quadarm.terms.ARM_TRAITS`. Nothing here lists which arm flies what: the expectation of
every cell follows from the registries, so a term or scenario added to them joins the matrix.

Axes: prb12, rod, a two-section tension-driven arm and the calibrated v4 arm (servo-driven);
every registered scenario (its short trial below, a few hundred steps); every per-step term
but the sensing (the sensing issue's: left at exact) and the touch task's force loop (the
scenario axis has it). The full product composes (slow); the arms x scenarios and the arms x
terms fly (slow), with a sample of each unmarked.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re

import numpy as np
import pytest

from quadarm import terms
from quadarm.api import compose
from quadarm.config import ConfigError
from quadarm.scenarios.tasks import TASKS

TWO = ["arm=ftdcr_v4", "arm.actuation=tension",
       "arm.sections=[{length:0.06,links:6,youngs_modulus:5e10,radius:0.0005,mass:0.004,"
       "tendons:{offset:0.0045,stiffness:7000,pretension:0.5}},"
       "{length:0.06,links:6,youngs_modulus:5e10,radius:0.0005,mass:0.004,"
       "tendons:{offset:0.0045,angle0_deg:60,stiffness:7000,pretension:0.5}}]"]
ARMS = {"prb12": [], "rod": ["arm=rod"], "two_tension": TWO,
        "calibrated": ["arm=ftdcr_v4_calibrated"]}

# Each scenario's short trial (besides scenario=<kind> and its task's trial): a few hundred
# steps. The tip-space scenarios move the hub (tip_mode=vehicle), so their targets suit any
# arm's length.
SHORT = {
    "mission": ["scenario.hover_time=0.1", "scenario.climb_time=0.1",
                "scenario.figure_eight_time=0.1", "scenario.sweep_time=0.2",
                "scenario.return_time=0.1", "scenario.after_time=0.4", "scenario.eight_ramp=0.05",
                "scenario.sweep_ramp=0.1"],
    "workspace": ["scenario.duration=0.4", "scenario.ramp=0.2"],
    "disturbance": ["scenario.duration=0.4", "scenario.start=0.1", "scenario.length=0.1"],
    "held_bend": ["scenario.duration=0.4", "scenario.ramp=0.2", "scenario.report_times=[0.4]"],
    "hover": ["scenario.duration=0.4"],
    "statics": ["scenario.duration=0.4", "scenario.ramp=0.2"],
    "touch": ["scenario.wait=0.1", "scenario.approach_speed=1.0", "scenario.hold=0.3",
              "scenario.settle=0.1", "scenario.reach=0.7"],
    "reach": ["control.tip_mode=vehicle", "scenario.targets=[[0.02,0.0,1.2]]",
              "scenario.move_time=0.4", "scenario.dwell=0.2"],
    "trace": ["control.tip_mode=vehicle", "scenario.size=0.05", "scenario.speed=0.1",
              "scenario.lead_in=1.0", "scenario.tail=0.2"],
    "payload": ["scenario.duration=0.4", "scenario.grasp_at=0.1", "scenario.release_at=0.3",
                "scenario.payload_mass=0.01"],
    "pick_place": ["control.tip_mode=vehicle", "scenario.plan_loaded=false",
                   "scenario.move_time=1.0", "scenario.dwell=0.1", "scenario.hold=0.1",
                   "scenario.tail=0.1"],
    "replay": [],
}
# The per-step terms of the matrix: their switches (the overrides of their rows' trials that
# are not the scenario's, the world's or the arm's).
MATRIX_TERMS = [t for t in terms.TERMS if t.switches and t.where != terms.ESTIMATE]


def _switches(term: terms.Term) -> list[str]:
    return [o for o in term.trial
            if not re.match(r"^(scenario|world|arm)([.=])", o) or o.startswith("arm.servo")]


def _scenario_trial(arm: str, kind: str) -> list[str]:
    return [*ARMS[arm], f"scenario={kind}", *TASKS[kind].trial, *SHORT[kind]]


def _term_trial(arm: str, term: terms.Term) -> list[str]:
    """The row's trial with ``arm``, its scenario's settings in the arm's own scale: a reach
    target is the registry's (a point beside prb12's hanging tip) in the arm's scale as the
    task suite flies its draws (:func:`quadarm.suite_scale.in_arm_scale`: its offset from the
    hub's start times the arm's length over prb12's), and a touch's reach is longer than the gap
    from a short arm's tip to the table."""
    from quadarm.suite_scale import POSITION, in_arm_scale

    trial = [o for o in term.trial if not o.startswith("arm=")]
    if "scenario=reach" in trial:
        given = next(o for o in trial if o.startswith("scenario.targets="))
        altitude = float(compose(["scenario=reach"]).scenario.altitude)
        targets = in_arm_scale(json.loads(given.split("=", 1)[1]), POSITION, ARMS[arm],
                               altitude)
        trial = [o for o in trial if o != given]
        trial.append("scenario.targets=" + json.dumps(targets).replace(" ", ""))
    if "scenario=touch" in trial:
        trial.append("scenario.reach=0.7")
    return [*ARMS[arm], *trial]


@functools.cache
def _traits(arm: str) -> frozenset[str]:
    return terms.arm_traits(compose(ARMS[arm]))


def _why(arm: str, needs: tuple[tuple[str, str], ...]) -> str:
    have = _traits(arm)
    return next((why for trait, why in needs if trait not in have), "")


def _refused_for(over: list[str], *keys: str) -> None:
    """The cell is refused, one line naming one of ``keys`` (the first check that refuses
    it)."""
    with pytest.raises((ConfigError, ValueError)) as err:
        compose(over)
    msg = str(err.value)
    # A key's first two parts: arm.servo.stall_torque's refusal names arm.servo.
    assert "\n" not in msg and any(".".join(k.split(".")[:2]) in msg for k in keys), msg


@functools.cache
def _compose(over: tuple[str, ...]):
    """The validated config of ``over``, composed once per process (not mutated)."""
    return compose(list(over))


def _fly(over: list[str]):
    from quadarm.runner import episode

    ep = episode.run_episode(_compose(tuple(over)))
    assert ep.status in ("ok", "failed"), (ep.status, ep.message)  # flew (task done or not)
    assert all(np.isfinite(v) or np.isnan(v) for *_, v in ep.metrics)
    return ep


def test_the_matrix_covers_every_registered_scenario():
    assert set(SHORT) == set(TASKS), ("tests/model/test_conformance_matrix.py: give SHORT a "
                                      "short trial of each scenario of quadarm/scenarios/tasks.py")


def _has_switch(kind: str, term: terms.Term) -> bool:
    """Whether ``kind``'s schema holds the term's switches: a term switched by a scenario key
    (the payload tasks' weight feed-forward) belongs to the scenarios that have the key."""
    from quadarm.config.schemas.scenarios import SCENARIOS

    fields = {f.name for f in dataclasses.fields(SCENARIOS[kind])}
    return all(k.split(".", 1)[1] in fields for k, _ in term.switches
               if k.startswith("scenario."))


def _cells():
    for arm in ARMS:
        for kind in TASKS:
            for term in (t for t in MATRIX_TERMS if _has_switch(kind, t)):
                sample = (arm, kind) == ("two_tension", "held_bend")
                yield pytest.param(arm, kind, term, id=f"{arm}-{kind}-{term.name}",
                                   marks=() if sample else pytest.mark.slow)


@pytest.mark.parametrize(("arm", "kind", "term"), list(_cells()))
def test_every_cell_composes_or_is_refused_for_its_recorded_reason(arm, kind, term):
    """arm x scenario x term: the config composes (the preflight's checks included) unless a
    registry records what the cell's arm lacks; then it is refused in one line."""
    over = [*_scenario_trial(arm, kind), *_switches(term)]
    scenario_why, term_why = _why(arm, TASKS[kind].needs), _why(arm, term.needs)
    if scenario_why or term_why:
        _refused_for(over, *(["scenario."] if scenario_why else []),
                     *([term.switches[0][0]] if term_why else []))
        return
    cfg = compose(over)
    assert terms.on(term, cfg)


def _flights():
    for arm in ARMS:
        for kind in TASKS:
            sample = (arm, kind) in (("two_tension", "held_bend"), ("prb12", "hover"))
            yield pytest.param(arm, kind, id=f"{arm}-{kind}",
                               marks=() if sample else pytest.mark.slow)


@pytest.mark.parametrize(("arm", "kind"), list(_flights()))
def test_each_arm_flies_each_scenario(arm, kind, monkeypatch):
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    over = _scenario_trial(arm, kind)
    why = _why(arm, TASKS[kind].needs)
    if why:
        _refused_for(over, "scenario.")
        return
    _fly(over)


def _term_flights():
    for arm in ("two_tension", "calibrated"):
        for term in terms.TERMS:
            if term.where == terms.ESTIMATE:
                continue
            sample = (arm, term.name) == ("two_tension", "tendon_damping")
            yield pytest.param(arm, term, id=f"{arm}-{term.name}",
                               marks=() if sample else pytest.mark.slow)


@pytest.mark.parametrize(("arm", "term"), list(_term_flights()))
def test_each_term_flies_with_a_multi_section_arm(arm, term, monkeypatch):
    """The registry's trial of each term (prb12's: tests/model/test_terms_conformance.py) with
    a multi-section arm: refused for the reason its row records, or it flies, and the
    lock-step batch of two (the other with another seed) gives row 0 the one-trial flight's
    log bit for bit."""
    from quadarm.runner import engine

    monkeypatch.setenv("QUADARM_NUMBA", "0")
    over = _term_trial(arm, term)
    why = _why(arm, term.needs)
    if why:
        _refused_for(over, term.switches[0][0])
        return
    one = _fly(over)
    assert terms.on(term, _compose(tuple(over)))
    many = engine.run_batched([_compose(tuple(over)), _compose((*over, "seed=1"))], nthread=1,
                              lockstep=True)
    for name in ("qpos", "qvel", "tip", "ctrl"):
        assert np.array_equal(getattr(many[0].log, name), getattr(one.log, name)), name
