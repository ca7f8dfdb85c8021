"""numba-compiled kernels of the closed loop (optional: import fails without numba).

The closed loop's own work per step (controller, commands, logging) costs a few microseconds in
Python, which is small next to ``mj_step`` with ``implicitfast`` (about 100 us) but a quarter of
a step with ``Euler`` (about 25 us). Compiled, it costs well under one microsecond. The kernels
here run the very source of :func:`quadarm.control.geometric.law`, and call MuJoCo's C API
(``mj_step``, ``mj_kinematics``) directly on the ``MjData`` that the Python bindings own, so the
Python interpreter is entered only between chunks of steps (divergence checks, force pulses).

Set ``QUADARM_NUMBA=0`` to use the pure-Python loop instead; both give identical numbers
(``tests/model/test_performance_equivalence.py``). numba's compiled code is cached on disk
(``cache=True``), so the compilation (a few seconds) happens once per version of the sources: numba
keys a cached kernel on its own file only, not on the modules whose functions it compiles in
(the control law, the arm-aware and air terms), so the cache lives in a folder named after a
hash of all of them (``__pycache__/numba-<hash>``; ``NUMBA_CACHE_DIR`` overrides it).

A fatal MuJoCo error (``mju_error``, not a warning: e.g. a corrupt model) inside a compiled
chunk cannot be turned into a Python exception and ends the process; instabilities are warnings
and are handled like in the Python loop.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

import llvmlite.binding
import mujoco
import numba
import numpy as np
from numba import types

from quadarm.control import arm as arm_terms
from quadarm.control import geometric
from quadarm.model import aero
from quadarm.runner import air


def _library() -> str:
    """The path of the MuJoCo shared library that the Python bindings load."""
    here = Path(mujoco.__file__).parent
    for pattern in ("libmujoco.so*", "libmujoco*.dylib", "mujoco*.dll"):
        found = sorted(here.glob(pattern))
        if found:
            return str(found[0])
    raise ImportError(f"no MuJoCo shared library next to {here}")


def _cache_dir() -> Path:
    """``__pycache__/numba-<hash>`` of the sources that the kernels compile; older folders of
    other versions are removed."""
    sources = (Path(__file__), Path(geometric.__file__), Path(arm_terms.__file__),
               Path(aero.__file__), Path(air.__file__))
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:16]
    root = Path(__file__).resolve().parent / "__pycache__"
    for old in root.glob("numba-*"):
        if old.name != f"numba-{digest}":
            shutil.rmtree(old, ignore_errors=True)
    return root / f"numba-{digest}"


if not os.environ.get("NUMBA_CACHE_DIR"):
    numba.config.CACHE_DIR = str(_cache_dir())  # type: ignore[attr-defined]  # set at import

# Symbols are resolved by name, so the cached machine code stays valid across processes.
llvmlite.binding.load_library_permanently(_library())
_C_SIGNATURE: Any = types.void(types.voidptr, types.voidptr)  # void f(mjModel*, mjData*)
_mj_step = types.ExternalFunction("mj_step", _C_SIGNATURE)
_mj_kinematics = types.ExternalFunction("mj_kinematics", _C_SIGNATURE)

law = numba.njit(cache=True, nogil=True)(geometric.law)
# The arm-aware terms (quadarm.control.arm) are register_jitable: the kernels call them as is.

# The air terms (issue 9: gusts and downwash, quadarm.runner.air), the same sources as the
# plain-Python loop's. register_jitable lets compiled code call the plain function.
numba.extending.register_jitable(aero.downwash_forces)
air_terms = numba.njit(cache=True, nogil=True)(air.terms)
# The Dryden gusts' recursions (quadarm.model.aero.dryden_gusts(filters=native)).
ar1_filter = numba.njit(cache=True, nogil=True)(aero.ar1_filter)
lateral_filter = numba.njit(cache=True, nogil=True)(aero.lateral_filter)


@numba.njit(cache=True, nogil=True)
def fly_chunk(mp: int, dp: int, k0: int, k1: int, n: int, prm: np.ndarray, mix: np.ndarray,
              integ: np.ndarray, qpos: np.ndarray, qvel: np.ndarray, ctrl: np.ndarray,
              site_xpos: np.ndarray, tip: int, rotors: np.ndarray, tendons: np.ndarray,
              tensions: np.ndarray, ref_p: np.ndarray, ref_v: np.ndarray, ref_a: np.ndarray,
              u: np.ndarray, qpos_log: np.ndarray, qvel_log: np.ndarray, tip_log: np.ndarray,
              ctrl_log: np.ndarray, air_on: bool, air_args: tuple, ffp: np.ndarray,
              chain: np.ndarray, work: np.ndarray, s: np.ndarray, sites: np.ndarray,
              sensordata: np.ndarray, site_xmat: np.ndarray, xipos: np.ndarray,
              actuator_force: np.ndarray, damp: np.ndarray, dofs: np.ndarray,
              t_out: np.ndarray) -> None:  # pragma: no cover - compiled
    """Steps k0..k1-1 of :func:`quadarm.runner.episode.fly` (same order of operations).

    ``mp``/``dp`` are the addresses of the ``mjModel``/``mjData``; ``qpos`` (nq,), ``qvel``
    (nv,), ``ctrl`` (nu,) and ``site_xpos`` (nsite, 3) are the bindings' live views of that
    ``mjData``. ``tensions`` is (n + 1, n_tendons) or (0, n_tendons) for slack tendons.
    With ``air_on``, the air terms (:func:`quadarm.runner.air.terms`, arguments
    ``air_args`` from :func:`quadarm.runner.air.args`) run before each ``mj_step``.

    Arm-aware terms (:mod:`quadarm.runner.arm_aware`): ``ffp``, ``chain``, ``sites``,
    ``damp``, ``dofs`` are a trial's :class:`~quadarm.runner.arm_aware.ArmTerms`; ``work``,
    ``s`` and ``t_out`` (3,) scratch; ``sensordata``, ``site_xmat``, ``xipos`` and
    ``actuator_force`` live views of the ``mjData``: they hold the forward pass of the previous
    ``mj_step``, so the wrench feed-forward at sample k is the reaction at sample k - 1.
    """
    slack = tensions.shape[0] == 0
    ff_on = ffp[arm_terms.F_MODE] != 0.0
    damp_on = damp[arm_terms.D_GAIN] != 0.0 or damp[arm_terms.D_BIAS] != 0.0
    for k in range(k0, k1):
        qpos_log[k, :] = qpos
        qvel_log[k, :] = qvel
        if ff_on:
            arm_terms.feedforward(prm, qpos, ref_a[k], ffp, chain, work, s, sites, sensordata,
                                  site_xmat, site_xpos, xipos, actuator_force, tendons)
        law(prm, mix, integ, qpos, qvel, ref_p[k], ref_v[k], ref_a[k], u)
        for j in range(rotors.shape[0]):
            ctrl[rotors[j]] = u[j]
        if damp_on:
            # Slack plans command no bend: the damping acts alone (with its bias).
            if slack:
                t_out[:] = 0.0
            else:
                t_out[:] = tensions[k]
            arm_terms.damped_tensions(damp, qvel, dofs[0], dofs[1], t_out, t_out)
            for j in range(tendons.shape[0]):
                ctrl[tendons[j]] = t_out[j]
        elif not slack:
            for j in range(tendons.shape[0]):
                ctrl[tendons[j]] = tensions[k, j]
        ctrl_log[k, :] = ctrl
        if k == n:
            _mj_kinematics(mp, dp)  # type: ignore[call-overload]  # numba's C call
            tip_log[k, :] = site_xpos[tip]
            break
        if air_on:  # gusts and downwash (issue 9)
            air_terms(k, u, *air_args)
        _mj_step(mp, dp)  # type: ignore[call-overload]  # numba's C call
        # mj_step computed the kinematics of state k before integrating.
        tip_log[k, :] = site_xpos[tip]


@numba.njit(cache=True, nogil=True)
def batch_control(k: int, last: np.ndarray, live: np.ndarray, prm: np.ndarray, mix: np.ndarray,
                  integ: np.ndarray, qpos: np.ndarray, qvel: np.ndarray, ctrl: np.ndarray,
                  rotors: np.ndarray, tendons: np.ndarray, slack: np.ndarray,
                  tensions: np.ndarray, ref_p: np.ndarray, ref_v: np.ndarray,
                  ref_a: np.ndarray, u: np.ndarray, qpos_log: np.ndarray, qvel_log: np.ndarray,
                  ctrl_log: np.ndarray, ffp: np.ndarray, chain: np.ndarray, work: np.ndarray,
                  s: np.ndarray, sites: np.ndarray, sensordata: np.ndarray,
                  site_xmat: np.ndarray, site_xpos: np.ndarray, xipos: np.ndarray,
                  actuator_force: np.ndarray, damp: np.ndarray, dofs: np.ndarray,
                  t_out: np.ndarray) -> None:  # pragma: no cover - compiled
    """Sample k of every live simulation of the batched engine: log its state, compute and
    write its commands, log them. State arrays are (nsim, ...); logs, references and tensions
    are time-major (K + 1, nsim, ...), padded to K + 1 samples; ``last`` (nsim,) is each
    simulation's final sample. The arm-aware arrays are those of :func:`fly_chunk`, one row
    per simulation."""
    for i in range(qpos.shape[0]):
        if not live[i] or k > last[i]:
            continue
        qpos_log[k, i, :] = qpos[i]
        qvel_log[k, i, :] = qvel[i]
        if ffp[i, arm_terms.F_MODE] != 0.0:
            arm_terms.feedforward(prm[i], qpos[i], ref_a[k, i], ffp[i], chain[i], work[i], s[i],
                                  sites[i], sensordata[i], site_xmat[i], site_xpos[i],
                                  xipos[i], actuator_force[i], tendons)
        law(prm[i], mix[i], integ[i], qpos[i], qvel[i], ref_p[k, i], ref_v[k, i], ref_a[k, i],
            u[i])
        for j in range(rotors.shape[0]):
            ctrl[i, rotors[j]] = u[i, j]
        if damp[i, arm_terms.D_GAIN] != 0.0 or damp[i, arm_terms.D_BIAS] != 0.0:
            # Slack plans have zero rows in ``tensions``: the damping acts alone.
            t_out[i, :] = tensions[k, i]
            arm_terms.damped_tensions(damp[i], qvel[i], dofs[i, 0], dofs[i, 1], t_out[i],
                                      t_out[i])
            for j in range(tendons.shape[0]):
                ctrl[i, tendons[j]] = t_out[i, j]
        elif not slack[i]:
            for j in range(tendons.shape[0]):
                ctrl[i, tendons[j]] = tensions[k, i, j]
        ctrl_log[k, i, :] = ctrl[i]


@numba.njit(cache=True, nogil=True)
def batch_air(k: int, last: np.ndarray, live: np.ndarray, u: np.ndarray, gusty: np.ndarray,
              wind_series: np.ndarray, wind: np.ndarray, downwash: np.ndarray, prm: np.ndarray,
              quad: int, sites: np.ndarray, links: np.ndarray, act_adr: np.ndarray,
              act: np.ndarray, xipos: np.ndarray, xmat: np.ndarray, cvel: np.ndarray,
              subtree_com: np.ndarray, site_xpos: np.ndarray, pulse_link: np.ndarray,
              pulse_force: np.ndarray, pulse_start: np.ndarray, pulse_stop: np.ndarray,
              thrust: np.ndarray, force: np.ndarray,
              xfrc: np.ndarray) -> None:  # pragma: no cover - compiled
    """The air terms before step k of every live simulation of the batched engine that steps
    after sample k: :func:`quadarm.runner.air.terms` per simulation on its rows of the
    stacked :class:`quadarm.runner.air.BatchAir` arrays and the batch's (nsim, ...) state."""
    for i in range(u.shape[0]):
        if not live[i] or k >= last[i] or not (gusty[i] or downwash[i]):
            continue
        air_terms(k, u[i], gusty[i], wind_series[:, i], wind[i], downwash[i], prm[i], quad,
                  sites, links, act_adr, act[i], xipos[i], xmat[i], cvel[i], subtree_com[i],
                  site_xpos[i], pulse_link[i], pulse_force[i], pulse_start[i], pulse_stop[i],
                  thrust[i], force[i], xfrc[i])


def enabled() -> bool:
    """Whether the compiled kernels are to be used (``QUADARM_NUMBA`` not set to 0)."""
    return os.environ.get("QUADARM_NUMBA", "1").strip().lower() not in ("0", "false", "no")
