"""The task suite's draws in each arm's own scale (``make tasks ARM=...``, docs/tasks.md).

The task files (``conf/experiment/task_*.yaml``) give their draws (reach targets, trace paths,
press and push forces, payload masses) as numbers for the reference arm, :data:`REFERENCE`
(prb12, the arm the suite was written for). Each draw has a scale (:data:`DRAWS`):

- ``position``: a world point hanging off the hub: its offset from the hub's start
  (0, 0, ``scenario.altitude``) scales with the arm's length L, the straight hanging arm's
  tip below the hub (:func:`length`);
- ``length``: a distance, or a speed along a path (the lap then takes as long): x L;
- ``force``: x the arm's buckling load with the tip held
  (:func:`quadarm.scenarios.touch.buckling_bound`);
- ``mass``: x the arm's payload limit (:func:`payload_limit`): the most the rotors lift with the
  vehicle and the arm, and for servo-driven tendons the most their servos hold
  (:func:`quadarm.scenarios.payload.servo_pull` at ``arm.tension_max``).
- ``damping``: x the arm's sampled-loop bound of the active tendon damping
  (:func:`quadarm.runner.arm_aware.damping_bound`): a baseline's ``control.tendon_damping``
  (:data:`BASELINE_DRAWS`), so that the arm-aware bundles damp every arm at the same fraction of
  the gain its 2-ms loop can hold (prb12's 0.1 N m s/rad is 0.19 of its 0.53; on the calibrated
  v4 arm, whose bound is 0.042, an unscaled 0.1 chatters). A baseline that sets such a key is
  flown as a multirun of its own (its folder ``<task>/<baseline>``), the others together.

A case of a task may set draws of its own (:data:`CASE_DRAWS`): the touch task's wall, a
world point and a size, with the approach distance ``scenario.reach``, since the bent arm has to
meet the wall's face below the rotors.

So one task file serves every arm: flown with another arm, each draw is the reference's times
that arm's quantity over the reference's (:func:`runs`). With the reference arm nothing is
overridden, so its draws are the task files' own, bit for bit.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from quadarm.names import ARM_SCALED_BASELINE_KEYS

REFERENCE = "prb12"  # the arm whose numbers the task files hold
POSITION, LENGTH, FORCE, MASS, DAMPING = "position", "length", "force", "mass", "damping"
BISECTIONS = 8  # halvings of a servo-driven arm's payload limit's bracket


@dataclass(frozen=True)
class Draw:
    """One draw of a task: a config key (dotted), its scale, and whether it is a list of
    values of the task's grid (``runner.grid``) rather than one value."""

    key: str
    scale: str
    grid: bool = False


DRAWS: dict[str, tuple[Draw, ...]] = {
    "task_hover_gusts": (),
    "task_reach": (Draw("scenario.targets", POSITION, grid=True),),
    "task_trace": (Draw("scenario.center", POSITION), Draw("scenario.size", LENGTH),
                   Draw("scenario.speed", LENGTH, grid=True)),
    "task_touch": (Draw("scenario.force", FORCE),),
    "task_pick_place": (Draw("world.payload.mass", MASS),),
    "task_catch": (Draw("scenario.payload_mass", MASS, grid=True),),
    "task_push": (Draw("scenario.force", FORCE),),
}
# A task whose sweep runs cases that set a draw of their own (the touch task's table and wall,
# conf/touch_case): flown as one multirun per case, each case's draw scaled.
CASES: dict[str, tuple[str, tuple[str, ...]]] = {"task_touch": ("touch_case", ("table", "wall"))}
# Draws that a case sets (conf/touch_case/wall.yaml and conf/world/wall.yaml: the wall is the
# world's first object), flown in the arm's scale with that case.
CASE_DRAWS: dict[tuple[str, str], tuple[Draw, ...]] = {
    ("touch_case", "wall"): (Draw("world.objects.0.pos", POSITION),
                             Draw("world.objects.0.size", LENGTH),
                             Draw("scenario.reach", LENGTH)),
}
# Keys a baseline (conf/baseline/*.yaml) may set that have an arm's scale (the analysis reads
# the same list, quadarm.names.ARM_SCALED_BASELINE_KEYS, to name such a baseline's trials).
BASELINE_DRAWS: tuple[Draw, ...] = tuple(Draw(k, DAMPING) for k in ARM_SCALED_BASELINE_KEYS)


