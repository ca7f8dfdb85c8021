"""The active tendon damping's sampled-loop bound (``quadarm.runner.arm_aware.damping_bound``,
docs/arm_aware_control.md, "Stability bound"): computed from the hover keyframe's linearised
one-step map, checked here against the nonlinear loop flown step by step in plain Python (the
damping's own function, ``mj_step``, the model's friction and tension limits included). Below
the bound a kicked arm's commands settle; above it they chatter between the tendon limits.
The warning that ``python -m quadarm`` prints above it, and none below."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from quadarm import plausible
from quadarm.api import compose
from quadarm.config import Config
from quadarm.control import arm as terms
from quadarm.model import BuiltModel, build
from quadarm.runner import arm_aware

TWO = ["arm=ftdcr_v4", "arm.actuation=tension",
       "arm.sections=[{length:0.06,links:6,youngs_modulus:5e10,radius:0.0005,mass:0.004,"
       "tendons:{offset:0.0045,stiffness:7000,pretension:0.5}},"
       "{length:0.06,links:6,youngs_modulus:5e10,radius:0.0005,mass:0.004,"
       "tendons:{offset:0.0045,angle0_deg:60,stiffness:7000,pretension:0.5}}]"]
STEPS = 300  # 0.6 s at 2 ms
KICK = 0.5  # rad/s on every bending hinge about x


@cache
def _bench(overrides: tuple[str, ...]) -> tuple[Config, BuiltModel, float]:
    """The config, the bench-mounted model and its bound (N m s/rad)."""
    cfg = compose(list(overrides))
    built = build(cfg.airframe, cfg.arm, cfg.sim, fixed_base=True)
    return cfg, built, arm_aware.damping_bound(cfg, built)


def _fly(overrides: list[str], fraction: float) -> tuple[float, float]:
    """The bound (N m s/rad) of the bench-mounted arm and, with the damping at ``fraction`` of
    it, the mean step-to-step change of the tendon commands over the last 50 steps after a
    kick, over the commands' range (tension limit, or for servos the limit over the tendon
    stiffness)."""
    import mujoco

    cfg, built, bound = _bench(tuple(overrides))
    m = built.model
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    dp = arm_aware.damping(fraction * bound, 0.0, cfg.arm)
    dofs = np.stack(terms.hinge_dofs(m, cfg.arm.segments)).astype(np.int64)
    tendons = np.asarray(built.tendon_actuators)
    servo = dp[terms.D_SERVO] != 0.0
    if not servo:
        d.ctrl[tendons] = 0.5 * dp[terms.D_TMAX]
    held = d.ctrl[tendons].copy()
    d.qvel[dofs[0]] = KICK
    out = np.zeros(tendons.size)
    cmds = []
    for _ in range(STEPS):
        terms.damped_tensions(dp, d.qvel, dofs[0], dofs[1], held.copy(), out)
        d.ctrl[tendons] = out
        cmds.append(out.copy())
        mujoco.mj_step(m, d)
    # the commands' range: tensions (N), or lengths (m) over which a servo's tension spans it
    first = terms.D_HEAD + terms.D_SEC * int(dp[terms.D_NSEC]) + terms.T_CMD
    per_n = np.abs(dp[first::terms.D_TEN]).max() if servo else 1.0  # m per N (1/k), or 1
    span = dp[terms.D_TMAX] * per_n
    change = np.abs(np.diff(np.array(cmds[-51:]), axis=0)).mean()
    return bound, float(change / span)


@pytest.mark.parametrize("overrides", [["arm=prb12"], TWO, ["arm=ftdcr_v4_calibrated"]],
                         ids=["prb12", "two_section_tension", "v4_calibrated_servo"])
def test_below_the_bound_the_damping_settles_above_it_it_chatters(overrides: list[str]
                                                                    ) -> None:
    bound, calm = _fly(overrides, 0.8)
    _, chatter = _fly(overrides, 1.25)
    assert 0.0 < bound < arm_aware.BOUND_RANGE[1]
    assert calm < 1e-3, f"0.8 x bound {bound:.3g}: commands still move {calm:.2g} of range"
    assert chatter > 0.05, f"1.25 x bound {bound:.3g}: commands move only {chatter:.2g}"


@pytest.mark.slow  # make test's 10-min budget (README); runs under make test-all
def test_the_warning_names_the_key_and_the_bound() -> None:
    cfg = compose(["arm=ftdcr_v4_calibrated", "scenario=hover", "control.tendon_damping=0.1"])
    bound = arm_aware.damping_bound_of(cfg)
    (note,) = [n for n in plausible.notes(cfg) if "tendon_damping" in n]
    assert note.startswith("control.tendon_damping=0.1 ") and f"{bound:.3g}" in note
    below = compose(["arm=ftdcr_v4_calibrated", "scenario=hover",
                     f"control.tendon_damping={0.5 * bound}"])
    assert not [n for n in plausible.notes(below) if "tendon_damping" in n]
