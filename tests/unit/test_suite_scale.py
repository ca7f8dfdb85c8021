"""The task suite's arm axis (``make tasks ARM=...``, ``quadarm/suite_scale.py``): the task
files hold the reference arm's draws, which another arm flies in its own scale (positions
about the hub x its length, forces x its buckling load, masses x its payload limit); the
reference arm's draws are the files' own, untouched."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from quadarm import suite, suite_scale
from quadarm.api import compose
from quadarm.config import CONF_DIR
from quadarm.studies import Env

ENV = Env(python="PY", out="OUT", jobs="J", resume="R")
REF = suite_scale.Scale(length=0.5, buckling=0.8, payload=2.0, damping=0.5)
OWN = suite_scale.Scale(length=0.2, buckling=2.4, payload=1.0, damping=0.04)


@pytest.fixture
def scales(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two arms' quantities without building them (the suite's arithmetic alone)."""
    def of(overrides: tuple[str, ...], config_dir: str = "") -> suite_scale.Scale:
        return REF if overrides == (f"arm={suite_scale.REFERENCE}",) else OWN

    monkeypatch.setattr(suite_scale, "scale_of", of)


def _grid(cmd: list[str], key: str) -> list:
    grid = next(c for c in cmd if c.startswith("runner.grid="))
    body = grid[len("runner.grid={"):-1]
    assert body.startswith(key + ":")
    return json.loads(body[len(key) + 1:])


def test_the_reference_arm_flies_the_files_draws_untouched(scales: None) -> None:
    names = [n for n in suite_scale.DRAWS]
    plain, _ = suite.commands(names, ENV, [], None)
    ref, _ = suite.commands(names, ENV, [f"arm={suite_scale.REFERENCE}"], None)
    assert [c[:-1] for c in ref] == plain  # only the arm override itself is added
    assert all(c[-1] == f"arm={suite_scale.REFERENCE}" for c in ref)


def test_another_arm_scales_each_draw_by_its_own_quantity(scales: None) -> None:
    runs, report = suite.commands(["task_reach", "task_catch", "task_touch", "task_push"],
                                  ENV, ["arm=other", "+baseline=nominal"], None)
    assert all("hydra.sweep.dir=OUT/tasks/other/" in " ".join(c) for c in runs)
    assert report[report.index("-o") + 1] == "OUT/tasks/other/report"
    reach, catch, table, wall, push = runs
    cfg = compose(["+experiment=task_reach"])
    hub = np.array([0.0, 0.0, cfg.scenario.altitude])
    ref_t = np.array(cfg.runner.grid["scenario.targets"], dtype=float)
    got = np.array(_grid(reach, "scenario.targets"), dtype=float)
    # positions: the offset from the hub's start x L_own / L_ref (the same fractions of L)
    np.testing.assert_allclose((got - hub) / OWN.length, (ref_t - hub) / REF.length,
                               rtol=1e-12, atol=1e-15)
    masses = compose(["+experiment=task_catch"]).runner.grid["scenario.payload_mass"]
    np.testing.assert_allclose(np.array(_grid(catch, "scenario.payload_mass")) / OWN.payload,
                               np.array(masses) / REF.payload, rtol=1e-12)
    # the touch task's cases set their own forces: one multirun each, each force scaled
    for cmd, case in ((table, "table"), (wall, "wall")):
        ref_f = compose(["+experiment=task_touch", f"touch_case={case}"]).scenario.force
        assert f"touch_case={case}" in cmd
        assert f"hydra.sweep.dir=OUT/tasks/other/task_touch/{case}" in cmd
        force = float(next(c for c in cmd if c.startswith("scenario.force=")).split("=")[1])
        assert force / OWN.buckling == pytest.approx(ref_f / REF.buckling, rel=1e-12)
    f_push = float(next(c for c in push if c.startswith("scenario.force=")).split("=")[1])
    ref_push = compose(["+experiment=task_push"]).scenario.force
    assert f_push / OWN.buckling == pytest.approx(ref_push / REF.buckling, rel=1e-12)
    # the wall case's wall (a world point and its size) and approach distance, x L
    ref_w = compose(["+experiment=task_touch", "touch_case=wall"])
    hub = np.array([0.0, 0.0, ref_w.scenario.altitude])

    def given(key: str) -> np.ndarray:
        return np.array(json.loads(next(c for c in wall if c.startswith(key + "=")).split(
            "=", 1)[1]), dtype=float)

    r = OWN.length / REF.length
    np.testing.assert_allclose(given("world.objects.0.pos") - hub,
                               (np.array(ref_w.world.objects[0].pos) - hub) * r, rtol=1e-12)
    np.testing.assert_allclose(given("world.objects.0.size"),
                               np.array(ref_w.world.objects[0].size) * r, rtol=1e-12)
    assert float(given("scenario.reach")) == pytest.approx(ref_w.scenario.reach * r, rel=1e-12)
    assert not any(c.startswith("world.") for c in table)  # the table is reached from above