@dataclass(frozen=True)
class Scale:
    """An arm's quantities: length L (m), buckling load (N), payload limit (kg) and the active
    tendon damping's sampled-loop bound (N m s/rad)."""

    length: float
    buckling: float
    payload: float
    damping: float

    def ratio(self, ref: Scale, scale: str) -> float:
        if scale in (POSITION, LENGTH):
            return self.length / ref.length
        if scale == FORCE:
            return self.buckling / ref.buckling
        if scale == DAMPING:
            return self.damping / ref.damping
        return self.payload / ref.payload


def length(cfg: Any) -> float:
    """The arm's length L (m): the straight arm's tip site below the vehicle's body (the
    fixed-base model at its rest pose)."""
    import mujoco

    from quadarm.model import build

    b = build(cfg.airframe, cfg.arm, cfg.sim, fixed_base=True)
    m = b.model
    d = mujoco.MjData(m)
    d.qpos[:] = m.qpos0
    mujoco.mj_kinematics(m, d)
    return float(d.xpos[b.quad_body][2] - d.site_xpos[b.tip_site][2])


def payload_limit(cfg: Any) -> float:
    """The largest payload (kg) the arm carries: the rotors' lift left over by the vehicle and
    the arm (the largest per-rotor hover thrust at ``airframe.thrust_max``), and, with
    servo-driven tendons, the most their servos hold at ``arm.tension_max`` (bisected)."""
    from quadarm.config.schemas.physical import hover_thrust
    from quadarm.config.sections import servo_driven

    frame = cfg.airframe
    carried = frame.mass + cfg.arm.total_mass
    per_kg = hover_thrust(frame, 1.0, cfg.sim.gravity)  # thrust per kg: linear in the mass
    lift = frame.thrust_max / per_kg - carried
    if not servo_driven(cfg.arm):
        return float(lift)
    from quadarm.scenarios.payload import servo_pull

    limit = float(cfg.arm.tension_max)
    if servo_pull(cfg, lift) <= limit:
        return float(lift)
    lo, hi = 0.0, float(lift)
    for _ in range(BISECTIONS):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if servo_pull(cfg, mid) <= limit else (lo, mid)
    return lo


@cache
def scale_of(overrides: tuple[str, ...], config_dir: str = "") -> Scale:
    """The :class:`Scale` of the arm that ``overrides`` select (``arm=...`` and any of its
    keys), composed with the suite's config folder (``config_dir``, '' for the package's)."""
    from quadarm.api import compose
    from quadarm.runner.arm_aware import damping_bound_of
    from quadarm.scenarios.touch import buckling_bound

    cfg = compose(list(overrides), conf_dir=config_dir or None)
    return Scale(length=length(cfg), buckling=buckling_bound(cfg), payload=payload_limit(cfg),
                 damping=damping_bound_of(cfg))


def override_key(override: str) -> str:
    """The dotted key of a Hydra override (``+a.b=1`` -> ``a.b``)."""
    return override.split("=", 1)[0].lstrip("+~")


def scaled_arm(args: Sequence[str]) -> tuple[str, ...]:
    """The overrides among ``args`` that choose or change the arm (:func:`arm_overrides`) when
    they make another arm than the reference, whose draws are then scaled; () for the
    reference arm or none chosen (the task files' own draws)."""
    arm = arm_overrides(args)
    return () if arm == (f"arm={REFERENCE}",) else arm


def arm_overrides(args: Sequence[str]) -> tuple[str, ...]:
    """The overrides among the suite's ``args`` that choose or change the arm."""
    return tuple(a for a in args if override_key(a).split(".")[0] == "arm")


