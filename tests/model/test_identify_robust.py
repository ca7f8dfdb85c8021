"""``identify.robust_start`` (docs/identify.md, "A bad start"): the stiffness fitted in log
space after a coarse scan of one shared backbone-stiffness scale, tried on a synthetic arm
that quadarm generates itself: two sections standing up under gravity, their backbone just
stiff enough to stand, their tendons soft, tracked with 0.5 mm of noise. A nominal modulus
5x too low folds the nominal arm, and stage 1 registers the folded arm: the plain fit ends
far from the noise floor; with ``robust_start`` the fit from 5x too low or too high lands
within 10 % of the val RMSE it reaches from the true modulus."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quadarm.api import compose
from quadarm.config.checks import ConfigError
from quadarm.config.identify import SCAN_SCALES, IdentifyConfig
from quadarm.config.sections import SectionArmConfig, SectionConfig, TendonSetConfig
from quadarm.identify import fit, register

E_TRUE = 60e9  # Pa: critical weight 7.84 EI / L^2 = 0.9 N against 0.44 N of arm
NOISE = 5e-4  # m: the tracking noise (the length of each point's error, RMS)
THETA = np.radians([0.0, 120.0, 240.0, 40.0, 160.0, 280.0])  # the tendons' angles
PARAMETERS = {"sections.#.youngs_modulus": [1e9, 1e12],
              "sections.#.tendons.rotate_deg": [-30.0, 30.0]}


def _arm(modulus: float) -> SectionArmConfig:
    """Two 8 cm sections of 20 g on a 1 mm backbone, soft tendons (300 N/m)."""
    secs = [SectionConfig(length=0.08, links=5, youngs_modulus=modulus, radius=0.0005,
                          mass=0.02, tendons=TendonSetConfig(offset=0.0045,
                                                             angle0_deg=40.0 * j,
                                                             stiffness=300.0, pretension=0.1))
            for j in range(2)]
    return SectionArmConfig(sections=secs, actuation="displacement", tip_mass=0.005)


def _bends(rows: int, seed: int) -> np.ndarray:
    """Random bends (rows, 6) m: each section bent by up to 3.5 mm of pull towards a random
    direction, its three tendons pulled or released as the bend asks."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.0, 3.5e-3, (rows, 2))
    phi = rng.uniform(0.0, 2 * math.pi, (rows, 2))
    return np.column_stack([a[:, i // 3] * np.cos(phi[:, i // 3] - THETA[i]) for i in range(6)])


@pytest.fixture(scope="module")
def data():
    """The synthetic recordings: stage 1's single-tendon pulls (three rest rows, then each
    tendon pulled by 2.5 and 3.5 mm with its section's others released by half), labelled by
    tendon; train and val rows of random bends; every tip the true arm's marker through a
    known registration, plus noise."""
    cfg = compose(["scenario=statics"])
    rot = register.rotation(0.05, -0.03, 0.4) @ np.diag([-1.0, 1.0, -1.0])  # standing up
    truth = fit.Problem(cfg.airframe, cfg.sim, _arm(E_TRUE), "up", 0.005, tuple(range(6)),
                        rot, np.array([0.1, -0.2, 0.05]))
    pulls, labels = [np.zeros(6)] * 3, ["rest"] * 3
    for k in range(6):
        for level in (2.5e-3, 3.5e-3):
            row = np.zeros(6)
            row[3 * (k // 3):3 * (k // 3) + 3] = -level / 2
            row[k] = level
            pulls.append(row)
            labels.append(f"tendon{k}_{level * 1e3:g}mm")
    rng = np.random.default_rng(7)
    out = {}
    for which, pull in (("pulls", np.array(pulls)), ("train", _bends(16, 1)),
                        ("val", _bends(10, 2))):
        tip = truth.simulate({}, pull) + rng.normal(scale=NOISE / math.sqrt(3),
                                                    size=(len(pull), 3))
        out[which] = (pull, tip)
    out["labels"] = np.array(labels)
    out["cfg"] = cfg
    return out


def _fit(data, modulus: float, robust: bool) -> tuple[float, dict]:
    """The val RMSE (mm) of the fit from a nominal ``modulus``, and the scan's record."""
    cfg, arm = data["cfg"], _arm(modulus)
    keys = fit.expand(arm, PARAMETERS)
    pull, tip = data["pulls"]
    record: dict = {}
    if robust:
        problem, _, _, record = fit.scan(cfg.airframe, cfg.sim, arm, "up", 0.005,
                                         (pull, tip, data["labels"]), data["train"], 1,
                                         keys, SCAN_SCALES, ["arm_axis"])
    else:
        problem, _, _ = fit.stage1(cfg.airframe, cfg.sim, arm, "up", 0.005, pull, tip,
                                   data["labels"])
        problem.keys = keys
    out = fit.stage2(problem, *data["train"], stride=1, starts=1, workers=1, max_nfev=20,
                     seed=0)
    _, scores = fit.evaluate(problem, out["values"], *data["val"])
    return scores["rmse_mm"], record


@pytest.fixture(scope="module")
def from_truth(data) -> float:
    return _fit(data, E_TRUE, robust=True)[0]


@pytest.mark.parametrize("factor", [0.2, 5.0], ids=["5x_low", "5x_high"])
def test_a_bad_modulus_lands_within_10_percent_of_the_true_start(data, from_truth, factor):
    val, record = _fit(data, E_TRUE * factor, robust=True)
    assert from_truth < 2 * NOISE * 1e3  # near the noise floor from the truth
    assert val <= 1.1 * from_truth, (val, from_truth)
    # The scan's scale brings the backbone within a factor 2 of the truth.
    assert 0.5 <= factor * record["scale"] <= 2.0, record


def test_without_the_switch_a_soft_start_folds_the_arm_and_misses(data, from_truth):
    """The failure the switch removes: from 5x too low, stage 1 registers the folded arm and
    the plain fit (the same starts and evaluations) ends at several times the true start's
    error."""
    val, _ = _fit(data, E_TRUE * 0.2, robust=False)
    assert val > 3 * from_truth


def test_log_space_round_trips_and_scales_the_standard_error():
    keys = [("sections.0.youngs_modulus", 1e9, 1e12), ("sections.0.mass", 0.0, 0.1)]
    logs = fit.log_keys(keys)
    assert logs == {"sections.0.youngs_modulus"}
    x = np.array([0.5, 0.25])
    values = fit.values_of(keys, x, logs)
    assert values["sections.0.youngs_modulus"] == pytest.approx(math.sqrt(1e9 * 1e12))
    assert values["sections.0.mass"] == pytest.approx(0.025)
    np.testing.assert_allclose(fit.normalised_of(keys, values, logs), x, rtol=1e-12)
    spans = fit.value_spans(keys, values, logs)
    assert spans[0] == pytest.approx(values["sections.0.youngs_modulus"] * math.log(1e3))
    assert spans[1] == pytest.approx(0.1)
    assert fit.values_of(keys, x) == {"sections.0.youngs_modulus": 1e9 + 0.5 * (1e12 - 1e9),
                                      "sections.0.mass": 0.025}  # linear without logs


@pytest.mark.parametrize(("kwargs", "key"), [
    ({"robust_start": True, "parameters": {"sections.*.youngs_modulus": [0.0, 1e12]}},
     "parameters.sections.*.youngs_modulus"),
    ({"scan_scales": []}, "scan_scales"),
    ({"scan_scales": [1.0, -2.0]}, "scan_scales"),
    ({"scan_gravity": ["sideways"]}, "scan_gravity.0"),
])
def test_bad_robust_keys_are_refused_in_one_line(kwargs, key):
    with pytest.raises(ConfigError) as err:
        IdentifyConfig(**kwargs)
    assert str(err.value).startswith(key) and "\n" not in str(err.value)


ARM_YAML = """defaults:
  - sections_schema
  - _self_
actuation: displacement
tip_mass: 0.005
sections:
- {length: 0.08, links: 5, youngs_modulus: MODULUS, radius: 0.0005, mass: 0.02,
   tendons: {offset: 0.0045, angle0_deg: 0.0, stiffness: 300.0, pretension: PRE, COUNT}}
- {length: 0.08, links: 5, youngs_modulus: MODULUS, radius: 0.0005, mass: 0.02,
   tendons: {offset: 0.0045, angle0_deg: ANGLE, stiffness: 300.0, pretension: PRE, COUNT}}
"""


def arm_yaml(modulus: float, pretension: float = 0.1, angle_deg: float = 40.0,
             tendons: str = "") -> str:
    """The synthetic two-section arm as a ``conf/arm`` file: its moduli (Pa), pretension (m),
    the second section's tendon turn (deg) and extra keys of its tendon sets (``tendons``)."""
    yaml = (ARM_YAML.replace("MODULUS", repr(modulus)).replace("PRE", repr(pretension))
            .replace("ANGLE", repr(angle_deg)))
    return yaml.replace("COUNT", tendons) if tendons else yaml.replace(", COUNT", "")


def test_the_command_line_scans_and_records_it(data, tmp_path, capsys):
    """``python -m quadarm.identify identify.robust_start=true`` on the synthetic recordings
    (CSV in mm, as a lab writes them) from 5x too low: the scan's line, ``fit.json``'s
    ``scan`` record, and the val RMSE near the noise floor."""
    import json

    import pandas as pd

    from quadarm.identify.__main__ import main

    (tmp_path / "conf" / "arm").mkdir(parents=True)
    (tmp_path / "conf" / "arm" / "syn.yaml").write_text(
        arm_yaml(E_TRUE * 0.2))
    (tmp_path / "conf" / "experiment").mkdir()
    (tmp_path / "conf" / "experiment" / "syn_fit.yaml").write_text(
        "# @package _global_\nidentify:\n  parameters:\n"
        + "".join(f"    {k}: {v}\n" for k, v in PARAMETERS.items()))
    for which in ("pulls", "train", "val"):
        pull, tip = data[which]
        frame = pd.DataFrame(pull * 1e3, columns=[f"servo_{i + 1}_mm" for i in range(6)])
        frame[["tip_x", "tip_y", "tip_z"]] = tip * 1e3
        frame["pattern_label"] = data["labels"] if which == "pulls" else which
        frame.to_csv(tmp_path / f"{which}.csv", index=False, float_format="%.17g")
    out = tmp_path / "run"
    args = ["arm=syn", f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
            f"identify.data_dir={tmp_path}", "identify.pulls=pulls.csv",
            f"identify.channels=[{','.join(f'servo_{i + 1}_mm' for i in range(6))}]",
            "identify.marker_offset=0.005", "identify.starts=1", "identify.max_nfev=20",
            "identify.workers=1", "identify.train_stride=1", "identify.robust_start=true",
            "+experiment=syn_fit", f"identify.out={out}"]
    assert main(args) == 0
    assert "coarse scan: backbone stiffness x 4" in capsys.readouterr().out
    record = json.loads((out / "fit.json").read_text())
    assert record["scan"]["scale"] == 4.0 and len(record["scan"]["tried"]) == len(SCAN_SCALES)
    assert record["metrics"]["val_rmse_mm"] < 2 * NOISE * 1e3


def test_the_scan_tries_each_gravity_option(data):
    """``scan_gravity``: each option with each scale; the recordings were made under gravity,
    and the arm's own gravity (arm_axis) scores better than none at the true modulus."""
    cfg, arm = data["cfg"], _arm(E_TRUE)
    keys = fit.expand(arm, PARAMETERS)
    pull, tip = data["pulls"]
    problem, _, _, record = fit.scan(cfg.airframe, cfg.sim, arm, "up", 0.005,
                                     (pull, tip, data["labels"]), data["train"], 1, keys,
                                     [1.0], ["none", "arm_axis"])
    assert [r[1] for r in record["tried"]] == ["none", "arm_axis"]
    assert record["gravity"] == "arm_axis" and any(record["sim"].gravity)
    assert record["tried"][1][2] < record["tried"][0][2]
    assert problem.logs == {"sections.0.youngs_modulus", "sections.1.youngs_modulus"}
