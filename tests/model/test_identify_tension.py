"""identify on a tension-driven arm (``arm.actuation=tension``, ``identify.command_unit=N``;
docs/identify.md, "Tension arms"): the replay drives the bench's force actuators with the
logged tensions, the commands' unit must match the arm's actuation, and the servo-only keys
are refused. The recovery of a tension arm's parameters is in test_identify_recovery.py."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from quadarm.config import ConfigError, compose
from quadarm.config.identify import IdentifyConfig
from quadarm.config.sections import SectionArmConfig, SectionConfig, TendonSetConfig
from quadarm.identify import data, fit, register
from quadarm.identify.__main__ import compose as identify_compose
from quadarm.identify.__main__ import main
from quadarm.identify.replay import Bench


def _arm(**kw: object) -> SectionArmConfig:
    """Two 8 cm sections of 20 g on a 1 mm backbone of 60 GPa, three tendons 4.5 mm out,
    driven by tension (the recovery suite's reference arm)."""
    secs = [SectionConfig(length=0.08, links=5, youngs_modulus=60e9, radius=0.0005, mass=0.02,
                          tendons=TendonSetConfig(count=3, offset=0.0045, angle0_deg=25.0 * j))
            for j in range(2)]
    return SectionArmConfig(sections=secs, actuation="tension", tip_mass=0.005,
                            **kw)  # type: ignore[arg-type]


def _bench(arm: SectionArmConfig, gravity: bool = True) -> Bench:
    cfg = compose(["scenario=statics"])
    sim: Any = OmegaConf.to_object(cfg.sim)
    if not gravity:
        sim = dataclasses.replace(sim, gravity=[0.0, 0.0, 0.0])
    frame: Any = OmegaConf.to_object(cfg.airframe)
    return Bench(frame, arm, sim, "up", 0.005)


def test_a_tension_settles_where_the_hinges_balance_its_moment():
    """Without gravity, tendons routed over the hinges (constant moment arms J): the force at
    rest is -K q - J^T T (a tension T shortens the tendon), so the settled hinge angles are
    q = -K^-1 J^T T, whatever the path; the replay gives them to rounding."""
    bench = _bench(_arm(), gravity=False)
    tension = np.array([[0.0] * 6, [0.3, 0.0, 0.0, 0.0, 0.2, 0.0], [0.1, 0.4, 0.0, 0.5, 0.0, 0.0]])
    bench.data.qpos[:] = bench.model.qpos0
    for row in bench.commands(tension):
        bench.settle(row)
        want = np.linalg.solve(bench.stiff, -bench.jac.T @ row)
        assert np.allclose(bench.data.qpos, want, rtol=0, atol=1e-12 + 1e-9 * np.abs(want).max())
    assert np.abs(bench.data.qpos).max() > 0.01  # a bend worth the name (rad)


def test_an_upright_tension_arm_settles_within_a_few_newton_steps():
    """Under gravity the upright arm is soft (its weight half its buckling load): the Newton
    matrix carries gravity's stiffness on the straight arm, so each row converges to the
    solver's tolerance well inside the 40-evaluation cap (with the hinges' K alone it
    contracts by 0.7 a step and every row stopped at the cap)."""
    bench = _bench(_arm())
    rng = np.random.default_rng(3)
    tension = rng.uniform(0.0, 0.4, (12, 6))
    bench.data.qpos[:] = bench.model.qpos0
    for row in bench.commands(tension):
        _, evals = bench.settle(row)
        assert evals < 20
        assert np.linalg.norm(bench.residual()) < 1e-9


def test_tendon_friction_is_a_play_of_twice_the_friction_on_the_tension():
    """Coulomb friction F on a force-driven tendon: the tension reaching the arm lags the
    command by F either way (a play of width 2 F, N: F under it while it rises, F over it
    while it falls, so a released tendon still carries F), and stays in [0, tension_max]."""
    bench = _bench(_arm(tendon_friction=0.05, tension_max=1.0))
    up_down = np.array([0.0, 0.5, 0.5, 0.45, 0.4, 2.0, 0.0])[:, None].repeat(6, axis=1)
    got = bench.commands(up_down)[:, 0]
    assert got == pytest.approx([0.0, 0.45, 0.45, 0.45, 0.45, 1.0, 0.05], abs=1e-12)


def test_a_command_unit_that_is_not_the_arms_actuation_is_refused_in_one_line():
    for overrides, says in ((["identify.command_unit=N"], "need arm.actuation=tension"),
                            (["arm.actuation=tension"], "need arm.actuation=displacement")):
        with pytest.raises(ConfigError) as err:
            identify_compose(overrides)
        assert str(err.value).startswith("identify.command_unit=")
        assert says in str(err.value) and "\n" not in str(err.value)
    arm = identify_compose(["arm.actuation=tension", "identify.command_unit=N"])[1]
    assert arm.actuation == "tension"


@pytest.mark.parametrize("key", ["sections.#.tendons.stiffness", "sections.*.tendons.pretension",
                                 "sections.0.tendons.travel_scales.#", "backlash"])
def test_servo_only_keys_are_refused_on_a_tension_arm(key):
    """Keys no settled pose of a tension arm depends on: fitted, they would be singular."""
    with pytest.raises(ConfigError, match="moves no settled pose of a tension-driven arm"):
        fit.expand(_arm(), {key: [0.0, 1.0]})
    fit.expand(_arm(), {"sections.#.youngs_modulus": [1e10, 1e11],
                        "sections.#.tendons.offset": [0.003, 0.006]})


def test_stage1_reads_tensions_as_their_excess_over_the_release():
    """Tensions above a pretension the rig keeps: the rest rows and the pulled channel are
    found from each channel's excess over its lowest tension, as fractions of the largest."""
    t = np.full((5, 3), 0.2)
    t[3, 1], t[4, 2] = 1.2, 0.9
    seen = register.tension_as_travel(t)
    assert seen.max() == pytest.approx(register.REF_COMMAND)
    assert list(register.active_channel(seen)) == [-1, -1, -1, 1, 2]
    tip = np.arange(15.0).reshape(5, 3)
    assert register.rest_tip(seen, tip) == pytest.approx(tip[1])


def _write(folder: Path, name: str, tension: np.ndarray, tip: np.ndarray,
           labels: np.ndarray) -> None:
    frame = pd.DataFrame({f"t{i}_N": tension[:, i] for i in range(tension.shape[1])})
    for a, col in enumerate("xyz"):
        frame[f"tip_{col}"] = tip[:, a] * 1e3
    frame["pattern_label"] = labels
    frame.to_csv(folder / name, index=False)


def _pulls(n: int) -> tuple[list[np.ndarray], list[str]]:
    """Stage 1's pull rows for ``n`` tendons: three at rest, then each tendon alone at 1.5
    and 2.5 N, with their labels."""
    pulls, labels = [np.zeros(n)] * 3, ["rest"] * 3
    for k in range(n):
        for level in (1.5, 2.5):
            row = np.zeros(n)
            row[k] = level
            pulls.append(row)
            labels.append(f"tendon{k}_{level:g}N")
    return pulls, labels


def _job(folder: Path) -> list[str]:
    """The overrides of a job on ``folder``'s tension logs of the v4 arm driven by tension."""
    channels = "[" + ",".join(f"t{i}_N" for i in range(9)) + "]"
    return ["arm.actuation=tension", "identify.command_unit=N", f"identify.data_dir={folder}",
            "identify.pulls=pulls.csv", "identify.train=train.csv", "identify.val=val.csv",
            f"identify.channels={channels}", f"identify.out={folder / 'run'}"]


def test_a_negative_tension_is_refused_in_one_line(tmp_path, capsys):
    """Exit 2 before anything is simulated: a tendon only pulls."""
    rng = np.random.default_rng(1)
    for name in ("pulls.csv", "train.csv", "val.csv"):
        t = rng.uniform(0.0, 2.0, (4, 9))
        if name == "val.csv":
            t[2, 0] = -0.5
        _write(tmp_path, name, t, rng.uniform(-0.05, 0.05, (4, 3)), np.array(["x"] * 4))
    assert main(_job(tmp_path)) == 2
    err = capsys.readouterr().err.strip()
    assert "identify.val" in err and "must be in [0, arm.tension_max = 30]" in err
    assert "\n" not in err


@pytest.mark.slow
def test_the_job_identifies_a_tension_arm_from_csv_files(tmp_path):
    """``python -m quadarm.identify`` on logs of tensions (N): the v4 arm driven by tension
    (``arm.actuation=tension identify.command_unit=N``), its recordings made by its own
    replay through a registration, with 0.3 mm of noise; stage 1 and 3 (nothing fitted) score
    val at the noise (about 30 s on the shared machine, hence slow)."""
    _, arm, _, _, _ = identify_compose(["arm.actuation=tension", "identify.command_unit=N"])
    cfg = compose(["scenario=statics"])
    n = arm.n_tendons
    pulls, labels = _pulls(n)
    rng = np.random.default_rng(5)
    train, val = rng.uniform(0.0, 2.0, (10, n)), rng.uniform(0.0, 2.0, (8, n))
    truth = fit.Problem(OmegaConf.to_object(cfg.airframe), OmegaConf.to_object(cfg.sim),
                        arm, "up", 0.008, tuple(range(n)),
                        register.rotation(0.1, -0.05, 0.3), np.array([0.02, -0.01, 0.15]))
    for name, t, lab in (("pulls.csv", np.array(pulls), np.array(labels)),
                         ("train.csv", train, np.array(["bend"] * 10)),
                         ("val.csv", val, np.array(["bend"] * 8))):
        tip = truth.simulate({}, t) + rng.normal(scale=3e-4 / math.sqrt(3), size=(len(t), 3))
        _write(tmp_path, name, t, tip, lab)
    assert main(_job(tmp_path)) == 0
    metrics = pd.read_parquet(tmp_path / "run" / "metrics.parquet").set_index("metric")["value"]
    assert metrics["val_rmse_mm"] < 0.6  # the noise (0.3 mm) and stage 1's angles
    assert metrics["val_mean_predictor_mm"] > 10 * metrics["val_rmse_mm"]


def test_tension_units_are_a_command_unit_only():
    IdentifyConfig(command_unit="N")
    with pytest.raises(ConfigError, match="position_unit"):
        IdentifyConfig(position_unit="N")
    assert data.COMMAND_UNITS["N"] == 1.0


@pytest.mark.slow
def test_stage_2_fits_a_tension_arm_through_the_command_line(tmp_path):
    """Stage 2 end to end on a tension arm (issue 39): ``python -m quadarm.identify`` with
    ``arm.actuation=tension identify.command_unit=N`` and each section's modulus in
    ``parameters``, started 2x stiff (100 GPa on the command line) on recordings of the
    arm at 50 GPa made by its own replay through a registration, with 0.3 mm of noise: the
    fitted moduli come back within two standard errors of 50 GPa, val at the noise, and the
    calibrated arm file carries them."""
    import yaml

    _, arm, _, _, _ = identify_compose(["arm.actuation=tension", "identify.command_unit=N"])
    cfg = compose(["scenario=statics"])
    n = arm.n_tendons
    pulls, labels = _pulls(n)
    rng = np.random.default_rng(5)
    train, val = rng.uniform(0.0, 2.0, (16, n)), rng.uniform(0.0, 2.0, (8, n))
    truth = fit.Problem(OmegaConf.to_object(cfg.airframe), OmegaConf.to_object(cfg.sim),
                        arm, "up", 0.008, tuple(range(n)),
                        # the tracker's z up, the arm standing: its axis (tip to base) down
                        register.rotation(math.pi + 0.1, -0.05, 0.3),
                        np.array([0.02, -0.01, 0.15]))
    for name, t, lab in (("pulls.csv", np.array(pulls), np.array(labels)),
                         ("train.csv", train, np.array(["bend"] * 16)),
                         ("val.csv", val, np.array(["bend"] * 8))):
        tip = truth.simulate({}, t) + rng.normal(scale=3e-4 / math.sqrt(3), size=(len(t), 3))
        _write(tmp_path, name, t, tip, lab)
    moduli = [f"sections.{j}.youngs_modulus" for j in range(3)]
    bounds = ", ".join(f"{k}: [1.0e10, 2.0e11]" for k in moduli)
    over = [*_job(tmp_path), *[f"arm.{k}=1.0e11" for k in moduli],
            f"++identify.parameters={{{bounds}}}", "identify.starts=1",
            "identify.workers=1", "identify.train_stride=1", "identify.max_nfev=12",
            "identify.name=fitted"]
    assert main(over) == 0
    run = tmp_path / "run"
    rec = json.loads((run / "fit.json").read_text())
    assert not any("upside down" in w for w in rec["warnings"])
    for k in moduli:
        got, se = rec["values"][k], rec["stderr"][k]
        assert abs(got - 5e10) < 2 * se, (k, got, se)
    metrics = pd.read_parquet(run / "metrics.parquet").set_index("metric")["value"]
    assert metrics["val_rmse_mm"] < 0.6  # the noise (0.3 mm) and stage 1's angles
    assert metrics["nominal_val_rmse_mm"] > 10 * metrics["val_rmse_mm"]
    body = yaml.safe_load((run / "fitted.yaml").read_text())
    assert body["actuation"] == "tension"
    assert [s["youngs_modulus"] for s in body["sections"]] == [rec["values"][k] for k in moduli]
