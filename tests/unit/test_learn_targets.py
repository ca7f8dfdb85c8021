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
