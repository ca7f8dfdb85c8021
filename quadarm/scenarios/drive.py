"""The tendon rows of a flight plan for any arm: the paper's three-tendon allocation for a
one-section arm (unchanged), each section on its own plan for a multi-section arm
(:mod:`quadarm.control.sections`), and, with ``arm.actuation=displacement``, those tensions
turned into the servos' tendon-length commands (m) through each section's geometry, so that the
step seam writes the plan's row to ``ctrl`` in either mode."""

from __future__ import annotations

import numpy as np

from quadarm.config import Config
from quadarm.config.sections import SectionArmConfig
from quadarm.control import sections as plan_sections
from quadarm.control.tendons import tensions as allocate
from quadarm.model import BuiltModel
from quadarm.model.sections import pairs, play, pretension, tendon_stiffness


def bend_rows(cfg: Config, built: BuiltModel, mu: np.ndarray | float,
              beta: np.ndarray | float) -> np.ndarray:
    """The tendon commands (n + 1, n_tendons) for bend commands mu (n + 1,) and beta
    (n + 1,) rad (or scalars, broadcast): tensions (N), or tendon lengths (m) in
    displacement mode."""
    arm = cfg.arm
    if not isinstance(arm, SectionArmConfig):
        phi = np.radians(arm.tendon_angles_deg)
        return allocate(mu, beta, phi, arm.tension_max, cfg.control.tendon_map)
    base = pretension(arm) if arm.actuation == "displacement" else None
    return commands(cfg, built, plan_sections.plan_tensions(mu, beta, arm, base))


def commands(cfg: Config, built: BuiltModel, t: np.ndarray) -> np.ndarray:
    """A multi-section arm's commands for tensions t (n + 1, n_tendons) N: t itself for
    ``actuation=tension``; the servos' length commands (m) for ``displacement``, through the
    servo's ``backlash`` (a play along time, :func:`quadarm.model.sections.play`)."""
    arm = cfg.arm
    assert isinstance(arm, SectionArmConfig)
    if arm.actuation == "tension":
        return t
    m = built.model
    rest = m.tendon_length0[m.actuator_trnid[built.tendon_actuators, 0]]
    u = plan_sections.displacement_commands(t, arm, rest)
    if pairs(arm):
        u = pair_commands(u, t, arm, rest)
    return play(u, arm.backlash)


def pair_commands(u: np.ndarray, t: np.ndarray, arm: SectionArmConfig,
                  rest: np.ndarray) -> np.ndarray:
    """The length commands ``u`` (n + 1, n_tendons) m with each antagonistic pair's
    (``sections.<j>.tendons.pairs``) made one servo's: tendon i pulled by p and its opposite
    o paid out by p from their pretensioned lengths (u = L0 - T0 / k -+ p), p chosen so that
    the pair's net tension T_i - T_o is the plan's t_i - t_o (``t`` (n + 1, n_tendons) N
    beyond the pretension) at the plan's zero-gravity bend, where tendon i has shortened by
    s_i (:func:`quadarm.control.sections.shortening`): with both taut (|t_i - t_o| <= 2 T0),
    k (p - s_i) = (t_i - t_o) / 2, each side moving by half; past that the side released goes
    slack and the other carries it all, k (p - s_i) = sign (|t_i - t_o| - T0). So the pair
    gives each section the plan's moment as two independent servos would. ``rest`` (n_tendons,)
    m: each tendon's straight length L0."""
    t = np.asarray(t, dtype=float)
    out = np.array(u, dtype=float)
    t0, k = pretension(arm), tendon_stiffness(arm)
    s = plan_sections.shortening(t + t0, arm)
    for i, o in pairs(arm):
        delta = t[..., i] - t[..., o]
        x = np.where(np.abs(delta) <= 2.0 * t0[i], 0.5 * delta,
                     np.sign(delta) * (np.abs(delta) - t0[i]))
        p = s[..., i] + x / k[i]
        out[..., i] = rest[i] - t0[i] / k[i] - p
        out[..., o] = rest[o] - t0[o] / k[o] + p
    return out


