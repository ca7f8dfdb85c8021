"""Stage 2's train-only choice along a valley (``identify.select``, ``identify.holdout``,
``identify.ridge``, ``identify.ridge_grid``, ``identify.refit_nfev``): on a linear problem
whose fitted rows see only a + b (a valley) and whose held-out rows see a - b, the holdout
rule picks the candidate of lowest held-out error (computed here in closed form), the ridge
lands on the normal equations' solution, the default is scipy's plain fit, bad keys are
refused in one line and the trial store's hash of a default job is the one it had before
these keys existed."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import least_squares

from quadarm.config import ConfigError
from quadarm.config.identify import IdentifyConfig
from quadarm.config.sections import SectionArmConfig, SectionConfig, TendonSetConfig
from quadarm.identify import fit
from quadarm.identify.__main__ import (
    DYNAMIC_KEYS,
    SELECTION_KEYS,
    SIM_KEYS_AT_DEFAULT,
    _cache_path,
    compose,
    main,
)

TRUE = {"a": 0.7, "b": 0.2}


class Valley:
    """A stand-in for :class:`fit.Problem` (the methods stage 2 calls): the marker of row k is
    (a u_k + b v_k, 0.5 a u_k, 0) m with u = pull[:, 0], v = pull[:, 1]. Rows with v = u only
    see a + b (and a through y): with ``y_gain`` 0 a valley of equal cost."""

    def __init__(self, y_gain: float = 0.0) -> None:
        self.keys = [("a", 0.0, 1.0), ("b", -1.0, 1.0)]
        self.y_gain = y_gain

    def values(self, x: np.ndarray) -> dict[str, float]:
        return fit.values_of(self.keys, x)

    def normalised(self, values: dict[str, float]) -> np.ndarray:
        return fit.normalised_of(self.keys, values)

    def nominal(self) -> dict[str, float]:
        return {"a": 0.3, "b": 0.0}

    def simulate(self, values: dict[str, float], pull: np.ndarray,
                 rows: np.ndarray | None = None) -> np.ndarray:
        p = pull if rows is None else pull[rows]
        a, b = values["a"], values["b"]
        return np.stack([a * p[:, 0] + b * p[:, 1], self.y_gain * a * p[:, 0],
                         np.zeros(len(p))], axis=1)


def _data(y_gain: float = 0.0) -> tuple[Valley, np.ndarray, np.ndarray, np.ndarray]:
    """60 fitted rows (v = u) then 40 held-out rows (v = -u), tips from TRUE."""
    u = np.linspace(0.01, 0.05, 100)
    v = np.where(np.arange(100) < 60, u, -u)
    pull = np.stack([u, v], axis=1)
    prob = Valley(y_gain)
    held = np.arange(100) >= 60
    return prob, pull, prob.simulate(TRUE, pull), held


def _held_rmse_mm(values: dict[str, float], pull: np.ndarray, tip: np.ndarray,
                  held: np.ndarray) -> float:
    """Closed form: the error of row k is (da u_k + db v_k, 0, 0) (y_gain 0) less its mean."""
    u, v = pull[held, 0], pull[held, 1]
    e = (values["a"] - TRUE["a"]) * u + (values["b"] - TRUE["b"]) * v
    return float(np.sqrt(np.mean((e - e.mean()) ** 2))) * 1e3


def test_holdout_picks_the_candidate_of_lowest_held_out_error():
    """Four starts end at four points of the valley a + b = 0.9 (the fitted rows' cost ~0 at
    each); the rule scores each on the held-out rows and keeps the best, which is the one
    nearest the true (a, b); the cost rule cannot tell them apart."""
    prob, pull, tip, held = _data()
    out = fit.stage2(prob, pull, tip, 1, 4, 1, 20, 3, select="holdout", held=held)
    sel = out["select"]
    want = [_held_rmse_mm(v, pull, tip, held) for v in sel["values"]]
    assert np.allclose(sel["holdout_mm"], want, rtol=1e-9, atol=1e-9)
    assert sel["chosen"] == int(np.argmin(want))
    assert max(want) > 3 * min(want) > 0  # the candidates differ: the choice matters
    for v in sel["values"]:  # every candidate fits the fitted rows (the valley's floor)
        assert abs(v["a"] + v["b"] - 0.9) < 1e-6
    # refit_nfev 0 keeps the chosen point; the rows fitted are the 60 not held out
    assert out["values"] == sel["values"][sel["chosen"]]
    assert (out["rows"], sel["fold_rows"], sel["held_rows"]) == (60, 60, 40)
    assert sel["candidates"] == [[i, 0.0] for i in range(4)]


def test_a_refit_sees_every_row():
    """With the held-out rows' a - b in the refit, the refit from the chosen point reaches the
    true values (the problem is linear and then identified)."""
    prob, pull, tip, held = _data()
    out = fit.stage2(prob, pull, tip, 1, 3, 1, 20, 3, select="holdout", held=held,
                     refit_nfev=20)
    assert out["rows"] == 100 and out["select"]["refit_nfev"] > 0
    assert abs(out["values"]["a"] - TRUE["a"]) < 1e-6
    assert abs(out["values"]["b"] - TRUE["b"]) < 1e-6


def test_the_ridge_lands_on_the_normal_equations_solution():
    """ridge w (mm): residuals w sqrt(K) (x - x_nominal) appended to the aligned tip errors
    (mm); for a linear model the minimum solves (A^T A + w^2 K I) x = A^T r0 + w^2 K x_nom,
    A the aligned errors' matrix in the normalised variables. Fitted rows only (the valley):
    the ridge picks the valley's point nearest the nominal values (in the normalised units)."""
    prob, pull, tip, held = _data(y_gain=0.0)
    rows = np.flatnonzero(~held)
    w = 0.7
    out = fit.stage2(prob, pull[rows], tip[rows], 1, 1, 1, 50, 0, ridge=w)
    # The model's aligned error (3 K,) mm is affine in x: e = A x + c.
    def err(x):
        sim = prob.simulate(prob.values(x), pull[rows])
        return ((sim - sim.mean(axis=0)) - (tip[rows] - tip[rows].mean(axis=0))).ravel() * 1e3
    c = err(np.zeros(2))
    A = np.stack([err(np.eye(2)[i]) - c for i in range(2)], axis=1)
    x_nom = prob.normalised(prob.nominal())
    k = len(rows) * w * w
    x = np.linalg.solve(A.T @ A + k * np.eye(2), -A.T @ c + k * x_nom)
    assert np.allclose(prob.normalised(out["values"]), x, rtol=0, atol=1e-6)
    # Nearly the projection of x_nom onto the valley a + b = 0.9 (x_a + 2 x_b = 1.9).
    normal = np.array([1.0, 2.0])
    foot = x_nom - (normal @ x_nom - 1.9) / (normal @ normal) * normal
    assert np.allclose(prob.normalised(out["values"]), foot, rtol=0, atol=3e-3)


