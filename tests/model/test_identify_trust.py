"""When an identification is not to be trusted (``quadarm/identify/trust.py``,
docs/identify.md "When not to trust a fit"), the bench record of the calibrated file,
``identify.gravity=none``, and the documented keys (``--help``, ``--cfg job``, the docs)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from quadarm.config.checks import ConfigError
from quadarm.config.identify import KEYS, IdentifyConfig
from quadarm.identify import data, fit, trust
from quadarm.identify.__main__ import compose, main

ROOT = Path(__file__).resolve().parents[2]


def _stage1(overrides: list[str]):
    frame, arm, sim, cfg, _ = compose(overrides)
    rec = data.read(cfg, "pulls", arm.length)
    problem, _, s1 = fit.stage1(frame, sim, arm, cfg.pointing, cfg.marker_offset, rec.pull,
                                rec.tip, rec.label)
    return problem, s1, arm


def test_the_registered_axis_against_pointing_is_flagged():
    """The FTDCR v4 robot stands up: registered as standing (pointing=up) its axis is within
    a few degrees of the tracking frame's vertical; told it hangs (pointing=down), stage 1
    registers it upside down, and the warning says so."""
    up, _, _ = _stage1([])
    down, _, _ = _stage1(["identify.pointing=down"])
    a_up = trust.axis_against(up.rotation, "up", [0, 0, 1])
    a_down = trust.axis_against(down.rotation, "down", [0, 0, 1])
    assert a_up < 10.0 and a_down > 170.0
    assert trust.stage1_lines(0.0, 0.001, 0.19, a_up, "up") == []
    (line,) = trust.stage1_lines(0.0, 0.001, 0.19, a_down, "down")
    assert "upside down" in line and "pointing" in line and "\n" not in line


def test_an_arm_too_soft_to_stand_sags_and_is_flagged():
    """Greenhill: a column under its own weight buckles past 7.84 EI / L^2 of weight. The v4
    arm (0.19 m, 14 g) on a 1e8 Pa backbone (EI 5e-6 N m^2: 1 mN critical) with soft, slack
    tendons cannot stand up: it folds by more than a quarter of its length; hanging down, or
    standing on its 50 GPa backbone (0.55 N critical), it barely moves."""
    soft = [f"arm.sections.{j}.{k}" for j in range(3) for k in
            ("youngs_modulus=1e8", "tendons.stiffness=5", "tendons.pretension=0")]
    length = 0.1865
    folded, _, _ = _stage1(soft)
    hanging, _, _ = _stage1([*soft, "identify.pointing=down"])
    stiff, _, _ = _stage1([])
    sag = {"folded": trust.sag(folded), "hanging": trust.sag(hanging),
           "stiff": trust.sag(stiff)}
    assert sag["folded"] > 0.25 * length
    assert sag["hanging"] < 0.02 * length and sag["stiff"] < 0.02 * length
    (line,) = trust.stage1_lines(sag["folded"], 0.001, length, 0.0, "up")
    assert "folds" in line and "youngs_modulus" in line and "gravity" in line


def test_the_fit_warnings_fire_on_their_thresholds_only():
    assert trust.nominal_lines(10.0, 11.0) == []
    assert "mean predictor" in trust.nominal_lines(12.0, 11.0)[0]
    bounds = {"a": (0.0, 1.0), "b": (0.0, 2.0)}
    values = {"a": 0.5, "b": 1.0}
    fine = trust.fit_lines(5.0, 14.0, values, {"a": 0.1, "b": 0.1}, bounds,
                           [[1.0, 0.5], [0.5, 1.0]])
    assert fine == []
    bad = trust.fit_lines(5.0, 16.0, values, {"a": 1.5, "b": math.inf}, bounds,
                          [[1.0, -0.995], [-0.995, 1.0]])
    assert len(bad) == 4
    assert "unaligned" in bad[0] and "3.2x" in bad[0]
    assert "degenerate parameter a" in bad[1] and "degenerate parameter b" in bad[2]
    assert "a and b: correlation -0.995" in bad[3]


def test_keys_are_documented_in_the_schema_the_help_and_the_docs(capsys):
    fields = [f.name for f in dataclasses.fields(IdentifyConfig)]
    assert list(KEYS) == fields
    assert main(["--help"]) == 0
    shown = capsys.readouterr().out
    text = (ROOT / "docs" / "identify.md").read_text()
    section = text.split("## Every key")[1].split("\n## ")[0]
    for key in fields:
        assert f"  {key} = " in shown, key
        assert f"| `{key}` |" in section, key


def test_cfg_job_prints_the_composed_job(capsys):
    assert main(["--cfg", "job", "identify.gravity=none", "identify.starts=3"]) == 0
    import yaml

    job = yaml.safe_load(capsys.readouterr().out)
    assert job["identify"]["gravity"] == "none" and job["identify"]["starts"] == 3
    assert job["arm"]["sections"][0]["length"] == pytest.approx(0.06)


def test_gravity_none_refuses_a_gravity_tilt():
    with pytest.raises(ConfigError, match="gravity=none leaves out"):
        IdentifyConfig(gravity="none", parameters={"gravity.tilt_x": [-0.1, 0.1]})


def test_a_run_without_gravity_records_its_bench(tmp_path, capsys):
    """identify.gravity=none: stage 1 and the replay without gravity (the calibrated file and
    fit.json say so: a zero gravity vector), and the record of the bench."""
    out = tmp_path / "run"
    assert main(["identify.gravity=none", f"identify.out={out}"]) == 0
    record = json.loads((out / "fit.json").read_text())
    bench = record["bench"]
    assert bench["gravity"] == "none" and bench["gravity_arm_frame"] == [0.0, 0.0, 0.0]
    assert bench["pointing"] == "up" and bench["marker_offset"] == pytest.approx(0.008)
    np.testing.assert_allclose(bench["registration"]["rotation"], record["rotation"])
    assert record["stage1"]["sag_mm"] < 1e-6  # nothing pulls it down
    head = (out / "ftdcr_v4_calibrated.yaml").read_text().splitlines()[2]
    assert "pointing=up, gravity=none ([0.0, 0.0, 0.0] m/s^2" in head
    assert "Bench: pointing up, gravity none" in (out / "report.md").read_text()