def _scaled(value: Any, scale: str, r: float, altitude: float) -> Any:
    """``value`` (a number, a point (3,) or a list of points; sizes (3,)) scaled by ``r``: a
    position's offset from the hub's start (0, 0, altitude), anything else as a whole."""
    if scale != POSITION:
        if np.ndim(value) == 0:
            return float(value) * r
        return (np.asarray(value, dtype=float) * r).tolist()
    p = np.asarray(value, dtype=float)
    hub = np.array([0.0, 0.0, altitude])
    return (hub + (p - hub) * r).tolist()


def in_arm_scale(value: Any, scale: str, arm: Sequence[str], altitude: float = 0.0,
                 config_dir: str = "") -> Any:
    """A draw of the reference arm, ``value`` (a number, a point (3,) in m, or a list of
    points), in the scale of the arm that the overrides ``arm`` select (``arm=...`` and its
    keys), as the suite flies it (:func:`task_overrides`): a ``position`` is a world point whose
    offset from the hub's start (0, 0, ``altitude`` m) scales with the arm's length; the other
    scales multiply the whole value by the arm's quantity over the reference's."""
    r = scale_of(tuple(arm), config_dir).ratio(scale_of((f"arm={REFERENCE}",), config_dir),
                                               scale)
    return _scaled(value, scale, r, altitude)


def _hydra(value: Any) -> str:
    """A value as Hydra's override grammar reads it (lists in JSON's brackets, floats in full
    precision)."""
    return json.dumps(value).replace(" ", "")


def task_overrides(task: str, args: Sequence[str], config_dir: str = "",
                   case: tuple[str, str] | None = None) -> list[str]:
    """The overrides that put ``task``'s draws in the scale of the arm ``args`` choose (none for
    the reference arm: the task file's own draws). ``case``: (group, option) of a task flown
    case by case (:data:`CASES`)."""
    arm = scaled_arm(args)
    draws = (*DRAWS.get(task, ()), *(CASE_DRAWS.get(case, ()) if case else ()))
    if not arm or not draws:
        return []
    from quadarm import terms
    from quadarm.api import compose

    base = [f"+experiment={task}", *([f"{case[0]}={case[1]}"] if case else [])]
    ref_cfg = compose(base, conf_dir=config_dir or None)  # the reference arm: the file's draws
    ref = scale_of((f"arm={REFERENCE}",), config_dir)
    own = scale_of(arm, config_dir)
    altitude = float(getattr(ref_cfg.scenario, "altitude", 0.0))
    out: list[str] = []
    grid: dict[str, list[Any]] = {}
    for draw in draws:
        r = own.ratio(ref, draw.scale)
        if draw.grid:
            grid[draw.key] = [_scaled(v, draw.scale, r, altitude)
                              for v in ref_cfg.runner.grid[draw.key]]
        else:
            value = _scaled(terms.get(ref_cfg, draw.key), draw.scale, r, altitude)
            out.append(f"{draw.key}={_hydra(value)}")
    if grid:
        out.append("runner.grid={" + ",".join(f"{k}:{_hydra(v)}" for k, v in grid.items()) + "}")
    # The scaled draws follow from the arm, which the job folders already name: kept out of
    # the folder names (a grid of 16 targets in full precision is longer than a file name may
    # be), by the experiment's own list of excluded keys plus these.
    scaled = [o.split("=", 1)[0] for o in out]
    out.append(dirname_excludes(base, scaled, config_dir))
    return out


@cache
def experiment_hydra(base: tuple[str, ...], config_dir: str = "") -> Any:
    """The ``hydra`` node that the overrides ``base`` (a task's experiment, and its case)
    compose to with the suite's config folder (composed once per process)."""
    from quadarm.config import CONF_DIR
    from quadarm.config import compose as hydra_compose

    return hydra_compose(list(base), str(Path(config_dir or CONF_DIR).resolve())).hydra


