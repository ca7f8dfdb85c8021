"""The registry of per-step terms: the one table every other list of terms is derived from.

A term is something the closed loop does at every step beyond the paper's controller: an
estimator, a part of the controller, a shaping of the commands, or a force on the model. Each
row of :data:`TERMS` says

- ``name``; ``switches``: its config keys (dotted, as in ``runs.parquet``) with their "off"
  values (the schema's defaults: with every switch off the loop is the paper's, bit for bit);
  ``settings``: the other config keys it reads (its parameters); ``scenario``: the one
  scenario that runs it (the touch task's force loop), instead of switches;
- ``where`` it runs in the step (:data:`WHERE`, :data:`STEP_ITEMS`; ``docs/architecture.md``,
  "Where a term runs"), which also says whether it acts on an agent's actions (only a force on
  the model does);
- ``modules``: the sources under ``quadarm/`` that the compiled step compiles in for it;
  ``functions``: its functions in ``quadarm/runner/step.py``; ``records``: its fields of the
  seam's records, as paths through their nested records (``Params.air.gusty``,
  ``State.tip.corr``, ``Log.wind``; a path to a whole record, ``Params.sn``, claims every
  field under it);
- ``select``: the flag of :func:`quadarm.analysis.select.only` that admits its trials (every
  other selection, the paper's tables first, excludes them);
- ``env``: what the environments' ``controller_action()`` does with it (the single and the
  vector environment's both run the seam's whole controller, :func:`quadarm.runner.step.control`,
  the vector one row by row): :data:`ENV_SAME` (it
  flies it as the command line does: the controller's terms, and the force terms, which the
  environments' step runs),
  :data:`ENV_REFUSE` (it refuses the config, in one line: it would silently fly another
  controller) or :data:`ENV_ORACLE` (it gives the paper's law on the simulated state: a
  heuristic policy, documented as not the command line's loop); ``air``: it runs in the seam's
  air term (it needs the rotor commands, also when an agent writes them); ``replay``: it writes
  ``xfrc_applied`` or ``opt.wind`` per step, so the benchmark's bare loop replays those;
- ``doc``: its page and the heading of its section; ``trial``: command-line overrides of a
  short trial with it on (the conformance test flies it, with every arm kind);
- ``needs``: what it needs of an arm, as (trait, why) pairs over :data:`ARM_TRAITS` (the
  servo model needs servo-driven tendons); an arm without the trait is refused for the
  reason said there, and every other arm flies it (``tests/model/test_conformance_matrix.py``
  follows the registry: every arm kind x scenario x term composes and flies, or is refused
  naming the term's key for the recorded reason).

From the table: the paper-trial selection (:mod:`quadarm.analysis.select`), the environments'
refusals (:mod:`quadarm.envs.core`), whether a trial has air terms (:func:`air_on`), what the
benchmark replays, the sources of the compiled loops' cache key
(:func:`quadarm.runner.jit.cache_dir`), and the term list of ``docs/architecture.md`` (a test
checks it). ``tests/model/test_terms_conformance.py`` runs the same checks over every row.

This module imports the standard library only (like :mod:`quadarm.names`), so that the analysis,
which never imports MuJoCo, reads the same table as the loops.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

ESTIMATE = "estimate"  # before the controller: writes what it reads
CONTROLLER = "controller"  # terms 2-4 of the step
SHAPING = "command shaping"  # after the controller, on its commands
FORCE = "force on the model"  # with the air terms, or in the model itself
WHERE = (ESTIMATE, CONTROLLER, SHAPING, FORCE)
# Where each ``where`` runs: the items of the step's list (``docs/architecture.md``, "Where a
# term runs", and :mod:`quadarm.runner.step`'s docstring) that may name its seam functions.
# With an agent's actions (the seam's EXTERNAL mode) items 1-4 do not run: estimate, controller
# and command-shaping terms act on the controller's commands only, force terms on whatever
# command is applied (they read ``ctrl``/``act``, never the law's variables).
STEP_ITEMS = {ESTIMATE: (1,), CONTROLLER: (1, 2, 3, 4), SHAPING: (3, 4), FORCE: (6,)}
ENV_SAME, ENV_REFUSE, ENV_ORACLE = "same", "refuse", "oracle"


@dataclass(frozen=True)
class Term:
    """One per-step term (see the module docstring for the fields)."""

    name: str
    switches: tuple[tuple[str, Any], ...]
    where: str
    modules: tuple[str, ...]
    functions: tuple[str, ...]
    records: tuple[str, ...]
    select: str
    doc: tuple[str, str]
    trial: tuple[str, ...]
    settings: tuple[str, ...] = ()
    scenario: str = ""
    env: str = ENV_SAME
    air: bool = False
    replay: bool = False
    needs: tuple[tuple[str, str], ...] = ()


# What a term or a scenario may need of an arm (``Term.needs``, ``Task.needs`` in
# quadarm/scenarios/tasks.py): its traits, from its config (:func:`arm_traits`).
ARM_TRAITS = {
    "one_section": "the one-section arms (arm=prb12|rod: one section, three tendons)",
    "sections": "a multi-section arm (arm kind sections)",
    "servo": "servo-driven tendons (arm kind sections, arm.actuation=displacement)",
    "tension": "force-driven tendons (the one-section arms, or arm.actuation=tension)",
}


def arm_traits(cfg: Any) -> frozenset[str]:
    """The traits (:data:`ARM_TRAITS`) of a config's arm (object or flat mapping)."""
    kind = str(get(cfg, "arm.kind") or "")
    if kind != "sections":
        return frozenset({"one_section", "tension"})
    servo = str(get(cfg, "arm.actuation") or "") == "displacement"
    return frozenset({"sections", "servo" if servo else "tension"})


