"""``observe="sensed"``: the environments observe the sensing term's estimates
(:mod:`quadarm.runner.sense`) instead of the simulated state.

Both environments run the sensing term of sample k through :func:`sense_rows` on the step
seam's records (:mod:`quadarm.runner.step`: ``Params.sn`` the pre-drawn noise, ``State.ss``
the sensors' and estimators' memory, ``Log.est`` the logged estimates), compiled with the
seam when numba is on, so that a vector environment's row i and a single environment are the
same computation on the same numbers. The term runs once per new sample, when the state of
sample k is there: after the reset (k = 0) and after each step into k.

Noise per episode. A trial's sensors draw their errors from ``SeedSequence(cfg.seed)``
(:func:`quadarm.sensing.noise.draw`). An environment instead draws one 63-bit seed per episode
from its own generator at reset (``np_random``: ``reset(seed=s)`` reproduces the episode, and a
vector environment's environment i, seeded ``s + i``, draws what a single environment seeded
``s + i`` draws) and writes that episode's noise into its row of ``Params.sn``
(:func:`redraw_noise`): every episode and every environment sees its own noise.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np

from quadarm.config import Config
from quadarm.runner import jit, step
from quadarm.runner.sense import SENSORS, Sense, SenseState
from quadarm.runner.sense import state as fresh_state
from quadarm.sensing import noise

MODES = ("exact", "sensed")
SEED_BOUND = 2**63  # the per-episode noise seed is drawn uniformly from [0, 2^63)


def checked_observe(observe: str, cfg: Config) -> str:
    """``observe`` if it is valid for ``cfg``; ValueError naming the argument otherwise."""
    if observe not in MODES:
        raise ValueError(f"observe={observe!r}: must be one of {', '.join(MODES)}")
    if observe == "sensed" and cfg.sensing.exact:
        raise ValueError("observe='sensed': needs a sensing preset other than exact "
                         "(e.g. the override sensing=realistic)")
    return observe


def sense_rows(ks: np.ndarray, p: step.Params, s: step.State, lg: step.Log,
               rows: np.ndarray) -> None:
    """The sensing term (:func:`quadarm.runner.step.sense`) of sample ``ks[i]`` (nsim,) for
    the simulations flagged in ``rows`` (nsim,) bool.

    The shape fit reads the tendon tensions last commanded (``State.tendon.out``, N), which the
    flying loop's tendon term writes; here the actions are the commands, so the term first
    copies the tendon actuators' ``ctrl`` of the step that led to sample k (none at k = 0)."""
    tendons = p.tendon.actuators
    for i in range(rows.shape[0]):
        if rows[i]:
            k = ks[i]
            t, ctrl = s.tendon.out[i], s.data.ctrl[i]
            for j in range(tendons.shape[0]):
                t[j] = ctrl[tendons[j]] if k > 0 else 0.0
            step.sense(k, p, s, lg, i)


def kernel(compiled: bool) -> Any:
    """:func:`sense_rows`, compiled (lazily; cached on disk with the seam's kernels) or plain."""
    return jit.kernel_of(sense_rows, compiled)


# Sense's fields that hold one row per simulation (the others describe the model).
_SHARED = frozenset(("prof", "hq", "hv", "ft_adr", "tip_site", "caps", "n_links", "alinks"))
_NOISE = Sense._fields[2:2 + 2 * len(SENSORS)]  # imu_w, imu_b, pos_w, ..., tip_b


def episode_seed(rng: np.random.Generator) -> int:
    """One episode's noise seed, drawn from the environment's generator."""
    return int(rng.integers(SEED_BOUND, dtype=np.uint64))


def redraw_noise(sn: Sense, i: int, cfg: Config, seed: int, steps: int, dt: float) -> None:
    """Row i of ``sn``'s pre-drawn noise and bias: an episode of ``steps`` steps of ``dt`` (s)
    under ``cfg.sensing``, drawn from ``seed`` as :func:`quadarm.runner.sense.records` draws a
    trial's from ``cfg.seed`` (the channels' periods and delays do not depend on the seed)."""
    chans = noise.draw(cfg.sensing, seed, steps * dt, dt)
    fields = iter(_NOISE)
    for name in SENSORS:
        for drawn in (chans[name].white, chans[name].bias):
            row = getattr(sn, next(fields))[i]
            row[:len(drawn)] = drawn
            row[len(drawn):] = 0.0
    if sn.aon[i]:  # the arm IMUs' own stream
        arm = noise.draw_arm(cfg.sensing.arm_imu, seed, steps * dt, dt, sn.alinks.shape[0])
        for drawn, rows in ((arm.white, sn.ai_w), (arm.bias, sn.ai_b)):
            rows[i, :len(drawn)] = drawn
            rows[i, len(drawn):] = 0.0


def copy_rows(dst: NamedTuple, src: NamedTuple, rows: Iterable[int],
              shared: frozenset[str] = frozenset()) -> None:
    """Copy rows ``rows`` of every per-simulation array field of ``src`` into ``dst`` (records
    of the same kind; fields named in ``shared`` are not per simulation). Where the two
    records' trailing sizes differ (padding to the longest trial, ring capacities), the common
    leading part is copied."""
    rows = list(rows)
    if not rows:
        return
    for name, a, b in zip(dst._fields, dst, src, strict=True):
        if name in shared or not isinstance(a, np.ndarray) or a.ndim == 0:
            continue
        common = [slice(0, min(x, y)) for x, y in zip(a.shape[1:], b.shape[1:], strict=True)]
        for r in rows:
            index: tuple[int | slice, ...] = (r, *common)
            a[index] = b[index]


def restart_rows(p: step.Params, s: step.State, rows: Iterable[int]) -> None:
    """Start the sensors' and estimators' memory of ``rows`` afresh, as a new trial's
    (:func:`quadarm.runner.sense.state`: the filter at the known start pose), once the start
    state's kinematics are computed: the tip tracker's held sample, which its first delivery
    replaces (one latency later), starts at the known start tip as the filter starts at the
    known start pose, not at the origin."""
    rows = list(rows)
    if rows:
        ss: SenseState = s.ss
        d = s.data
        copy_rows(ss, fresh_state(p.sn, d.qpos.shape[1], d.qvel.shape[1],
                                  d.sensordata.shape[1]), rows)
        for r in rows:
            ss.tip[r] = d.site_xpos[r, p.tip_site]


def keep_rows(new: tuple[step.Params, step.State], old: tuple[step.Params, step.State],
              rows: Iterable[int]) -> None:
    """Carry the sensing of ``rows`` (simulations mid-episode) from the ``old`` records into
    ``new`` ones rebuilt for a batch whose other rows changed models: their episode's noise
    and their sensors' memory."""
    rows = list(rows)
    copy_rows(new[0].sn, old[0].sn, rows, _SHARED)
    copy_rows(new[1].ss, old[1].ss, rows)