def test_the_default_is_scipys_plain_fit_from_the_nominal_start():
    """select=cost, ridge 0: stage 2 is scipy's least squares on the aligned errors, from the
    nominal values, bit for bit, and records no selection."""
    prob, pull, tip, _ = _data(y_gain=0.5)
    out = fit.stage2(prob, pull, tip, 2, 1, 1, 15, 0)
    rows = np.arange(0, 100, 2)
    ref = least_squares(fit._residuals, prob.normalised(prob.nominal()), bounds=(0.0, 1.0),
                        args=(prob, pull, rows, tip[rows]), diff_step=1e-3, max_nfev=15,
                        x_scale="jac")
    assert out["values"] == prob.values(ref.x)
    assert out["costs"] == [float(ref.cost)] and "select" not in out


@pytest.mark.parametrize("override, key", [
    ("identify.select=vote", "select"),
    ("identify.ridge=-1", "ridge"),
    ("identify.ridge_grid=[0,-0.5]", "ridge_grid.1"),
    ("identify.refit_nfev=-2", "refit_nfev"),
    ("identify.select=holdout", "holdout"),
    ("identify.holdout=[pair23_]", "holdout"),
    ("identify.ridge_grid=[0,1]", "ridge_grid"),
    ("identify.start_spread=1.5", "start_spread"),
    ("identify.start_spread=-0.1", "start_spread"),
])
def test_bad_selection_keys_are_refused_in_one_line(tmp_path, capsys, override, key):
    out = tmp_path / "run"
    assert main(["+experiment=identify_ftdcr_v4", override, f"identify.out={out}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"identify.{key}" in err, err
    assert not out.exists()


def test_a_holdout_matching_no_train_row_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["+experiment=identify_ftdcr_v4", "identify.select=holdout",
                 "identify.holdout=[no_such_pattern]", f"identify.out={out}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "identify.holdout" in err and "matches 0" in err
    assert not out.exists()


def test_the_config_range_checks():
    with pytest.raises(ConfigError, match="select"):
        IdentifyConfig(select="both")
    IdentifyConfig(select="holdout", holdout=["pair23_"], ridge_grid=[0.0, 1.0],
                   refit_nfev=3)


def test_the_trial_store_hash_of_a_default_job_is_unchanged(tmp_path):
    """The selection keys at their defaults do not enter the hash (so a default job keeps
    the hash it had before they existed: computed here as it was then, plus the parameters'
    order, hashed since issue 38); set, each does."""
    from quadarm.config import default_store
    from quadarm.identify import data
    from quadarm.runner.store import fingerprint

    frame, arm, sim, cfg, _ = compose(["+experiment=identify_ftdcr_v4"])
    recs = {w: data.read(cfg, w, arm.length) for w in ("pulls", "train", "val")}
    job = {k: v for k, v in dataclasses.asdict(cfg).items()
           if k not in ("out", "name", "workers", *SELECTION_KEYS, *DYNAMIC_KEYS)}
    simd = {k: v for k, v in dataclasses.asdict(sim).items() if k not in SIM_KEYS_AT_DEFAULT}
    h = hashlib.sha256(fingerprint().encode())
    h.update(json.dumps([dataclasses.asdict(frame), dataclasses.asdict(arm),
                         simd, job], sort_keys=True, default=str).encode())
    h.update(json.dumps(list(cfg.parameters)).encode())  # the keys' order (issue 38)
    for which in ("pulls", "train", "val"):
        h.update(Path(recs[which].path).read_bytes())
    out = tmp_path / "run"
    want = default_store(out) / "identify" / f"{h.hexdigest()[:16]}.json"
    assert _cache_path(out, frame, arm, sim, cfg, recs) == want
    seen = {want}
    for change in ({"select": "holdout", "holdout": ["pair23_"]}, {"ridge": 0.5},
                   {"start_spread": 0.1}):
        other = dataclasses.replace(cfg, **change)
        seen.add(_cache_path(out, frame, arm, sim, other, recs))
    seen.add(_cache_path(out, frame, arm, dataclasses.replace(sim, contact=False), cfg, recs))
    # the dynamic stage's keys never enter it (stage 2 does not read them)
    dynamic = dataclasses.replace(cfg, dynamic=True, dynamic_train="x.csv",
                                  dynamic_parameters={"tendon_damping": [0.01, 1.0]})
    assert _cache_path(out, frame, arm, sim, dynamic, recs) == want
    assert len(seen) == 5


def test_the_starts_spread_around_the_nominal_values():
    """start_spread 0 keeps the uniform draws in [0.1, 0.9] (the same numbers as before the
    key existed, from the same seed); s > 0 draws x_nom + N(0, s), clipped to the bounds:
    the draws' mean and spread match, seeded."""
    x_nom = np.linspace(0.3, 0.7, 29)
    rng = np.random.default_rng(np.random.SeedSequence(7))
    uniform = fit.start_points(x_nom, 3, 7)
    assert np.array_equal(uniform[0], x_nom)
    for x in uniform[1:]:
        assert np.array_equal(x, rng.uniform(0.1, 0.9, 29))
    near = fit.start_points(x_nom, 201, 7, 0.05)
    assert np.array_equal(near[0], x_nom) and len(near) == 201
    dev = np.array(near[1:]) - x_nom  # 200 x 29, 0.3 from a bound is 6 s: no clipping
    assert np.all((np.array(near) >= 0) & (np.array(near) <= 1))
    # 5800 draws: the mean within 4 standard errors, the spread within 4 % (chi-square).
    assert abs(dev.mean()) < 4 * 0.05 / np.sqrt(dev.size)
    assert abs(dev.std() / 0.05 - 1) < 0.04
    assert all(np.array_equal(a, b) for a, b in zip(near, fit.start_points(x_nom, 201, 7, 0.05),
                                                    strict=True))
    clipped = fit.start_points(np.zeros(29), 50, 1, 0.5)
    assert min(x.min() for x in clipped) == 0.0 and max(x.max() for x in clipped) <= 1.0


def test_settled_poses_do_not_fix_the_scale_of_the_forces():
    """Why a valley: in the replay's static equilibrium every force is a stiffness times a
    length or a weight (hinge springs EI, tendons k, pretension, Coulomb thresholds, gravity),
    and the servos impose lengths; multiplying all of EI, k, T0, the masses and the friction
    thresholds by lam leaves every settled pose where it was (to the solver's tolerance). So
    tip data alone cannot fix that common factor: only a value held fixed (the end cap's mass)
    or a prior (``identify.ridge``) does, and no tip error, train's or val's, changes along it."""
    from dataclasses import replace

    from quadarm.api import compose as compose_sim

    sec = [SectionConfig(length=0.06, links=4, youngs_modulus=50e9, radius=0.0005,
                             mass=0.004, tendons=TendonSetConfig(
                                 offset=0.0045, angle0_deg=30.0 * j, stiffness=5000.0,
                                 pretension=0.4))
           for j in range(2)]
    arm = SectionArmConfig(sections=sec, actuation="displacement", tip_mass=0.003,
                               joint_friction=2e-4, tendon_friction=0.05)
    cfg = compose_sim(["scenario=statics"])
    prob = fit.Problem(cfg.airframe, cfg.sim, arm, "up", 0.005, tuple(range(6)), np.eye(3),
                       np.zeros(3))
    rng = np.random.default_rng(5)
    pull = np.clip(rng.uniform(-0.002, 0.003, (12, 6)), -0.002, None)
    lam = 0.6
    scaled = replace(arm, tip_mass=arm.tip_mass * lam,
                     joint_friction=arm.joint_friction * lam,
                     tendon_friction=arm.tendon_friction * lam,
                     sections=[replace(s, youngs_modulus=s.youngs_modulus * lam, mass=s.mass * lam,
                                       tendons=replace(s.tendons,
                                                       stiffness=s.tendons.stiffness * lam,
                                                       pretension=s.tendons.pretension * lam))
                               for s in arm.sections])
    a = prob.simulate({}, pull)
    b = replace(prob, arm=scaled).simulate({}, pull)
    assert np.max(np.abs(a - prob.simulate({}, pull[:1]).mean(axis=0))) > 5e-3  # it bends
    assert np.max(np.linalg.norm(a - b, axis=1)) < 1e-8  # m
    # and not with the end cap's mass held: the factor is then fixed
    held = replace(scaled, tip_mass=arm.tip_mass)
    assert np.max(np.linalg.norm(a - replace(prob, arm=held).simulate({}, pull), axis=1)) > 1e-6


def test_a_reordered_parameter_list_is_another_fit_in_the_trial_store(tmp_path):
    """Stage 2 draws its random starts by position: the same keys listed in another order
    start from other values of each key, so the trial store must not return one order's
    result for the other (the same order: the same entry)."""
    frame, arm, sim, cfg, _ = compose(["+experiment=identify_ftdcr_v4"])
    from quadarm.identify import data

    recs = {w: data.read(cfg, w, arm.length) for w in ("pulls", "train", "val")}
    names = list(cfg.parameters)
    flipped = dataclasses.replace(cfg, parameters={k: cfg.parameters[k] for k in names[::-1]})
    again = dataclasses.replace(cfg, parameters=dict(cfg.parameters))
    # Why it matters: the second start's value of each key depends on the order.
    keys = fit.expand(arm, dict(cfg.parameters))
    keys_flipped = fit.expand(arm, dict(flipped.parameters))
    assert sorted(keys) == sorted(keys_flipped) and keys != keys_flipped
    x = fit.start_points(np.full(len(keys), 0.5), 2, cfg.seed)[1]  # the same draw
    first, second = fit.values_of(keys, x), fit.values_of(keys_flipped, x)
    assert any(first[k] != second[k] for k in first)
    out = tmp_path / "run"
    path = _cache_path(out, frame, arm, sim, cfg, recs)
    assert _cache_path(out, frame, arm, sim, again, recs) == path
    assert _cache_path(out, frame, arm, sim, flipped, recs) != path
