"""``python -m quadarm.identify``: registration, parameter recovery from synthetic data, and
refusal of bad recordings."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from quadarm.api import compose
from quadarm.config import load_unchecked
from quadarm.config.identify import IdentifyConfig
from quadarm.config.sections import SectionArmConfig, SectionConfig, TendonSetConfig
from quadarm.identify import fit, register
from quadarm.identify.__main__ import main
from quadarm.identify.data import PREFIX, data_dir


def _small_arm() -> SectionArmConfig:
    secs = [SectionConfig(length=0.06, links=4, youngs_modulus=50e9, radius=0.0005,
                          mass=0.002, tendons=TendonSetConfig(offset=0.0045,
                                                              angle0_deg=20.0 * j,
                                                              stiffness=5000.0,
                                                              pretension=0.5))
            for j in range(2)]
    return SectionArmConfig(sections=secs, actuation="displacement")


def _problem(arm: SectionArmConfig) -> fit.Problem:
    cfg = compose(["scenario=statics"])
    return fit.Problem(cfg.airframe, cfg.sim, arm, "up", 0.005,
                       tuple(range(arm.n_tendons)), np.eye(3), np.zeros(3))


def _pulls(n_tendons: int, rows: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    pull = rng.uniform(-0.002, 0.003, (rows, n_tendons))
    return np.clip(pull, -0.002, None)


def test_kabsch_recovers_a_known_rotation_exactly():
    """Markers of the model, rotated and translated by a known rigid transform: the
    registration returns that transform to rounding."""
    arm = _small_arm()
    markers = _problem(arm).simulate({}, _pulls(arm.n_tendons, 12, 1))
    r_true = register.rotation(0.3, -2.8, 1.1)
    t_true = np.array([0.1, -0.2, 0.05])
    rot, trans = register.kabsch(markers, markers @ r_true.T + t_true)
    assert np.allclose(rot, r_true, atol=1e-12)
    assert np.allclose(trans, t_true, atol=1e-12)


def test_aligned_metric_is_opencr_mujocos():
    """The aligned RMSE ignores a constant offset and is the RMS of pointwise distances."""
    rng = np.random.default_rng(0)
    meas = rng.normal(size=(50, 3))
    err = rng.normal(size=(50, 3)) * 0.1
    err -= err.mean(axis=0)
    sim = meas + err + np.array([3.0, -1.0, 2.0])
    assert fit.aligned_rmse(sim, meas) == pytest.approx(
        np.sqrt(np.mean(np.sum(err ** 2, axis=1))))


def test_synthetic_data_recovers_its_parameters():
    """Tips simulated from known parameters plus 0.3 mm noise: the fit, started from other
    values, recovers each within 4 of its reported standard errors (and within 5 %)."""
    arm = _small_arm()
    problem = _problem(arm)
    problem.keys = fit.expand(arm, {"sections.#.youngs_modulus": [2e10, 1e11],
                                    "sections.*.tendons.pretension": [0.0, 2.0]})
    truth = {"sections.0.youngs_modulus": 6.5e10, "sections.1.youngs_modulus": 4.0e10,
             "sections.*.tendons.pretension": 0.9}
    pull = _pulls(arm.n_tendons, 40, 2)
    rng = np.random.default_rng(3)
    tip = problem.simulate(truth, pull) + rng.normal(scale=3e-4, size=(40, 3))
    out = fit.stage2(problem, pull, tip, stride=1, starts=1, workers=1, max_nfev=30, seed=0)
    for key, value in truth.items():
        got, se = out["values"][key], out["stderr"][key]
        assert abs(got - value) <= 4 * se + 1e-12, (key, got, value, se)
        assert got == pytest.approx(value, rel=0.05)


def _copy_data(tmp_path: Path) -> Path:
    src = data_dir(IdentifyConfig())
    for which in ("tendon_pull", "train", "val"):
        shutil.copy(src / f"{PREFIX}{which}.csv", tmp_path / f"{which}.csv")
    return tmp_path


@pytest.mark.parametrize("damage, message", [
    (lambda f: f.drop(columns=["tip_y"]), "missing column"),
    (lambda f: f.assign(servo_3_mm=f["servo_3_mm"].where(f.index != 5)), "non-finite"),
    (lambda f: f.assign(tip_x=f["tip_x"] * 1000), "wrong unit"),
])
def test_bad_recordings_are_refused_in_one_line(tmp_path, capsys, damage, message):
    import pandas as pd

    folder = _copy_data(tmp_path)
    frame = pd.read_csv(folder / "train.csv")
    damage(frame).to_csv(folder / "train.csv", index=False)
    out = tmp_path / "run"
    code = main([f"identify.data_dir={folder}", "identify.pulls=tendon_pull.csv",
                 f"identify.out={out}"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and message in err and "identify.train" in err
    assert not out.exists()


def test_a_bad_key_is_refused(capsys):
    assert main(["+identify.parameters.sections.0.colour=[0,1]"]) == 2
    assert "identify.parameters" in capsys.readouterr().err


def test_shipped_calibration_beats_the_nominal_arm_on_val():
    """conf/arm/ftdcr_v4_calibrated.yaml (python -m quadarm.identify's output, shipped) loads
    as arm=ftdcr_v4_calibrated and, on every eighth val row (never used in the fit), its tip
    error is below the nominal arm's after the same registration."""
    from quadarm.config.identify import IdentifyConfig
    from quadarm.identify.data import read

    # multi-section arms run on the bench only (preflight refuses them in scenarios): raw path
    cfg = load_unchecked(["arm=ftdcr_v4_calibrated", "scenario=statics"])
    nominal = load_unchecked(["arm=ftdcr_v4", "scenario=statics"]).arm
    calibrated = cfg.arm
    assert isinstance(calibrated, SectionArmConfig)
    idc = IdentifyConfig()
    pulls, val = read(idc, "pulls", nominal.length), read(idc, "val", nominal.length)
    rows = slice(0, None, 8)
    scores = {}
    for name, arm in (("nominal", nominal), ("calibrated", calibrated)):
        problem, _, _ = fit.stage1(cfg.airframe, cfg.sim, arm, "up", 0.008, pulls.pull,
                                   pulls.tip, pulls.label,
                                   measure_angles=name == "nominal")
        sim = problem.simulate({}, val.pull[rows])
        scores[name] = fit.aligned_rmse(sim, val.tip[rows])
    assert scores["calibrated"] < 0.75 * scores["nominal"], scores


@pytest.mark.slow
def test_a_rerun_of_the_same_fit_reads_it_from_the_trial_store(tmp_path, capsys,
                                                                monkeypatch):
    """Stage 2 is cached in the trial store under a hash of what fixes it: the same job
    again (another output folder) does not fit again and reports the same numbers, bit for
    bit; a changed fit setting fits again."""
    import pandas as pd

    base = ["+experiment=identify_ftdcr_v4", "identify.starts=1", "identify.max_nfev=2",
            "identify.train_stride=200", "identify.workers=1",
            "identify.parameters={tendon_friction: [0.0, 3.0]}"]
    monkeypatch.chdir(tmp_path)  # every run under outputs/ shares outputs/trials
    runs = []
    for i, extra in enumerate([[], [], ["identify.seed=1"]]):
        out = Path("outputs") / f"run{i}"
        assert main([*base, *extra, f"identify.out={out}"]) == 0
        runs.append((capsys.readouterr().out, pd.read_parquet(out / "metrics.parquet")))
    assert "not recomputed" not in runs[0][0]
    assert "not recomputed" in runs[1][0]
    assert "not recomputed" not in runs[2][0]  # another seed: another fit
    a, b = runs[0][1], runs[1][1]
    keep = a["metric"] != "wall_s"
    assert a[keep]["value"].tolist() == b[keep]["value"].tolist()


def test_a_diverging_replay_scores_worse_than_any_real_replay(monkeypatch):
    """A replay that diverges (non-finite markers) must cost more than every replay that
    settles, however far its parameters are from the data's: here the small arm's markers
    from far-off stiffnesses, pretensions, marker offsets and registrations up to 3 rad, and
    markers placed anywhere within the arm's reach of the base (the bound the stand-in is
    derived from)."""
    arm = _small_arm()
    problem = _problem(arm)
    problem.keys = fit.expand(arm, {"sections.#.youngs_modulus": [1e9, 2e11],
                                    "sections.*.tendons.pretension": [0.0, 5.0],
                                    "sections.*.tendons.stiffness": [200.0, 50000.0],
                                    "marker_offset": [0.0, 0.03],
                                    "registration.rx": [-3.0, 3.0],
                                    "registration.ry": [-3.0, 3.0],
                                    "registration.rz": [-3.0, 3.0]})
    pull = _pulls(arm.n_tendons, 24, 5)
    rows = np.arange(len(pull))
    rng = np.random.default_rng(11)
    truth = problem.values(np.full(len(problem.keys), 0.5))
    meas = problem.simulate(truth, pull) + rng.normal(scale=3e-4, size=(len(pull), 3))

    def cost(res: np.ndarray) -> float:
        return float(np.sum(res ** 2))

    real = [cost(fit._residuals(x, problem, pull, rows, meas))
            for x in [*rng.uniform(0.0, 1.0, (12, len(problem.keys))),
                      np.zeros(len(problem.keys)), np.ones(len(problem.keys))]]
    assert all(np.isfinite(real))
    monkeypatch.setattr(problem, "simulate",
                        lambda values, pull, rows=None: np.full((len(rows), 3), np.nan))
    failed = [cost(fit._residuals(x, problem, pull, rows, meas))
              for x in (np.zeros(len(problem.keys)), np.ones(len(problem.keys)))]
    assert min(failed) > max(real), (failed, max(real))
    # Any settled markers lie within the reach (the rest marker's distance from the base, the
    # straight arm being the longest): even the worst such placement costs less.
    reach = 0.03 + float(np.linalg.norm(_problem(arm).simulate({}, np.zeros((1, arm.n_tendons)))))
    for _ in range(200):
        way = rng.normal(size=(len(pull), 3))
        sim = reach * way / np.linalg.norm(way, axis=1, keepdims=True)
        err = sim - np.mean(sim - meas, axis=0) - meas
        assert cost(err.ravel() * 1e3) < min(failed)


def test_the_fitted_rows_see_every_recorded_rows_history():
    """Hinge friction holds each hinge where the previous recorded row left it, so stage 2's
    replay of the strided rows must replay every row in between: the fitted rows' markers
    equal the full replay's at those rows (to the bit), and the residuals stage 2 minimises
    are the aligned errors of the evaluation's (full) replay. A replay of the listed rows
    alone differs by millimetres at joint_friction 0.005 N m (ramps out and back on each
    tendon: the friction's direction turns at every reversal)."""
    arm = replace(_small_arm(), joint_friction=0.005)
    problem = _problem(arm)
    ramp = np.concatenate([np.linspace(0.0, 1.0, 6), np.linspace(1.0, 0.0, 6)[1:]])
    pull = np.full((len(ramp) * arm.n_tendons, arm.n_tendons), -0.001)
    for k in range(arm.n_tendons):
        pull[k * len(ramp):(k + 1) * len(ramp), k] = 0.004 * ramp
    rows = np.arange(0, len(pull), 4)
    full = problem.simulate({}, pull)
    assert np.array_equal(problem.simulate({}, pull, rows), full[rows])
    # The listed rows alone, each from the previous listed row's pose: what the replay was.
    from quadarm.identify.replay import Bench

    bench = Bench(problem.frame, arm, problem.sim, problem.pointing, problem.marker_offset)
    ctrl, way = bench.commands(pull), bench.directions(pull)
    bench.data.qpos[:] = bench.model.qpos0
    listed = np.array([bench.settle(ctrl[i], direction=way[i])[0] for i in rows])
    gap = np.linalg.norm(listed - full[rows], axis=1)
    assert gap.max() > 2e-3 and gap.mean() > 5e-4, gap  # millimetres: not negligible
    problem.keys = fit.expand(arm, {"joint_friction": [0.0, 0.01]})
    meas = full + np.random.default_rng(4).normal(scale=3e-4, size=full.shape)
    sim, _ = fit.evaluate(problem, {"joint_friction": 0.005}, pull, meas)
    err = sim[rows] - np.mean(sim[rows] - meas[rows], axis=0) - meas[rows]
    res = fit._residuals(np.array([0.5]), problem, pull, rows, meas[rows])
    assert np.array_equal(res, err.ravel() * 1e3)


def _reference_settle(bench, ctrl: np.ndarray, direction: np.ndarray,
                      iterations: int = 40, tol: float = 1e-9) -> np.ndarray:
    """The replay's Newton solve as it was written before its shortcuts, numpy's public
    ``solve`` and ``norm``, the Newton matrix formed at every step, its diagonal terms added
    as ``h + diag(v)``: the reference :meth:`Bench.settle` must equal to the bit."""
    from quadarm.identify.replay import JOINT_FRICTION_EPS

    d = bench.data
    bench.direction = np.asarray(direction, dtype=float)
    d.ctrl[bench.acts] = ctrl
    d.qvel[:] = 0.0
    fj = bench.arm.joint_friction
    start = d.qpos.copy()

    def force() -> np.ndarray:
        r = bench.residual()
        if fj > 0:
            r = r - fj * np.tanh((d.qpos - start) / JOINT_FRICTION_EPS)
        return r

    r = force()
    norm = float(np.linalg.norm(r))
    evals = 1
    while evals < iterations and norm > tol:
        f = d.actuator_force[bench.acts]
        taut = (f < 0.0) & (f > -bench.t_max)
        h = bench.stiff + (bench.jac[taut].T * bench.k[taut]) @ bench.jac[taut]
        if bench.yield_kappa > 0:
            h = h + np.diag(bench._yield(tangent=True))
        if fj > 0:
            slope = 1.0 - np.tanh((d.qpos - start) / JOINT_FRICTION_EPS) ** 2
            h = h + np.diag(fj / JOINT_FRICTION_EPS * slope)
        dq = np.linalg.solve(h, r)
        q0 = d.qpos.copy()
        alpha = 1.0
        while True:
            d.qpos[:] = q0 + alpha * dq
            r = force()
            evals += 1
            new = float(np.linalg.norm(r))
            if new < norm or alpha < 1e-3 or evals >= iterations:
                break
            alpha *= 0.5
        norm = new
        if float(np.max(np.abs(alpha * dq))) < 1e-12:
            break
    return bench.marker()


@pytest.mark.parametrize("extra", [
    {"joint_friction": 0.005, "tendon_friction": 0.3, "backlash": 1e-4},
    {"joint_friction": 0.002, "bend_yield_curvature": 15.0, "bend_yield_ratio": 1.5,
     "tendon_capstan_mu": 0.1},
])
def test_the_fast_replay_equals_mujocos_own_stages_to_the_bit(extra):
    """The replay's shortcuts (fixed tendons' lengths summed in MuJoCo's order, the fluid
    forces skipped at rest, numpy's LU solve without its checks, the Newton matrix's tendon
    part kept per taut set, its diagonal terms added in place) change no bit: a replay with
    hinge and tendon friction, reversals and slack tendons (several taut sets), with the
    bilinear spring and capstan friction, equals the plain Newton solve on MuJoCo's own
    stages, every marker and every hinge, and it takes the same number of evaluations."""
    from quadarm.identify.replay import Bench

    arm = replace(_small_arm(), **extra)
    problem = _problem(arm)
    assert problem.sim.air_density > 0  # the fluid shortcut is exercised
    ramp = np.concatenate([np.linspace(0.0, 1.0, 5), np.linspace(1.0, 0.0, 5)[1:]])
    pull = np.full((2 * len(ramp), arm.n_tendons), -0.001)
    pull[:len(ramp), 0] = 0.004 * ramp
    pull[len(ramp):, 2] = 0.004 * ramp
    pull[len(ramp):, 4] = 0.002 * ramp
    fast = Bench(problem.frame, arm, problem.sim, problem.pointing, problem.marker_offset)
    ref = Bench(problem.frame, arm, problem.sim, problem.pointing, problem.marker_offset,
                fast=False)
    assert fast._fixed and not ref._fixed
    ctrl, way = fast.commands(pull), fast.directions(pull)
    for b in (fast, ref):
        b.data.qpos[:] = b.model.qpos0
    sets = set()
    for u, w in zip(ctrl, way, strict=True):
        got = fast.settle(u, direction=w)[0]
        want = _reference_settle(ref, u, w)
        assert np.array_equal(got, want)
        assert np.array_equal(fast.data.qpos, ref.data.qpos)
        f = ref.data.actuator_force[ref.acts]
        sets.add(tuple((f < 0.0) & (f > -ref.t_max)))
    assert len(sets) >= 3 and len(fast._taut_h) >= 3  # several taut sets, each kept once


@pytest.mark.parametrize("gravity", ["arm_axis", "tracking_frame"])
def test_the_marker_keys_reuse_the_settled_poses_to_the_bit(monkeypatch, gravity):
    """marker_offset and registration.r* move the markers, not the settled poses (with
    gravity along the arm axis): a parameter set differing from a replayed one in those keys
    alone reuses its poses without a replay, and its markers equal a fresh replay's to the
    bit; with gravity=tracking_frame the registration turns gravity, so it replays."""
    arm = replace(_small_arm(), joint_friction=0.003)
    rng = np.random.default_rng(7)
    pull = np.clip(rng.uniform(-0.002, 0.003, (8, arm.n_tendons)), -0.001, None)
    rows = np.array([1, 4, 6])
    problem = replace(_problem(arm), gravity=gravity,
                      rotation=register.rotation(0.2, -0.1, 0.3))
    base = {"joint_friction": 0.003, "marker_offset": 0.004, "registration.rx": 0.01}
    moved = {**base, "marker_offset": 0.006, "registration.rx": 0.02,
             "registration.rz": -0.01}
    problem.simulate(base, pull, rows)
    built = []
    real = fit.Bench

    def counting(*args, **kwargs):
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(fit, "Bench", counting)
    got = problem.simulate(moved, pull, rows)
    assert len(built) == (0 if gravity == "arm_axis" else 1)
    fresh = replace(problem).simulate(moved, pull, rows)  # a new problem: nothing kept
    assert len(built) == (1 if gravity == "arm_axis" else 2)
    assert np.array_equal(got, fresh)
    # Any other key replays.
    problem.simulate({**moved, "joint_friction": 0.004}, pull, rows)
    assert len(built) == (2 if gravity == "arm_axis" else 3)
