"""The servo model's records in the step seam (``arm.servo``; the term is
:func:`quadarm.model.servo.servo_term`, called by :func:`quadarm.runner.step.servo_step`):
:class:`Servo` (``Params.servo``), laid out once per batch by :func:`records`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from quadarm.config.sections import SectionArmConfig
from quadarm.model import sections as model_sections
from quadarm.model import servo as model_servo
from quadarm.runner.lifecycle import Prepared


class Servo(NamedTuple):
    """The servos of a batch (``Params.servo``)."""

    on: np.ndarray  # (nsim,) bool: some tendon of the trial has a servo model
    prm: np.ndarray  # (nsim, n_tendons, N_SERVO) float: quadarm.model.servo's rows (S_*)
    adr: np.ndarray  # (n_tendons,) int64: each tendon actuator's activation address (-1: none)
    h: np.ndarray  # (nsim,) float, s: the physics step


def rows(p: Prepared) -> np.ndarray:
    """One trial's servo rows (n_tendons, N_SERVO): zeros (ideal servos) but where
    ``arm.servo`` (or a section's own) models the tendon's servo."""
    arm, built = p.cfg.arm, p.built
    nt = len(built.tendon_actuators)
    out = np.zeros((nt, model_servo.N_SERVO))
    if not isinstance(arm, SectionArmConfig) or arm.servo is None:
        return out
    m = built.model
    acts = np.asarray(built.tendon_actuators)
    rest = (m.tendon_length0[m.actuator_trnid[acts, 0]]
            - model_sections.pretension(arm) / model_sections.tendon_stiffness(arm))
    scale = model_sections.travel_scales(arm)
    stiff = model_sections.tendon_stiffness(arm)
    out[:, model_servo.S_PARTNER] = -1.0
    out[:, model_servo.S_LEAD] = 1.0
    for i, o in model_sections.pairs(arm):
        out[i, model_servo.S_PARTNER], out[o, model_servo.S_PARTNER] = o, i
        out[o, model_servo.S_LEAD] = 0.0
    for i, sv in enumerate(arm.servos()):
        if sv is None:
            continue
        r = out[i]
        r[model_servo.S_ON] = 1.0
        r[model_servo.S_REST] = rest[i]
        r[model_servo.S_LEVER] = scale[i] * sv.spool_radius
        r[model_servo.S_RADIUS] = sv.spool_radius
        r[model_servo.S_STALL] = sv.stall_torque
        r[model_servo.S_SPEED] = sv.speed
        r[model_servo.S_KP] = sv.kp
        r[model_servo.S_KD] = sv.kd
        r[model_servo.S_BAND] = sv.deadband
        r[model_servo.S_STIFF] = stiff[i]
    return out


def records(preps: Sequence[Prepared]) -> Servo:
    """The :class:`Servo` of ``preps`` (same model structure)."""
    m = preps[0].built.model
    acts = np.asarray(preps[0].built.tendon_actuators, dtype=np.int64)
    prm = np.ascontiguousarray(np.stack([rows(p) for p in preps]))
    return Servo(on=np.ascontiguousarray(prm[:, :, model_servo.S_ON].any(axis=1)), prm=prm,
                 adr=np.ascontiguousarray(m.actuator_actadr[acts], dtype=np.int64),
                 h=np.array([p.built.model.opt.timestep for p in preps], dtype=float))
