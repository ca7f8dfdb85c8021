"""Per-trial arrays of the arm-aware control terms (``control.feedforward``,
``control.tendon_damping``, ``control.tendon_bias``), computed once before a trial flies and
stacked into the step seam's parameter record (:func:`quadarm.runner.step.params`), which every
loop reads. The per-step maths is :mod:`quadarm.control.arm`.

With ``feedforward: none`` and no damping or bias, the mode and gains in these arrays are 0 and
the seam skips both terms: the loops do exactly what they did without them.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from quadarm.config import Config
from quadarm.control import arm as terms
from quadarm.model import BuiltModel, names


@dataclass(frozen=True)
class ArmTerms:
    """Arrays of one trial. Shapes: ffp (N_FEEDFORWARD,); chain (3 + 21 n_bodies,); sites
    (7,) int64; dp (N_DAMPING,); dofs (2, segments) int64 (x and y hinge dof addresses)."""

    ffp: np.ndarray
    chain: np.ndarray
    sites: np.ndarray
    dp: np.ndarray
    dofs: np.ndarray


def arm_terms(cfg: Config, built: BuiltModel) -> ArmTerms:
    """The arrays of ``cfg``'s arm-aware terms for its compiled model."""
    m = built.model
    ctl, arm = cfg.control, cfg.arm
    # The arm's first body: a midpoint chain's base piece (welded to the flange), else link 0.
    base = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, names.BASE_PIECE)
    root = base if base >= 0 else m.body(names.link_body(0)).id
    wrench = ctl.feedforward == "wrench"
    ffp = terms.feedforward_params(ctl.feedforward, float(m.body_subtreemass[root]),
                                   m.opt.gravity, built.quad_body,
                                   built.flange_force_adr, built.flange_torque_adr)
    chain = terms.chain_params(m, built.quad_body, root)
    sites = (terms.wrench_sites(m, built.flange_site) if wrench
             else np.zeros(7, dtype=np.int64))
    dp = terms.damping_params(ctl.tendon_damping, ctl.tendon_bias, arm.tension_max,
                              arm.tendon_offset, arm.tendon_angles_deg)
    dofs = np.stack(terms.hinge_dofs(m, arm.segments)).astype(np.int64)
    return ArmTerms(ffp, chain, sites, dp, dofs)
