"""The runner's pieces: trial ids, expansion order and seeds, the trial store's location, the
time-series choice, dispatch sizes, and the fast config flattening and YAML it relies on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import cfg_of, composed
from omegaconf import OmegaConf

from quadarm.config import flatten, load_unchecked
from quadarm.runner import engine, store, study
from quadarm.runner.trials import expand, trial_id


def test_trial_id_is_the_config_not_the_runner() -> None:
    base = composed("scenario=hover")
    same = cfg_of("scenario=hover", "runner.n_jobs=2", "runner.timeseries=none",
                       "runner.store=/elsewhere", "runner=dask")
    assert trial_id(base) == trial_id(same)
    assert len(trial_id(base)) == 16
    for other in (["seed=1"], ["arm.stiffness=0.07"], ["gains=soft"], ["scenario=workspace"]):
        assert trial_id(cfg_of("scenario=hover", *other)) != trial_id(base)


def test_grid_order_and_seeds() -> None:
    cfg = cfg_of("scenario=hover", "++runner.grid={seed:[3,4],arm.segments:[8,12]}")
    trials = expand(cfg)
    assert [t.index for t in trials] == [0, 1, 2, 3]
    assert [(t.cfg.seed, t.cfg.arm.segments) for t in trials] == [(3, 8), (3, 12), (4, 8),
                                                                   (4, 12)]
    assert [t.seed for t in trials] == [3, 3, 4, 4]  # a grid over the seed sets the trial's
    assert len({t.run_id for t in trials}) == 4


def test_monte_carlo_seeds_are_spawned_and_stable() -> None:
    spec = "++runner.randomize={arm.stiffness:{dist:lognormal,sigma:0.2}}"
    a = expand(cfg_of("scenario=hover", spec, "runner.trials=5"))
    b = expand(cfg_of("scenario=hover", spec, "runner.trials=7"))
    assert len({t.seed for t in a}) == 5
    # the first draws do not depend on how many follow
    assert [t.run_id for t in a] == [t.run_id for t in b[:5]]
    assert all(t.cfg.arm.stiffness == t.overrides["arm.stiffness"] > 0 for t in a)


@pytest.mark.parametrize("overrides", [
    ["scenario=mission"],
    ["scenario=disturbance", "airframe=hex_x", "++runner.grid={seed:[0,1]}"],
    ["scenario=held_bend", "++runner.randomize={scenario.mu:{dist:uniform,low:0,high:1}}",
     "runner.trials=2"],
])
def test_fast_flatten_and_yaml_match_omegaconf(overrides: list[str]) -> None:
    for t in expand(cfg_of(*overrides)):
        assert flatten(t.cfg) == flatten(OmegaConf.structured(t.cfg))
        assert store.config_yaml(t.cfg) == OmegaConf.to_yaml(OmegaConf.structured(t.cfg))


def test_store_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = composed("scenario=hover")
    out = tmp_path / "job"
    assert study.resolve_store(cfg, out) == (out / "trials").resolve()
    monkeypatch.chdir(tmp_path)
    rel = cfg_of("scenario=hover", "runner.store=shared/trials")
    assert study.resolve_store(rel, out) == tmp_path / "shared" / "trials"
    assert study.resolve_store(rel, out, base=tmp_path / "x") == tmp_path / "x/shared/trials"
    assert study.resolve_store(cfg, out, "/abs/store") == Path("/abs/store")


def test_timeseries_choice() -> None:
    assert study._keep_timeseries("all", 100) == [True] * 100
    assert study._keep_timeseries("none", 3) == [False] * 3
    assert study._keep_timeseries("first", 3) == [True, False, False]
    assert study._keep_timeseries("auto", 64) == [True] * 64
    assert study._keep_timeseries("auto", 65) == [False] * 65


def test_effective_jobs() -> None:
    assert engine.effective_jobs(cfg_of("runner.backend=sequential",
                                        "runner.n_jobs=4").runner) == 1
    assert engine.effective_jobs(cfg_of("runner.n_jobs=3").runner) == 3
    # -1 is every core of this machine (what joblib would start), not merely "some"
    assert engine.effective_jobs(cfg_of("runner.n_jobs=-1").runner) == (os.cpu_count() or 1)
    assert engine.effective_jobs(cfg_of("runner.n_jobs=-1",
                                        "runner.backend=sequential").runner) == 1
    assert engine.effective_jobs(cfg_of("runner=dask").runner) == -1  # every cluster worker


def test_grid_over_mission_phases_recomputes_the_duration() -> None:
    trials = expand(cfg_of("scenario=mission",
                                "++runner.grid={scenario.hover_time:[2.0,3.0]}"))
    assert [t.cfg.scenario.duration for t in trials] == [35.0, 36.0]
    # the nominal point is the same trial as the job without a grid
    assert trials[1].run_id == trial_id(composed("scenario=mission"))


@pytest.mark.parametrize("scenario, key", [("reach", "move_time"), ("trace", "tail"),
                                           ("touch world=table", "hold")])
def test_a_grid_over_a_derived_durations_times_rederives_it(scenario: str, key: str) -> None:
    """Every scenario whose duration is derived (its schema leaves it unset) derives it again
    for each grid point: the two points' durations differ by the varied time times the number
    of times it occurs in the scenario (reach: once per target). The base job's values come
    without preflight: preflight plans the path (seconds of plain Python for tip-space
    scenarios), and the grid's composition below checks that same job anyway."""
    job = load_unchecked(f"scenario={scenario}".split())
    assert type(job.scenario).derives_duration()
    base = getattr(job.scenario, key)
    trials = expand(cfg_of(*f"scenario={scenario}".split(),
                           f"++runner.grid={{scenario.{key}:[{base},{base + 0.5}]}}"))
    d0, d1 = (t.cfg.scenario.duration for t in trials)
    per = len(job.scenario.targets) if scenario == "reach" else 1
    assert d1 - d0 == pytest.approx(0.5 * per)
    assert trials[0].run_id == trial_id(job)