def unmet(needs: tuple[tuple[str, str], ...], cfg: Any) -> str:
    """'' when a config's arm has every trait of ``needs``, else the recorded reason of the
    first it lacks (one line)."""
    have = arm_traits(cfg)
    for trait, why in needs:
        if trait not in have:
            return why
    return ""


TERMS: tuple[Term, ...] = (
    Term("sensing", (("sensing.preset", "exact"),), ESTIMATE,
         ("runner/sense.py", "sensing/ekf.py", "sensing/sensors.py", "sensing/shape.py",
          "sensing/armfilter.py"),
         ("sense",), ("Params.sn", "State.ss", "Log.est"), "sensing",
         ("docs/sensing.md", "In the loop"),
         ("sensing=realistic", "scenario=hover", "scenario.duration=0.3"), env=ENV_ORACLE),
    Term("force_loop", (), CONTROLLER, ("runner/contact.py",), (),
         ("Params.contact.fc", "Params.contact.wsens", "State.contact.fcs",
          "State.contact.ref_p", "State.contact.ref_v", "State.contact.ref_a", "Log.force",
          "Log.contact"), "",
         ("docs/contact.md", "The force law"),
         ("scenario=touch", "world=table", "scenario.wait=0.1", "scenario.approach_speed=1.0",
          "scenario.hold=0.3", "scenario.settle=0.1"),
         settings=("control.force_kp", "control.force_ki", "control.force_ramp",
                   "control.force_reach"), scenario="touch"),
    Term("feedforward", (("control.feedforward", "none"),), CONTROLLER, ("control/arm.py",),
         ("feedforward",), ("Params.arm.ffp", "Params.arm.chain", "Params.arm.sites",
                            "State.arm.work", "State.arm.s3"), "arm",
         ("docs/arm_aware_control.md", "Feed-forward"),
         ("control.feedforward=com", "scenario=hover", "scenario.duration=0.3")),
    Term("weight_feedforward", (("scenario.weight_feedforward", False),), CONTROLLER,
         ("runner/step.py",), ("carry_term",),
         ("Params.carry.weight", "Params.carry.weld", "Params.carry.adr",
          "Params.carry.ipos", "State.data.eq_active"), "weight",
         ("docs/arm_aware_control.md", "Weight feed-forward"),
         ("scenario=payload", "scenario.duration=0.4", "scenario.grasp_at=0.1",
          "scenario.release_at=0.3"),
         settings=("scenario.payload_mass", "world.payload.mass")),
    Term("tendon_damping", (("control.tendon_damping", 0.0), ("control.tendon_bias", 0.0)),
         CONTROLLER, ("control/arm.py",), ("damped_tensions",),
         ("Params.arm.damp", "Params.arm.dofs"), "arm",
         ("docs/arm_aware_control.md", "Active tendon damping"),
         ("control.tendon_damping=0.1", "control.tendon_bias=0.5", "scenario=disturbance",
          "scenario.duration=0.3", "scenario.start=0.1", "scenario.length=0.1")),
    Term("tendon_lowpass", (("control.tendon_tau", 0.0),), SHAPING, ("runner/step.py",),
         ("tendon_lowpass",), ("Params.tendon.lowpass", "State.tendon.filtered"), "arm",
         ("docs/arm_aware_control.md", "Tendon command low-pass"),
         ("control.tendon_tau=0.05", "scenario=held_bend", "scenario.duration=0.3",
          "scenario.ramp=0.2", "scenario.report_times=[0.3]")),
    Term("tip_feedback", (("control.tip_gain", 0.0),), CONTROLLER,
         ("control/tipfeedback.py",), ("tip_term", "tip_feedback"),
         ("Params.tip.gain_dt", "Params.tip.target", "State.tip.corr", "State.tip.ref"), "tip",
         ("docs/tipspace_control.md", "The tip feedback"),
         ("scenario=reach", "control.tip_gain=0.5", "scenario.targets=[[0.08,0.0,1.074]]",
          "scenario.move_time=0.2", "scenario.dwell=0.1"),
         settings=("control.tip_mode", "control.tip_mu_limit")),
    Term("tip_bend", (("control.tip_bend", False),), CONTROLLER, ("control/tipfeedback.py",),
         ("tip_bend_feedback",), ("Params.tip.bend", "Params.tip.bend_plan", "State.tip.t"),
         "tip", ("docs/tipspace.md", "Bend correction in the tip feedback"),
         ("scenario=reach", "control.tip_gain=0.5", "control.tip_bend=true",
          "scenario.targets=[[0.08,0.0,1.074]]", "scenario.move_time=0.2",
          "scenario.dwell=0.1")),
    Term("servo", (("arm.servo.stall_torque", None),), FORCE, ("model/servo.py",),
         ("servo_step", "servo_term"),
         ("Params.servo", "Log.servo"), "servo", ("docs/arm.md", "Servo model"),
         ("arm=ftdcr_v4", "arm.servo={stall_torque:0.3,speed:4.0}", "scenario=held_bend",
          "scenario.duration=0.3", "scenario.ramp=0.2", "scenario.report_times=[0.3]"),
         settings=("arm.sections",),
         needs=(("servo", "a servo model turns a tendon's length command into its horn's "
                 "speed: it needs servo-driven tendons (arm kind sections, "
                 "arm.actuation=displacement); force-driven tendons have no servo"),)),
    Term("motor_lag", (("airframe.motor_tau", 0.0),), FORCE, (), (), (), "lag",
         ("docs/aero.md", "Motor lag"),
         ("airframe.motor_tau=0.02", "scenario=disturbance", "scenario.duration=0.3",
          "scenario.start=0.1", "scenario.length=0.1")),
    Term("wind", (("aero.wind", [0.0, 0.0, 0.0]),), FORCE, (), (), (), "wind",
         ("docs/aero.md", "Wind and gusts"),
         ("aero.wind=[2.0,0.0,0.0]", "scenario=hover", "scenario.duration=0.3")),
    Term("gusts", (("aero.gust_intensity", 0.0),), FORCE, ("model/aero.py", "runner/air.py"),
         ("air_term", "air_terms"),
         ("Params.air.gusty", "Params.air.wind", "State.data.wind", "Log.wind"),
         "gusts", ("docs/aero.md", "Wind and gusts"),
         ("aero.gust_intensity=0.5", "scenario=hover", "scenario.duration=0.3"),
         settings=("aero.gust_length",), air=True, replay=True),
    Term("downwash", (("aero.downwash", False),), FORCE, ("model/aero.py", "runner/air.py"),
         ("air_term", "air_terms"),
         ("Params.air.downwash", "Params.air.dw", "Params.air.quad", "Params.air.rotor_sites",
          "Params.air.links", "Params.air.act_adr", "State.air.thrust", "State.air.force",
          "Log.xfrc"), "downwash",
         ("docs/aero.md", "Rotor downwash on the arm"),
         ("aero.downwash=true", "scenario=disturbance", "scenario.duration=0.3",
          "scenario.start=0.1", "scenario.length=0.1"),
         settings=("aero.drag_coefficient", "airframe.prop_radius"), air=True, replay=True),
    Term("ground_effect", (("aero.ground_effect", False),), FORCE, ("model/ground.py",),
         ("air_term", "air_terms"), ("Params.air.ge", "Params.air.surfaces"), "ground_effect",
         ("docs/aero.md", "Ground effect"),
         ("aero.ground_effect=true", "world=table", "scenario=hover", "scenario.duration=0.3"),
         settings=("airframe.prop_radius",), air=True, replay=True),
)