def dirname_excludes(base: Sequence[str], keys: Sequence[str], config_dir: str = "") -> str:
    """The override that adds ``keys`` to the ``hydra.job.config.override_dirname.exclude_keys``
    that ``base`` (the task's experiment) composes to."""
    node = experiment_hydra(tuple(base), config_dir)
    have = [str(k) for k in node.job.config.override_dirname.exclude_keys]
    return ("hydra.job.config.override_dirname.exclude_keys=["
            + ",".join([*have, *(k for k in keys if k not in have)]) + "]")


def _sweep_baselines(base: Sequence[str], args: Sequence[str], config_dir: str) -> list[str]:
    """The baselines a task's multirun flies: those of ``args`` (``+baseline=a,b``), else the
    experiment's sweep (``hydra.sweeper.params``)."""
    given = [a.split("=", 1)[1] for a in args if override_key(a) == "baseline"]
    if given:
        return given[-1].split(",")
    node = experiment_hydra(tuple(base), config_dir)
    params = node.sweeper.get("params") or {}
    value = params.get("+baseline", params.get("baseline"))
    return [] if value is None else str(value).split(",")


@cache
def baseline_value(name: str, key: str, config_dir: str = "") -> Any:
    """The value of ``key`` that baseline ``name`` (``conf/baseline/<name>.yaml``) flies with:
    the default job with ``+baseline=<name>`` (the tasks set no key of a baseline's)."""
    from quadarm import terms
    from quadarm.api import compose

    return terms.get(compose([f"+baseline={name}"], conf_dir=config_dir or None), key)


def baseline_runs(task: str, args: Sequence[str], config_dir: str = "",
                  case: tuple[str, str] | None = None) -> list[tuple[str, list[str]]]:
    """For another arm than the reference, the task's baselines that set a key of
    :data:`BASELINE_DRAWS` (a non-zero ``control.tendon_damping`` that ``args`` do not set)
    flown one multirun each with that key in the arm's scale, (``/<baseline>``, overrides);
    the other baselines together, ('', ``+baseline=...``). [('', [])] when no baseline has
    such a key: the task's own sweep."""
    arm = scaled_arm(args)
    if not arm:
        return [("", [])]
    base = [f"+experiment={task}", *([f"{case[0]}={case[1]}"] if case else [])]
    given = {override_key(a) for a in args}
    draws = [d for d in BASELINE_DRAWS if d.key not in given]
    names = _sweep_baselines(base, args, config_dir)
    if not draws or not names:
        return [("", [])]
    scaled: list[tuple[str, list[str]]] = []
    plain: list[str] = []
    for name in names:
        values = [(d, baseline_value(name, d.key, config_dir)) for d in draws]
        if not any(float(v) != 0.0 for _, v in values):
            plain.append(name)
            continue
        # the two arms' quantities only when a baseline is scaled (scale_of caches them)
        ref = scale_of((f"arm={REFERENCE}",), config_dir)
        own = scale_of(arm, config_dir)
        scaled.append((f"/{name}", [f"+baseline={name}", *(
            f"{d.key}={_hydra(float(v) * own.ratio(ref, d.scale))}" for d, v in values)]))
    if not scaled:
        return [("", [])]
    return ([("", [f"+baseline={','.join(plain)}"])] if plain else []) + scaled


def runs(task: str, args: Sequence[str], config_dir: str = ""
         ) -> list[tuple[str, list[str]]]:
    """The multiruns of ``task`` for the arm ``args`` choose: (the folder's suffix, the
    overrides) each; one with no suffix, or, where the arm is not the reference, one per case
    (:data:`CASES`) whose cases set scaled draws of their own, and within each one per
    baseline with a scaled key (:func:`baseline_runs`)."""
    cases: list[tuple[str, tuple[str, str] | None]] = [("", None)]
    if task in CASES and scaled_arm(args):
        group, options = CASES[task]
        cases = [(f"/{o}", (group, o)) for o in options]
    out: list[tuple[str, list[str]]] = []
    for suffix, case in cases:
        head = [*([f"{case[0]}={case[1]}"] if case else []),
                *task_overrides(task, args, config_dir, case)]
        out += [(suffix + sub, [*head, *extra])
                for sub, extra in baseline_runs(task, args, config_dir, case)]
    return out
