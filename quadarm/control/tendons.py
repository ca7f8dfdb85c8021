"""Tendon tension allocation for three tendons around the backbone.

The bend command is a direction beta (rad, in the body xy-plane, towards which the arm bends)
and a magnitude mu in [0, 1]. With c_i = cos(beta - phi_i):

- ``balanced`` (paper eq. 8): T_i = mu Tmax / sqrt(3) * (c_i - min_j c_j). For equally spaced
  tendons the peak tension is mu Tmax at worst, the slackest tendon is exactly zero, and the
  resultant |sum_i T_i n_i| = sqrt(3)/2 mu Tmax for every beta.
- ``legacy``: T_i = mu Tmax max(c_i, 0), which loses authority between tendons.
"""

from __future__ import annotations

import numpy as np

SQRT3 = float(np.sqrt(3.0))


def tensions(mu: np.ndarray | float, beta: np.ndarray | float, phi: np.ndarray, t_max: float,
             mapping: str = "balanced") -> np.ndarray:
    """Tendon tensions (N), shape (..., 3), for bend commands mu (...) and beta (..., rad).

    ``phi`` (3,) are the tendon angles (rad) about the backbone in the body frame.
    """
    mu = np.asarray(mu, dtype=float)[..., None]
    beta = np.asarray(beta, dtype=float)[..., None]
    c = np.cos(beta - np.asarray(phi, dtype=float))
    if mapping == "balanced":
        t = mu * t_max / SQRT3 * (c - c.min(axis=-1, keepdims=True))
        # The spread of c is at most sqrt(3): this bound only removes round-off (~1e-15 N).
        return np.minimum(t, mu * t_max)
    if mapping == "legacy":
        return mu * t_max * np.maximum(c, 0.0)
    raise ValueError(f"control.tendon_map={mapping}: must be one of balanced, legacy")


def resultant(t: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """Planar resultant sum_i T_i n_i (N), shape (..., 2), with n_i = (cos phi_i, sin phi_i)."""
    n = np.stack([np.cos(phi), np.sin(phi)], axis=-1)
    return np.asarray(t) @ n