# What the paper's loop itself has (not a term): the seam's own functions and records, the
# sources every compiled loop compiles in, and the config keys of the paper's controller and
# of the planners (read once, before the first step).
BASE_MODULES = ("runner/jit.py", "runner/step.py", "control/geometric.py",
                "control/tendons.py")
BASE_FUNCTIONS = ("law", "tendon_term", "control", "before", "after",
                  "flagged")  # flagged: the one-trial loop's divergence test
BASE_RECORDS = (
    "Params.mode", "Params.record", "Params.last", "Params.q0", "Params.v0",
    "Params.tip_site",
    # the paper's law, field by field (a field added to its records needs a row, or a line here)
    "Params.law.prm", "Params.law.mix", "Params.law.rotors", "Params.law.ref_p",
    "Params.law.ref_v", "Params.law.ref_a", "State.law.prm", "State.law.integ", "State.law.u",
    "Params.law.yawed", "Params.law.yaw",  # a plan's heading reference (a replay's yaw_ref)
    "Params.tendon.actuators", "Params.tendon.tense", "Params.tendon.tensions",
    "State.tendon.out",
    "Params.tendon.servo", "Log.tension",  # servo-driven tendons: their logged tensions
    # the scenario's force pulses (applied with the air terms when those run)
    "Params.air.pulse_link", "Params.air.pulse_force", "Params.air.pulse_start",
    "Params.air.pulse_stop",
    "Params.air.on",  # whether any term with ``air`` runs (the gate of the seam's air_term)
    "State.data.qpos", "State.data.qvel", "State.data.ctrl", "State.data.act",
    "State.data.xipos", "State.data.xmat", "State.data.cvel", "State.data.subtree_com",
    "State.data.site_xpos", "State.data.site_xmat", "State.data.sensordata",
    "State.data.actuator_force", "State.data.xfrc_applied",
    "Log.qpos", "Log.qvel", "Log.tip", "Log.ctrl")