def test_a_baseline_with_damping_flies_it_at_the_same_fraction_of_the_arms_bound(
        scales: None) -> None:
    """The arm-aware bundles' tendon damping is a gain the arm's sampled loop bounds: flown
    with another arm, each such baseline is a multirun of its own with the damping x the
    arm's bound over the reference's; the other baselines fly together, unchanged."""
    runs, _ = suite.commands(["task_hover_gusts"], ENV, ["arm=other"], None)
    from quadarm.config import compose as hydra_compose

    sweep = hydra_compose(["+experiment=task_hover_gusts"]).hydra
    names = str(sweep.sweeper.params["+baseline"]).split(",")
    damped = {n for n in names  # read from the bundles' own files
              if OmegaConf.load(Path(CONF_DIR) / "baseline" / f"{n}.yaml").get(
                  "control", {}).get("tendon_damping", 0) > 0}
    assert damped and damped < set(names)
    plain, *own = runs
    assert "hydra.sweep.dir=OUT/tasks/other/task_hover_gusts" in plain
    assert f"+baseline={','.join(n for n in names if n not in damped)}" in plain
    assert {c.split("=", 1)[1] for cmd in own for c in cmd if c.startswith("+baseline=")} == damped
    for cmd in own:
        name = next(c.split("=", 1)[1] for c in cmd if c.startswith("+baseline="))
        assert f"hydra.sweep.dir=OUT/tasks/other/task_hover_gusts/{name}" in cmd
        ref_d = compose(["+experiment=task_hover_gusts", f"+baseline={name}"]
                        ).control.tendon_damping
        d = float(next(c for c in cmd if c.startswith("control.tendon_damping=")).split("=")[1])
        assert d / OWN.damping == pytest.approx(ref_d / REF.damping, rel=1e-12)
    # a damping the command line sets is the user's: not scaled, no split
    (cmd,), _ = suite.commands(["task_hover_gusts"], ENV,
                               ["arm=other", "control.tendon_damping=0.02"], None)
    assert not any(c.startswith("+baseline=") for c in cmd)


def test_a_split_run_carries_one_baseline_override(scales: None) -> None:
    """The user's ``+baseline=a,b`` split into runs: each line names its own baselines once."""
    runs, _ = suite.commands(["task_hover_gusts"], ENV,
                             ["arm=other", "+baseline=nominal,ff_com"], None)
    assert len(runs) == 2
    for cmd in runs:
        assert sum(c.split("=", 1)[0].lstrip("+~") == "baseline" for c in cmd) == 1, cmd
    assert {next(c for c in cmd if c.startswith("+baseline=")) for cmd in runs} == {
        "+baseline=nominal", "+baseline=ff_com"}


def test_lengths_and_speeds_scale_with_the_arm(scales: None) -> None:
    """A path's size and its speeds scale with L, so that a lap takes as long with any arm."""
    (cmd, *_), _ = suite.commands(["task_trace"], ENV, ["arm=other"], None)
    ref = compose(["+experiment=task_trace"])
    r = OWN.length / REF.length
    size = float(next(c for c in cmd if c.startswith("scenario.size=")).split("=")[1])
    assert size == pytest.approx(ref.scenario.size * r, rel=1e-12)
    np.testing.assert_allclose(_grid(cmd, "scenario.speed"),
                               np.array(ref.runner.grid["scenario.speed"]) * r, rtol=1e-12)


def test_scaled_draws_stay_out_of_the_job_folder_names(scales: None) -> None:
    """Hydra names a multirun's job folders by their overrides; the scaled draws (16 targets
    in full precision) would make a name longer than a file system allows (255 bytes), so the
    suite excludes them, keeping the experiment's own exclusions: the folder names are those of
    the reference arm's run plus ``arm=...``."""
    from quadarm.config import compose as hydra_compose

    runs, _ = suite.commands(list(suite_scale.DRAWS), ENV, ["arm=rod"], None)
    for cmd in runs:
        first = next(i for i, c in enumerate(cmd) if c.startswith("+experiment="))
        over = [c for c in cmd[first:]
                if not c.startswith(("hydra.", "runner.resume=", "+baseline="))]
        if not any(c.startswith(("runner.grid=", "scenario.")) for c in over):
            continue  # a task without draws to scale (its folders are the reference's)
        exclude = next(c for c in cmd if ".override_dirname.exclude_keys=" in c)
        task = next(c.split("=", 1)[1] for c in cmd if c.startswith("+experiment="))
        own = hydra_compose([f"+experiment={task}"]).hydra.job.config.override_dirname
        keys = exclude.split("=", 1)[1].strip("[]").split(",")
        assert keys[:len(own.exclude_keys)] == list(own.exclude_keys)
        # one job of the sweep: its swept values are given as plain overrides
        job = hydra_compose([*over, "+baseline=nominal", "sensing=exact", exclude]).hydra.job
        assert len(job.override_dirname) < 255, job.override_dirname[:120]
        assert "arm=rod" in job.override_dirname.split(",")


def test_one_draw_in_an_arms_scale_is_the_suites(scales: None) -> None:
    """``in_arm_scale`` (one reference draw, e.g. a test's reach target) gives what the suite
    flies: the reach task's targets as its scaled grid, the push force as its override, and
    the reference arm's own draw unchanged."""
    reach, push = suite.commands(["task_reach", "task_push"], ENV,
                                 ["arm=other", "+baseline=nominal"], None)[0]
    cfg = compose(["+experiment=task_reach"])
    targets = cfg.runner.grid["scenario.targets"]
    got = suite_scale.in_arm_scale(targets, suite_scale.POSITION, ["arm=other"],
                                   cfg.scenario.altitude)
    np.testing.assert_array_equal(np.array(got), np.array(_grid(reach, "scenario.targets")))
    force = compose(["+experiment=task_push"]).scenario.force
    flown = float(next(c for c in push if c.startswith("scenario.force=")).split("=")[1])
    assert suite_scale.in_arm_scale(force, suite_scale.FORCE, ["arm=other"]) == flown
    same = suite_scale.in_arm_scale(targets, suite_scale.POSITION,
                                    [f"arm={suite_scale.REFERENCE}"], cfg.scenario.altitude)
    np.testing.assert_array_equal(np.array(same), np.array(targets, dtype=float))