def slack_rows(cfg: Config, built: BuiltModel, n: int) -> np.ndarray | None:
    """The tendon rows of a plan that bends nothing, n samples: None (slack tendons, the
    seam commands nothing) except for servo-driven tendons, which hold their pretension, the
    arm straight in zero gravity (the plan at mu = 0; a position actuator left at command 0
    would pull its tendon to zero length)."""
    arm = cfg.arm
    if not isinstance(arm, SectionArmConfig) or arm.actuation == "tension":
        return None
    return bend_rows(cfg, built, np.zeros(n), np.zeros(n))


def check(cfg: Config) -> None:
    """Refuse, in one line, what a multi-section arm cannot fly (every scenario and every
    arm-aware term flies one: touch's press is bounded by the chain's buckling load, payload by
    the servos' hold, the tip-space scenarios plan through the tip map of any arm, the
    feed-forward, the tendon damping and bias and the command low-pass are written for any
    number of sections and tendons, :mod:`quadarm.control.arm`): the legacy tendon map (the
    paper's first allocation of one section's three tendons, which a section plan replaces),
    what the flight model does not hold (a
    capstan friction, a yielding backbone, tendons passing at another offset, an anisotropic
    section: the bench replay's), and sections whose tendons cannot bend them every way."""
    from quadarm.config.checks import ConfigError

    arm = cfg.arm
    if not isinstance(arm, SectionArmConfig):
        return
    what = f"a multi-section arm (arm kind sections, {len(arm.sections)} sections)"
    if arm.tendon_capstan_mu > 0:
        raise ConfigError("arm.tendon_capstan_mu", arm.tendon_capstan_mu, "must be 0 in flight: "
                          "the capstan friction is the bench replay's (python -m "
                          "quadarm.identify); MuJoCo's tendon carries one tension")
    if arm.bend_yield_curvature > 0:
        raise ConfigError("arm.bend_yield_curvature", arm.bend_yield_curvature, "must be 0 in "
                          "flight: the bilinear bending spring is the bench replay's (python -m "
                          "quadarm.identify); MuJoCo's hinges are linear springs")
    passing = [j for j, s in enumerate(arm.sections) if s.tendons.pass_scale != 1.0]
    if passing:
        j = passing[0]
        raise ConfigError(f"arm.sections.{j}.tendons.pass_scale",
                          arm.sections[j].tendons.pass_scale, "must be 1 in flight: the bend "
                          "plan allocates tensions for tendons whose moment arm is their offset "
                          "in every section they pass (the bench replay takes any value)")
    turned = [j for j, s in enumerate(arm.sections) if s.anisotropic]
    if turned:
        j = turned[0]
        sec = arm.sections[j]
        name = "bend_anisotropy" if sec.bend_anisotropy != 0.0 else "bend_axis_deg"
        raise ConfigError(f"arm.sections.{j}.{name}", getattr(sec, name), "must be 0 in "
                          "flight: the bend plan allocates tensions for an isotropic section "
                          "whose hinges are the links' own x and y (the bench replay takes any "
                          "value)")
    c = cfg.control
    if c.tendon_map != "balanced":
        raise ConfigError("control.tendon_map", c.tendon_map, f"must be balanced with {what}: "
                          "legacy is the paper's first allocation of one section's three "
                          "tendons; each section of a multi-section arm has its own plan "
                          "(docs/arm.md)")
    for j, s in enumerate(arm.sections):
        a = np.sort(np.mod(np.radians(s.tendons.angles()), 2.0 * np.pi))
        gaps = np.diff(np.concatenate([a, a[:1] + 2.0 * np.pi]))
        if a.size < 3 or gaps.max() >= np.pi - 1e-9:
            raise ConfigError(f"arm.sections.{j}.tendons", s.tendons.angles(),
                              "the bend plan needs tendons that bend the section every way "
                              "(at least 3, every gap between neighbours under 180 deg)")