BASE_KEYS = ("control.tendon_map", "control.tip_mode", "control.tip_mu_limit")


def by_name(name: str) -> Term:
    """The row of term ``name``; KeyError naming the registered ones otherwise."""
    for t in TERMS:
        if t.name == name:
            return t
    raise KeyError(f"{name}: not a registered term ({', '.join(t.name for t in TERMS)})")


def flags() -> tuple[str, ...]:
    """The selection flags of :func:`quadarm.analysis.select.only`, in table order."""
    out: list[str] = []
    for t in TERMS:
        if t.select and t.select not in out:
            out.append(t.select)
    return tuple(out)


def is_off(value: Any, off: Any) -> bool:
    """Whether a config value (a Python value, or a ``runs.parquet`` cell: JSON text for
    lists, None or NaN for results written before the key existed) is the switch's off value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return True
    if isinstance(off, list):
        if isinstance(value, str):
            value = json.loads(value)
        return [float(v) for v in value] == [float(v) for v in off]
    if isinstance(off, bool):
        if isinstance(value, str):
            return value.strip().lower() in ("false", "0", "")
        return not bool(value)
    if isinstance(off, float):
        return float(value) == off
    return str(value) == str(off)


def get(cfg: Any, key: str) -> Any:
    """The value of dotted ``key`` in a config object (attributes) or a flat mapping; None
    where an object has no such attribute or a node on the way is null (``arm.servo.
    stall_torque`` of an arm whose ``servo`` is null, or of a one-section arm). A numeric part
    indexes a list (``world.objects.0.pos``); None past its end."""
    if isinstance(cfg, Mapping):
        return cfg.get(key)
    node = cfg
    for part in key.split("."):
        if part.isdigit() and isinstance(node, list | tuple):
            node = node[int(part)] if int(part) < len(node) else None
        else:
            node = getattr(node, part, None)
        if node is None:
            return None
    return node


def scenario_kind(cfg: Any) -> str:
    if isinstance(cfg, Mapping):
        return str(cfg.get("scenario.kind", cfg.get("scenario", "")))
    return str(cfg.scenario.kind)


def on(term: Term, cfg: Any) -> bool:
    """Whether ``term`` runs for a config (object or flat mapping)."""
    if term.scenario:
        return scenario_kind(cfg) == term.scenario
    return any(not is_off(get(cfg, k), off) for k, off in term.switches)


def active(cfg: Any, where: Callable[[Term], bool] = lambda t: True) -> tuple[Term, ...]:
    """The terms that run for ``cfg`` (among those ``where`` keeps)."""
    return tuple(t for t in TERMS if where(t) and on(t, cfg))


def air_on(cfg: Any) -> bool:
    """Whether the trial has per-step air terms (the seam's :func:`air_term`)."""
    return bool(active(cfg, lambda t: t.air))


def replayed(cfg: Any) -> bool:
    """Whether the benchmark's bare loop must replay the applied forces and wind."""
    return bool(active(cfg, lambda t: t.replay))


def needing(key: str) -> tuple[Term, ...]:
    """The switched terms whose ``settings`` read config key ``key`` (the root config refuses
    an unusable value of it, e.g. ``airframe.prop_radius``, when one of them is on)."""
    return tuple(t for t in TERMS if t.switches and key in t.settings)


def env_refusal(cfg: Any) -> str:
    """'' when the environments' ``controller_action()`` flies ``cfg`` as the command line
    does, else the one line that says which terms it does not run."""
    off = active(cfg, lambda t: t.env == ENV_REFUSE)
    if not off:
        return ""
    what = ", ".join(t.name + (f" ({t.switches[0][0]}={get(cfg, t.switches[0][0])})"
                               if t.switches else f" (scenario={t.scenario})") for t in off)
    return (f"{what}: controller_action() does not run these terms; they run in "
            "python -m quadarm's loops, not in the environments")


def compiled_sources() -> tuple[str, ...]:
    """Every source under ``quadarm/`` that the compiled loops may compile in."""
    out = list(BASE_MODULES)
    for t in TERMS:
        out += [m for m in t.modules if m not in out]
    return tuple(out)
