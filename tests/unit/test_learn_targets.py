"""The learned row's held-out targets (:func:`quadarm.learn.held_out_targets`, issue 38 item 7):
targets the policy never trained on, from the region the task's draw spans. Needs neither
Stable-Baselines3 nor torch."""

from __future__ import annotations

import numpy as np

from quadarm import learn


def test_held_out_targets_lie_in_the_tasks_region_and_off_its_points() -> None:
    """Every held-out target is at a radius within the task's (10-20 cm), at the height the
    task's innermost and outermost targets interpolate to at that radius (to the 0.1 mm the
    targets are written to), on none of the task's 16 points; the radii and azimuths spread
    (a uniform draw of 400: each quartile of the range holds 20-30 %), and the draw is a
    function of the seed alone."""
    _, draw = learn.task_overrides("task_reach")
    fixed = np.array([t[0] for t in draw])
    held = learn.held_out_targets(draw, 400, seed=0)
    pts = np.array([t[0] for t in held])
    assert pts.shape == (400, 3) and all(len(t) == 1 for t in held)
    r = np.hypot(pts[:, 0], pts[:, 1])
    r_fixed = np.hypot(fixed[:, 0], fixed[:, 1])
    assert r.min() >= r_fixed.min() - 1e-4 and r.max() <= r_fixed.max() + 1e-4
    inner, outer = fixed[np.argmin(r_fixed)], fixed[np.argmax(r_fixed)]
    z = inner[2] + (r - r_fixed.min()) / np.ptp(r_fixed) * (outer[2] - inner[2])
    assert np.abs(pts[:, 2] - z).max() <= 2e-4
    gap = np.linalg.norm(pts[:, None, :] - fixed[None, :, :], axis=2).min()
    assert gap > 0.0
    quart = np.histogram(r, bins=np.linspace(r_fixed.min(), r_fixed.max(), 5))[0] / 400
    assert ((quart > 0.2) & (quart < 0.3)).all(), quart
    az = np.histogram(np.arctan2(pts[:, 1], pts[:, 0]), bins=4, range=(-np.pi, np.pi))[0] / 400
    assert ((az > 0.2) & (az < 0.3)).all(), az
    assert learn.held_out_targets(draw, 400, seed=0) == held
    assert learn.held_out_targets(draw, 400, seed=1) != held


def test_the_new_tasks_draws_and_their_held_out_draws_are_disjoint() -> None:
    """Hover in gusts: the task's gust seeds 0-3, training's (:data:`quadarm.learn.
    TRAIN_SEEDS`) and the held-out ones (a stream of their own per seed) share no seed. Push:
    the task's two axes; training draws directions all round (``circle``), the held-out
    directions are horizontal unit vectors, none on an axis, another set per seed."""
    over, draw = learn.task_overrides("task_hover_gusts")
    assert "aero=gusty" in over and "scenario=hover" in over and draw == [0, 1, 2, 3]
    spec = learn.training_draw("task_hover_gusts", draw)
    assert spec is not None
    train = set(spec["seed"]["values"])
    held = learn.held_out_draw("task_hover_gusts", draw, 64, seed=0)
    assert len(set(held)) == 64 and all(isinstance(s, int) for s in held)
    assert not train & set(draw) and not train & set(held) and not set(held) & set(draw)
    assert learn.held_out_draw("task_hover_gusts", draw, 64, seed=1) != held

    over, draw = learn.task_overrides("task_push")
    assert "scenario=disturbance" in over and draw == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    assert learn.training_draw("task_push", draw) == {"scenario.direction": {"dist": "circle"}}
    held_dirs = np.array(learn.held_out_draw("task_push", draw, 64, seed=0))
    np.testing.assert_allclose(np.linalg.norm(held_dirs, axis=1), 1.0, atol=1e-6)
    assert not held_dirs[:, 2].any()
    assert not any(np.allclose(d, a, atol=1e-3) for d in held_dirs for a in draw)
    assert learn.held_out_draw("task_push", draw, 4, seed=1) != held_dirs[:4].tolist()
    # the reach's training draw is its own 16 targets, as before the other tasks
    _, reach = learn.task_overrides("task_reach")
    assert learn.training_draw("task_reach", reach) == {
        "scenario.targets": {"dist": "choice", "values": reach}}


