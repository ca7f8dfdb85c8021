"""The tip map's per-call functions in plain Python are numpy-vectorised
(:func:`quadarm.control.tipspace.map_eval`, :func:`~quadarm.control.tipspace.gravity_tip_coef`)
while compiled code runs their scalar loops (``*_loops``, through
:func:`quadarm.jitable.compiled_as`): the two give the same numbers bit for bit, one call at a
time and over whole planned paths (the split law in every mode, tilted hubs, accelerated
gravity, bends beyond the knots)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import nominal

from quadarm.control import tipspace as ts
from quadarm.scenarios.tip import the_map


@pytest.fixture(scope="module")
def tipmap() -> ts.TipMap:
    return the_map(nominal())  # the prb12 arm's map, from the on-disk cache the suite shares


def test_each_call_equals_the_scalar_loop(tipmap: ts.TipMap) -> None:
    rng = np.random.default_rng(5)
    shape = (4, tipmap.coef.shape[1], 3, tipmap.coef.shape[3])
    for mu, beta in [(0.0, 0.0), (1.0, np.pi), *rng.uniform((-0.2, -7.0), (1.3, 7.0), (40, 2))]:
        plain, loops = np.full((3, ts.N_CHAN), 7.0), np.full((3, ts.N_CHAN), 7.0)
        ts.map_eval(tipmap.knots, tipmap.coef, mu, beta, plain)
        ts.map_eval_loops(tipmap.knots, tipmap.coef, mu, beta, loops)
        np.testing.assert_array_equal(plain, loops)
        g = tipmap.g0 + rng.normal(scale=2.0, size=3)
        a, b = np.empty(shape), np.empty(shape)
        ts.gravity_tip_coef(tipmap.coef, tipmap.g0, g, a)
        ts.gravity_tip_coef_loops(tipmap.coef, tipmap.g0, g, b)
        np.testing.assert_array_equal(a, b)
        three, three_loops = np.full((3, ts.N_CHAN), 7.0), np.full((3, ts.N_CHAN), 7.0)
        ts.map_eval(tipmap.knots, a, mu, beta, three)  # fewer channels than the work array
        ts.map_eval_loops(tipmap.knots, a, mu, beta, three_loops)
        np.testing.assert_array_equal(three, three_loops)


def test_a_planned_path_equals_the_scalar_loops(tipmap: ts.TipMap,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(8)
    n = 6
    targets = tipmap.hanging() + rng.normal(scale=0.12, size=(n, 3))
    hubs = rng.normal(scale=0.02, size=(n, 3))
    angles = rng.normal(scale=0.2, size=(n, 3))
    rots = np.stack([_rot(a) for a in angles])
    g = tipmap.g0 + rng.normal(scale=1.5, size=(n, 3))
    plain = {(m, lim): tipmap.plan(m, targets, hubs, rots, g, mu_limit=lim)
             for m in ts.MODES for lim in (1.0, 0.4)}
    monkeypatch.setattr(ts, "map_eval", ts.map_eval_loops)
    monkeypatch.setattr(ts, "gravity_tip_coef", ts.gravity_tip_coef_loops)
    for (m, lim), rows in plain.items():
        np.testing.assert_array_equal(rows, tipmap.plan(m, targets, hubs, rots, g, mu_limit=lim))


def _rot(v: np.ndarray) -> np.ndarray:
    """The rotation by the vector ``v`` (rad), Rodrigues' formula."""
    th = float(np.linalg.norm(v))
    k = np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]]) / th
    return np.eye(3) + np.sin(th) * k + (1.0 - np.cos(th)) * (k @ k)
