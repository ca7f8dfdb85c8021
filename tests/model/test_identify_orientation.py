"""Identify with section-end IMUs (``identify.fit_to``, ``orientation``, docs/identify.md,
"Orientation") and on an arm of antagonistic pairs (``sections.<j>.tendons.pairs``), on
synthetic recordings that quadarm generates itself: the arm of ``test_identify_robust`` (two
8 cm sections standing up under gravity, soft tendons), its poses replayed, the tracked point
through a known registration plus 0.5 mm of noise, each section end's roll and pitch (the
end link's frame in the base's, as ``scenario=replay`` computes it, seen by IMUs turned by a
known yaw about the arm's axis) plus 0.5 deg of noise, both drawn from seeded numpy
Generators. The fits start from moduli 2x too high and recover them (and the IMUs' yaw)
within two standard errors, with val errors near the noise floor."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
from test_identify_robust import E_TRUE, NOISE, _arm, _bends, arm_yaml

from quadarm.api import compose
from quadarm.config.checks import ConfigError
from quadarm.config.identify import IdentifyConfig
from quadarm.config.sections import SectionArmConfig, SectionConfig, TendonSetConfig
from quadarm.identify import data as identify_data
from quadarm.identify import fit, register
from quadarm.identify.replay import Bench
from quadarm.model import names

ANGLE_NOISE = math.radians(0.5)  # rad, each logged angle's noise std
IMU_YAW = 0.3  # rad: the IMUs' x axis turned from the true arm frame's
ROT = register.rotation(0.05, -0.03, 0.4) @ np.diag([-1.0, 1.0, -1.0])  # standing up
MODULI = ["sections.0.youngs_modulus", "sections.1.youngs_modulus"]


def imu_angles(arm: SectionArmConfig, cfg, tendon_pull: np.ndarray) -> np.ndarray:
    """Each section end's roll and pitch (K, n_sections, 2) rad for the tendon commands
    (K, n_tendons) (m, or N on a tension arm), any number of sections: the rows replayed on the
    bench from the straight arm, the end link's frame R in the airframe's (MuJoCo's xmat),
    turned into IMUs whose x axis is IMU_YAW from the arm frame's, Rz(-y) R Rz(y), read as
    R = Rz Ry(pitch) Rx(roll) (scenario=replay's formula)."""
    bench = Bench(cfg.airframe, arm, cfg.sim, "up", 0.005)
    m, d = bench.model, bench.data
    ctrl, way = bench.commands(tendon_pull), bench.directions(tendon_pull)
    quad = m.body(names.QUAD_BODY).id
    ends = [m.body(names.link_body(int(k) - 1)).id
            for k in np.cumsum([sec.links for sec in arm.sections])]
    turn = register.rotation(0.0, 0.0, IMU_YAW)
    d.qpos[:] = m.qpos0
    out = np.zeros((len(ctrl), len(ends), 2))
    for i, u in enumerate(ctrl):
        bench.settle(u, direction=way[i])
        mujoco.mj_kinematics(m, d)
        for e, b in enumerate(ends):
            r = turn.T @ d.xmat[quad].reshape(3, 3).T @ d.xmat[b].reshape(3, 3) @ turn
            out[i, e] = math.atan2(r[2, 1], r[2, 2]), math.asin(-r[2, 0])
    return out


def _recordings(arm: SectionArmConfig, pulls: np.ndarray, bends: tuple[np.ndarray, ...],
                tendon_sign: tuple[float, ...] = (), imus: bool = True, seed: int = 7) -> dict:
    """Stage 1's pulls and the train and val bends (channel commands, m) with their tracked
    points (m, registered and noisy) and IMU angles (rad, noisy; ``imus`` false: none
    drawn); noise from Generator(``seed``). ``out["noise"]``: each
    recording's point noise (K, 3) m, what the true parameters score against."""
    cfg = compose(["scenario=statics"])
    n = pulls.shape[1]
    servo = fit.servo_map(arm)[0]
    truth = fit.Problem(cfg.airframe, cfg.sim, arm, "up", 0.005,
                        tuple(servo) if tendon_sign else tuple(range(n)), ROT,
                        np.array([0.1, -0.2, 0.05]), tendon_sign=tendon_sign)
    rng = np.random.default_rng(seed)
    out: dict = {"cfg": cfg, "truth": truth}
    for which, pull in (("pulls", pulls), ("train", bends[0]), ("val", bends[1])):
        noise = rng.normal(scale=NOISE / math.sqrt(3), size=(len(pull), 3))
        tip = truth.simulate({}, pull) + noise
        angles = (imu_angles(arm, cfg, truth.tendon_pull(pull)) + rng.normal(
            scale=ANGLE_NOISE, size=(len(pull), 2, 2))) if imus else None
        out[which] = (pull, tip, angles)
        out.setdefault("noise", {})[which] = noise
    return out


def _single_pulls(per_section: int, both_ways: bool, sections: int = 2, scale: float = 1.0
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Three rest rows, then each channel of ``sections`` sections pulled alone by 2.5 and
    3.5 mm times ``scale`` (its section's others released by half, or, ``both_ways``, a
    paired arm's servos: the others held at 0 and each servo also driven the other way),
    labelled tendon<k>."""
    n = sections * per_section
    rows, labels = [np.zeros(n)] * 3, ["rest"] * 3
    levels = tuple(scale * v for v in ((2.5e-3, 3.5e-3, -2.5e-3, -3.5e-3) if both_ways
                                       else (2.5e-3, 3.5e-3)))
    for k in range(n):
        for level in levels:
            row = np.zeros(n)
            if not both_ways:
                first = per_section * (k // per_section)
                row[first:first + per_section] = -level / 2
            row[k] = level
            rows.append(row)
            labels.append(f"tendon{k}_{level * 1e3:g}mm")
    return np.array(rows), np.array(labels)


@pytest.fixture(scope="module")
def imu_data() -> dict:
    pulls, labels = _single_pulls(3, both_ways=False)
    out = _recordings(_arm(E_TRUE), pulls, (_bends(16, 1), _bends(10, 2)))
    out["labels"] = labels
    return out


def _stage1(rec: dict, arm: SectionArmConfig, fit_to: str, keys: dict) -> fit.Problem:
    cfg = rec["cfg"]
    pull, tip, angles = rec["pulls"]
    problem, _, _ = fit.stage1(cfg.airframe, cfg.sim, arm, "up", 0.005, pull, tip,
                               rec["labels"])
    problem.fit_to, problem.orientation_noise, problem.position_noise = (
        fit_to, ANGLE_NOISE, NOISE)
    problem.imu_sections = (0, 1)
    problem.imu_yaw = fit.imu_yaw(problem, pull, angles)
    problem.keys = fit.expand(arm, keys)
    return problem


def _truth(problem: fit.Problem, true_arm: SectionArmConfig | None = None,
           rot: np.ndarray = ROT) -> tuple[float, np.ndarray]:
    """The IMUs' true yaw from stage 1's x axis (IMU_YAW less the angle of that axis in the
    true arm frame, rad) and stage 1's error in each section's tendon angles (the mean over
    the section's tendons, rad): stage 1 measures the angles from the tip's noisy pulls, and
    a section's angles off by d are what ``sections.<j>.tendons.rotate_deg`` = -d undoes.
    ``true_arm``: the arm the recordings came from (``_arm(E_TRUE)`` when None), ``rot``
    their registration."""
    x = rot.T @ problem.rotation[:, 0]
    frame = math.atan2(x[1], x[0])
    err = [float(np.mean(wrap_all(np.radians(got.tendons.angles()) + frame
                                  - np.radians(true.tendons.angles()))))
           for got, true in zip(problem.arm.sections, (true_arm or _arm(E_TRUE)).sections,
                                strict=True)]
    return IMU_YAW - frame, np.array(err)


def wrap_all(a: np.ndarray) -> np.ndarray:
    return np.arctan2(np.sin(a), np.cos(a))


def _within_two_se(out: dict, want: dict[str, float]) -> None:
    for key, value in want.items():
        got, se = out["values"][key], out["stderr"][key]
        assert abs(got - value) <= 2 * se, (key, got, value, se)
        assert se < 0.1 * abs(value) + 2.0, (key, se)  # an informative fit, not a wide one


@pytest.mark.slow
@pytest.mark.parametrize("fit_to", ["orientation", "both"])
def test_imus_recover_the_moduli_and_reach_the_noise_floor(imu_data, fit_to):
    """From moduli 2x too high: the IMUs alone (or with the tracked point) recover both
    sections' moduli, the IMUs' turn and stage 1's tendon-angle errors within two standard
    errors; val's angle RMSE is within 1.2x the noise (and the point's too, fitting both).
    The IMUs alone see the arm's bends relative to their own axes: a turn of every section's
    tendons is a turn of the IMUs, so they fit the IMUs' yaw and section 1's tendons against
    section 0's; with the tracked point, which fixes the arm's frame, each section's."""
    arm = _arm(2 * E_TRUE)
    turns = (["sections.1.tendons.rotate_deg"] if fit_to == "orientation"
             else ["sections.0.tendons.rotate_deg", "sections.1.tendons.rotate_deg"])
    keys = {"sections.#.youngs_modulus": [1e10, 3e11], "imu.yaw": [-0.3, 0.3],
            **{k: [-10.0, 10.0] for k in turns}}
    problem = _stage1(imu_data, arm, fit_to, keys)
    yaw, err = _truth(problem)
    yaw0 = problem.imu_yaw
    assert abs(wrap(yaw0 - yaw)) < 0.15  # stage 1's estimate from the pulls
    pull, tip, angles = imu_data["train"]
    out = fit.stage2(problem, pull, tip, stride=1, starts=1, workers=1, max_nfev=15, seed=0,
                     angles=angles)
    want = {k: E_TRUE for k in MODULI}
    if fit_to == "orientation":  # relative to section 0's tendons
        want["imu.yaw"] = wrap(yaw + err[0] - yaw0)
        want["sections.1.tendons.rotate_deg"] = -math.degrees(err[1] - err[0])
    else:
        want["imu.yaw"] = wrap(yaw - yaw0)
        want.update({f"sections.{j}.tendons.rotate_deg": -math.degrees(err[j])
                     for j in range(2)})
    _within_two_se(out, want)
    _, val = fit.evaluate(problem, out["values"], *imu_data["val"])
    assert val["orientation_rmse_rad"] < 1.2 * ANGLE_NOISE, val
    assert val["orientation_zero_rad"] > 5 * ANGLE_NOISE  # the bends are worth fitting
    if fit_to == "both":
        assert val["rmse_mm"] < 1.2 * NOISE * 1e3, val


def wrap(a: float) -> float:
    return math.atan2(math.sin(a), math.cos(a))


def test_the_replayed_angles_are_scenario_replays():
    """Problem.angles (the IMUs' roll and pitch from the cached poses, R's third row turned)
    equals the full rotation read as scenario=replay reads it, to rounding."""
    cfg = compose(["scenario=statics"])
    arm = _arm(E_TRUE)
    pull = _bends(5, 3)
    problem = fit.Problem(cfg.airframe, cfg.sim, arm, "up", 0.005, tuple(range(6)),
                          np.eye(3), np.zeros(3), imu_sections=(1, 0), imu_yaw=IMU_YAW)
    got = problem.angles({}, pull)
    want = imu_angles(arm, cfg, pull)[:, ::-1]
    np.testing.assert_allclose(got, want, atol=1e-12, rtol=0)


def test_the_default_fits_the_point_as_before():
    """fit_to=position (the default) ignores the IMUs: the same residuals, bit for bit, with
    and without them set up; fit_to=orientation gives one residual per angle, each its
    error over the noise."""
    cfg, arm = compose(["scenario=statics"]), _arm(E_TRUE)
    pull = _bends(6, 4)
    problem = fit.Problem(cfg.airframe, cfg.sim, arm, "up", 0.005, tuple(range(6)), ROT,
                          np.zeros(3))
    problem.keys = fit.expand(arm, {"sections.*.youngs_modulus": [1e10, 3e11]})
    x, rows = np.array([0.3]), np.arange(6)
    tip = problem.simulate({}, pull) + 1e-3
    plain = fit._residuals(x, problem, pull, rows, tip)
    problem.imu_sections, problem.imu_yaw = (0, 1), 0.2
    again = fit._residuals(x, problem, pull, rows, tip)
    assert np.array_equal(plain, again) and plain.size == 18
    angles = problem.angles({}, pull)
    problem.fit_to, problem.orientation_noise = "orientation", 0.01
    res = fit._residuals(x, problem, pull, rows, (tip, angles))
    want = (problem.angles(problem.values(x), pull) - angles).ravel() / 0.01
    np.testing.assert_allclose(res, want, rtol=1e-12, atol=1e-9)


# A two-section arm of antagonistic pairs: four tendons a section, two servos, each pulling
# tendon i and paying out its opposite i + 2 (half a turn away).
PAIR_THETA = np.radians([0.0, 90.0, 45.0, 135.0])  # the servos' pulled tendons' angles


def _paired_arm(modulus: float) -> SectionArmConfig:
    secs = [SectionConfig(length=0.08, links=5, youngs_modulus=modulus, radius=0.0005,
                          mass=0.02, tendons=TendonSetConfig(count=4, offset=0.0045,
                                                             angle0_deg=45.0 * j,
                                                             stiffness=300.0, pretension=0.3,
                                                             pairs=True))
            for j in range(2)]
    return SectionArmConfig(sections=secs, actuation="displacement", tip_mass=0.005)


def _paired_bends(rows: int, seed: int) -> np.ndarray:
    """Random bends (rows, 4) of servo travel m: each section towards a random direction by
    up to 3.5 mm, each servo driving as the bend's component along its tendon asks."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.0, 3.5e-3, (rows, 2))
    phi = rng.uniform(0.0, 2 * math.pi, (rows, 2))
    return np.column_stack([a[:, s // 2] * np.cos(phi[:, s // 2] - PAIR_THETA[s])
                            for s in range(4)])


@pytest.fixture(scope="module")
def paired_data() -> dict:
    pulls, labels = _single_pulls(2, both_ways=True)
    arm = _paired_arm(E_TRUE)
    out = _recordings(arm, pulls, (_paired_bends(16, 1), _paired_bends(10, 2)),
                      fit.servo_map(arm)[1])
    out["labels"] = labels
    return out


def test_servo_map_of_a_paired_arm():
    tendon_servo, sign, per_section = fit.servo_map(_paired_arm(E_TRUE))
    assert tendon_servo == [0, 1, 0, 1, 2, 3, 2, 3]
    assert sign == (1.0, 1.0, -1.0, -1.0, 1.0, 1.0, -1.0, -1.0)
    assert per_section == [2, 2]
    assert fit.servo_map(_arm(E_TRUE)) == ([0, 1, 2, 3, 4, 5], (), [3, 3])


def test_stage1_maps_a_paired_arm_to_its_servos(paired_data):
    """Four command columns for eight tendons: stage 1 maps each to a servo (the labels'),
    measures the servos' angles (within 3 deg; the opposite tendons half a turn away)."""
    _paired_stage1(paired_data)


@pytest.mark.slow
def test_a_paired_arm_is_identified(paired_data):
    """Stage 2 recovers both moduli of the paired arm from 2x too high within two standard
    errors, val near the noise floor."""
    arm = _paired_arm(2 * E_TRUE)
    problem = _paired_stage1(paired_data)
    problem.keys = fit.expand(arm, {"sections.#.youngs_modulus": [1e10, 3e11],
                                    "sections.#.tendons.rotate_deg": [-10.0, 10.0]})
    out = fit.stage2(problem, *paired_data["train"][:2], stride=1, starts=1, workers=1,
                     max_nfev=15, seed=0)
    _within_two_se(out, {k: E_TRUE for k in MODULI})
    _, val = fit.evaluate(problem, out["values"], *paired_data["val"][:2])
    assert val["rmse_mm"] < 1.2 * NOISE * 1e3, val


def _paired_stage1(paired_data: dict) -> fit.Problem:
    cfg = paired_data["cfg"]
    arm = _paired_arm(2 * E_TRUE)
    pull, tip, _ = paired_data["pulls"]
    problem, ch, _ = fit.stage1(cfg.airframe, cfg.sim, arm, "up", 0.005, pull, tip,
                                paired_data["labels"])
    assert ch.tendon_channel == (0, 1, 2, 3)
    assert problem.tendon_channel == (0, 1, 0, 1, 2, 3, 2, 3)
    x = ROT.T @ problem.rotation[:, 0]
    frame = math.degrees(math.atan2(x[1], x[0]))  # stage 1's x in the true arm frame
    for j, sec in enumerate(problem.arm.sections):
        got = np.array(sec.tendons.angles_deg) + frame
        want = np.degrees(np.r_[PAIR_THETA[2 * j:2 * j + 2], PAIR_THETA[2 * j:2 * j + 2]
                                + math.pi])
        assert np.all(np.abs((got - want + 180) % 360 - 180) < 3.0), (got, want)
    return problem


def test_pulls_one_way_only_are_refused_for_a_paired_arm(paired_data):
    cfg = paired_data["cfg"]
    pull, tip, _ = paired_data["pulls"]
    one_way = pull.min(axis=1) >= 0
    with pytest.raises(ConfigError) as err:
        fit.stage1(cfg.airframe, cfg.sim, _paired_arm(E_TRUE), "up", 0.005, pull[one_way],
                   tip[one_way], paired_data["labels"][one_way])
    msg = str(err.value)
    assert msg.startswith("identify.pulls") and "both ways" in msg and "\n" not in msg


@pytest.mark.parametrize(("kwargs", "key"), [
    ({"fit_to": "orientation"}, "orientation"),
    ({"fit_to": "sideways"}, "fit_to"),
    ({"orientation": ["r0"]}, "orientation"),
    ({"orientation": ["r0", "p0"], "orientation_noise": 0.0}, "orientation_noise"),
    ({"orientation": ["r0", "p0"], "position_noise": -1e-3}, "position_noise"),
    ({"orientation": ["r0", "p0"], "orientation_sections": [0, 1]}, "orientation_sections"),
    ({"orientation": ["r0", "p0"], "fit_to": "both", "select": "holdout",
      "holdout": ["x"]}, "select"),
])
def test_bad_orientation_keys_are_refused_in_one_line(kwargs, key):
    with pytest.raises(ConfigError) as err:
        IdentifyConfig(**kwargs)
    assert str(err.value).startswith(key) and "\n" not in str(err.value)


@pytest.mark.parametrize(("column", "value", "what"), [
    ("gone", None, "missing column(s) gone"),
    ("section1_roll_rad", 30.0, "section1_roll_rad (roll) reaches 30"),
    ("section0_pitch_rad", 2.0, "section0_pitch_rad (pitch) reaches 2"),
])
def test_bad_orientation_columns_are_refused_in_one_line(tmp_path, column, value, what):
    import pandas as pd

    frame = pd.DataFrame({"servo_1_mm": [0.0, 1.0], "tip_x": [0.0, 0.01],
                          "tip_y": [0.0, 0.0], "tip_z": [0.1, 0.1],
                          "section0_roll_rad": [0.0, 0.1], "section0_pitch_rad": [0.0, 0.1],
                          "section1_roll_rad": [0.0, 0.1], "section1_pitch_rad": [0.0, 0.1]})
    if value is not None:
        frame.loc[1, column] = value
    frame.to_csv(tmp_path / "train.csv", index=False)
    cols = ["section0_roll_rad", "section0_pitch_rad", "section1_roll_rad",
            "section1_pitch_rad"] + (["gone", "gone2"] if value is None else [])
    cfg = IdentifyConfig(data_dir=str(tmp_path), channels=["servo_1_mm"], orientation=cols,
                         position_unit="m")
    with pytest.raises(ConfigError) as err:
        identify_data.read(cfg, "train", 0.16)
    msg = str(err.value)
    assert msg.startswith("identify.train") and what in msg and "\n" not in msg


def test_the_command_line_refuses_a_missing_imu_column(capsys):
    from quadarm.identify.__main__ import main

    assert main(["identify.fit_to=orientation", "identify.orientation=[imu0_roll,imu0_pitch]"]
                ) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: identify.pulls") and "imu0_roll, imu0_pitch" in err
    assert "\n" not in err


@pytest.mark.slow
@pytest.mark.parametrize("case", ["imus", "pairs"])
def test_the_command_line_fits_imus_and_pairs(request, tmp_path, capsys, case):
    """``python -m quadarm.identify`` on the synthetic recordings written as a lab writes
    them (CSV, mm and rad): the IMUs with fit_to=both, and the paired arm's four servo
    columns; from moduli 2x too high, val near the noise floor, the IMUs' metrics written."""
    import json

    import pandas as pd

    from quadarm.identify.__main__ import main

    rec = request.getfixturevalue("imu_data" if case == "imus" else "paired_data")
    n = rec["pulls"][0].shape[1]
    yaml = (arm_yaml(2 * E_TRUE) if case == "imus" else
            arm_yaml(2 * E_TRUE, 0.3, 45.0, "count: 4, pairs: true"))
    (tmp_path / "conf" / "arm").mkdir(parents=True)
    (tmp_path / "conf" / "arm" / "syn.yaml").write_text(yaml)
    imus = [f"s{j}_{a}" for j in range(2) for a in ("roll", "pitch")]
    for which in ("pulls", "train", "val"):
        pull, tip, angles = rec[which]
        frame = pd.DataFrame(pull * 1e3, columns=[f"servo_{i + 1}_mm" for i in range(n)])
        frame[["tip_x", "tip_y", "tip_z"]] = tip * 1e3
        frame[imus] = angles.reshape(len(pull), 4)
        frame["pattern_label"] = rec["labels"] if which == "pulls" else which
        frame.to_csv(tmp_path / f"{which}.csv", index=False, float_format="%.17g")
    out = tmp_path / "run"
    keys = {"sections.#.youngs_modulus": [1e10, 3e11],
            "sections.#.tendons.rotate_deg": [-10.0, 10.0],
            **({"imu.yaw": [-0.3, 0.3]} if case == "imus" else {})}
    (tmp_path / "conf" / "experiment").mkdir()
    (tmp_path / "conf" / "experiment" / "syn_fit.yaml").write_text(
        "# @package _global_\nidentify:\n  parameters:\n"
        + "".join(f"    {k}: {v}\n" for k, v in keys.items()))
    args = ["arm=syn", f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
            f"identify.data_dir={tmp_path}", "identify.pulls=pulls.csv",
            f"identify.channels=[{','.join(f'servo_{i + 1}_mm' for i in range(n))}]",
            "identify.marker_offset=0.005", "identify.starts=1", "identify.max_nfev=15",
            "identify.workers=1", "identify.train_stride=1", "+experiment=syn_fit",
            f"identify.out={out}", f"identify.orientation=[{','.join(imus)}]",
            f"identify.fit_to={'both' if case == 'imus' else 'position'}",
            f"identify.orientation_noise={ANGLE_NOISE!r}", f"identify.position_noise={NOISE}"]
    assert main(args) == 0, capsys.readouterr().err
    metrics = json.loads((out / "fit.json").read_text())["metrics"]
    assert metrics["val_rmse_mm"] < 1.2 * NOISE * 1e3, metrics
    if case == "imus":
        assert metrics["val_orientation_rmse_rad"] < 1.2 * ANGLE_NOISE, metrics
        assert "IMUs (['s0_roll'" in (out / "report.md").read_text()