def test_every_learned_task_is_registered_whole() -> None:
    """The registry's conformance (:data:`quadarm.learn.TASKS`): a learned task is one
    :class:`~quadarm.learn.TaskSpec` (every field required, its training and held-out draws
    among them) and one ``conf/learn/<task>.yaml``; each names the other. For each task: its
    experiment's grid holds its key(s), the training draw varies exactly those keys, the
    held-out draw gives n values of the key off the task's draw, and :func:`learn.assign` sets
    every key. ``make tasks-rl`` trains every file (experiments/tasks_rl.sh loops over them)."""
    from pathlib import Path

    import pytest

    fields = learn.TaskSpec._fields
    assert {"training", "held_out"} <= set(fields)
    with pytest.raises(TypeError):  # a task without its draws cannot be registered
        learn.TaskSpec("hover", "reach", "seed", "tip_rms_cm", "whole")  # type: ignore[call-arg]
    files = {p.stem for p in learn.settings_path("task_reach").parent.glob("*.yaml")}
    assert files == set(learn.TASKS), "a conf/learn file without its TaskSpec, or the reverse"
    script = (Path(__file__).parents[2] / "experiments" / "tasks_rl.sh").read_text()
    assert "for conf in conf/learn/*.yaml" in script
    for task, spec in learn.TASKS.items():
        assert callable(spec.training) and callable(spec.held_out), task
        over, draw = learn.task_overrides(task)
        assert over[0] == f"scenario={spec.scenario}" and len(draw) >= 1
        keys = spec.key if isinstance(spec.key, tuple) else (spec.key,)
        train = learn.training_draw(task, draw)
        assert train is not None and set(train) == set(keys), task
        held = learn.held_out_draw(task, draw, 6, seed=0)
        assert len(held) == 6 and not [v for v in held if v in draw], task
        assert learn.held_out_draw(task, draw, 6, seed=0) == held  # the seed's alone
        sets = learn.assign(task, held[0])
        assert [s.split("=", 1)[0] for s in sets] == list(keys)


def test_the_registered_draws_are_the_ones_the_committed_runs_flew() -> None:
    """Hover and push after the draws moved into :class:`~quadarm.learn.TaskSpec`: the
    held-out draw of each training seed equals the one the committed runs recorded when they
    flew (``docs/tasks_rl/learn_<task>_ppo_hub_seed<N>.json``, ``eval_held_out.targets``, and
    ``baselines_<task>.json``'s ``held_out``, written by the code before the change), and the
    training draws are the documented ones (gust seeds 4..10003, directions all round)."""
    import json
    from pathlib import Path

    docs = Path(__file__).parents[2] / "docs" / "tasks_rl"
    for task, short in (("task_hover_gusts", "hover_gusts"), ("task_push", "push")):
        _, draw = learn.task_overrides(task)
        runs = [json.loads((docs / f"learn_{short}_ppo_hub_seed{s}.json").read_text())
                for s in (0, 1, 2)]
        for run in runs:
            n = len(run["eval_held_out"]["targets"])
            assert learn.held_out_draw(task, draw, n, run["seed"]) == \
                run["eval_held_out"]["targets"]
        base = json.loads((docs / f"baselines_{short}.json").read_text())
        assert [v for s in base["seeds"] for v in learn.held_out_draw(task, draw, 8, s)] == \
            base["held_out"]
    _, draw = learn.task_overrides("task_hover_gusts")
    assert learn.training_draw("task_hover_gusts", draw) == {
        "seed": {"dist": "choice", "values": list(range(4, 10_004))}}


def test_the_trace_draws_are_disjoint() -> None:
    """Trace: the task's four laps (circle and figure-eight at 0.1 and 0.2 m/s), the training
    laps (the same paths at the multiples of 5 mm/s in 0.08-0.22 m/s but the task's) and the
    held-out laps (whole mm/s in the range, none a multiple of 5) share no (path, speed); the
    training speeds surround the task's, and the held-out draw spreads over the range."""
    over, draw = learn.task_overrides("task_trace")
    assert "scenario=trace" in over and "scenario.size=0.3" in over
    assert draw == [["circle", 0.1], ["circle", 0.2], ["figure_eight", 0.1],
                    ["figure_eight", 0.2]]
    spec = learn.training_draw("task_trace", draw)
    assert spec is not None
    paths, speeds = spec["scenario.path"]["values"], spec["scenario.speed"]["values"]
    assert sorted(paths) == ["circle", "figure_eight"]
    train = {(p, round(v * 1000)) for p in paths for v in speeds}
    task = {(p, round(v * 1000)) for p, v in draw}
    assert not train & task
    assert min(speeds) < 0.1 < 0.2 < max(speeds) and any(0.1 < v < 0.2 for v in speeds)
    held = learn.held_out_draw("task_trace", draw, 400, seed=0)
    pairs = {(p, round(v * 1000)) for p, v in held}
    assert all(abs(v * 1000 - round(v * 1000)) < 1e-9 for _, v in held)
    assert not pairs & train and not pairs & task
    mm = np.array([v * 1000 for _, v in held])
    assert mm.min() >= 80 and mm.max() <= 220 and np.ptp(mm) > 120
    assert {p for p, _ in held} == {"circle", "figure_eight"}
    assert learn.held_out_draw("task_trace", draw, 8, seed=1) != held[:8]
