"""``scenario=replay`` from the log's attitude (docs/replay.md): a flying replay whose log
has the vehicle's quaternion (``qw, qx, qy, qz``) starts from it, not level. A yawed start
holding its heading flies the level hover turned about the vertical (the physics does not
care which way the vehicle faces); a tilted start is levelled by the flight controller; each
such run, its own time series replayed, gives back its trajectory (1e-9); a log that is not
a unit quaternion, or a tilted start on the bench, is refused in one line."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from quadarm import names
from quadarm.api import compose
from quadarm.config.checks import ConfigError
from quadarm.runner import engine, episode
from quadarm.runner.store import timeseries_frame

Z0 = 1.0  # m: where the vehicle starts and is held
PULL = 0.3  # N: tendon a's tension at the end of its ramp (the tip swings off the axis)


def _log(tmp_path, name: str, quat: tuple[float, float, float, float] | None,
         yaw: float | None) -> str:
    """A 0.4 s log at 100 Hz: tendon a ramped to PULL over 0.2 s, the others slack, the
    references held at (0, 0, Z0), the heading reference ``yaw`` (rad) and the attitude
    ``quat`` (w, x, y, z) at every row (the first is the start's)."""
    t = np.arange(41) * 0.01
    frame = pd.DataFrame({names.TIME: t,
                          names.tension_column(0): PULL * np.clip(t / 0.2, 0.0, 1.0),
                          names.tension_column(1): 0.0, names.tension_column(2): 0.0,
                          **dict.fromkeys(names.REFERENCE[:2], 0.0), names.REFERENCE[2]: Z0,
                          **dict.fromkeys(names.POSITION[:2], 0.0), names.POSITION[2]: Z0})
    if yaw is not None:
        frame[names.YAW_REFERENCE] = yaw
    if quat is not None:
        for c, v in zip(names.QUATERNION, quat, strict=True):
            frame[c] = v
    path = tmp_path / f"{name}.csv"
    frame.to_csv(path, index=False, float_format="%.17g")
    return str(path)


def _replay(path: str, *extra: str):
    ep = episode.run_episode(compose(["scenario=replay", f"scenario.log={path}", *extra]))
    assert ep.status == "ok", ep.message
    return ep


def _yaw(q: np.ndarray) -> np.ndarray:
    w, x, y, z = q.T
    return np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def _tilt(q: np.ndarray) -> np.ndarray:
    """The body z axis's angle from the vertical (rad)."""
    w, x, y, _ = q.T
    return np.arccos(np.clip(1 - 2 * (x * x + y * y), -1.0, 1.0))


def _self_replay(tmp_path, ep, yaw: float | None):
    """``ep``'s own time series (with the heading reference it flew, which the time series
    does not hold), replayed."""
    frame = timeseries_frame(ep, "r", 1)
    if yaw is not None:
        frame[names.YAW_REFERENCE] = yaw
    path = tmp_path / "again.parquet"
    frame.to_parquet(path)
    again = _replay(str(path))
    for name in ("qpos", "qvel", "tip"):
        np.testing.assert_allclose(getattr(again.log, name), getattr(ep.log, name), rtol=0,
                                   atol=1e-9)


def test_a_yawed_start_flies_the_level_hover_turned(tmp_path, monkeypatch):
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    psi = 0.6
    quat = (math.cos(psi / 2), 0.0, 0.0, math.sin(psi / 2))
    level = _replay(_log(tmp_path, "level", None, None))
    turned = _replay(_log(tmp_path, "turned", quat, psi))
    np.testing.assert_array_equal(turned.log.qpos[0, 3:7], quat)  # the log's own numbers
    # Without the quaternion the same log starts level, heading 0, and turns towards psi.
    unturned = _replay(_log(tmp_path, "unturned", None, psi))
    assert unturned.log.qpos[0, 3] == 1.0 and abs(_yaw(unturned.log.qpos[:, 3:7])[-1]) < psi
    # The turned run is the level one rotated by psi about the vertical through the start.
    c, s = math.cos(psi), math.sin(psi)
    rz = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    start = np.array([0.0, 0.0, Z0])
    want_tip = (level.log.tip - start) @ rz.T + start
    assert np.abs(level.log.tip[-1, :2]).max() > 5e-3  # the tip has swung off the axis
    np.testing.assert_allclose(turned.log.tip, want_tip, rtol=0, atol=1e-8)
    np.testing.assert_allclose(turned.log.qpos[:, :3], (level.log.qpos[:, :3] - start) @ rz.T
                               + start, rtol=0, atol=1e-8)
    np.testing.assert_allclose(_yaw(turned.log.qpos[:, 3:7]),
                               _yaw(level.log.qpos[:, 3:7]) + psi, rtol=0, atol=1e-8)
    _self_replay(tmp_path, turned, psi)


def test_a_tilted_start_is_levelled_and_replays_itself(tmp_path, monkeypatch):
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    tilt = 0.15  # rad about x
    quat = (math.cos(tilt / 2), math.sin(tilt / 2), 0.0, 0.0)
    run = _replay(_log(tmp_path, "tilted", quat, None))
    np.testing.assert_array_equal(run.log.qpos[0, 3:7], quat)
    angle = _tilt(run.log.qpos[:, 3:7])
    assert angle[0] == pytest.approx(tilt, abs=1e-12)
    assert angle[-1] < tilt / 5  # the flight controller levels it
    _self_replay(tmp_path, run, None)
    cfg = compose(["scenario=replay", f"scenario.log={tmp_path / 'tilted.csv'}"])
    for b in engine.run_batched([cfg, cfg], nthread=1, lockstep=True):  # batched alike
        assert np.array_equal(b.log.qpos, run.log.qpos)


def test_a_level_quaternion_changes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    plain = _replay(_log(tmp_path, "plain", None, None))
    level = _replay(_log(tmp_path, "levelq", (1.0, 0.0, 0.0, 0.0), None))
    assert np.array_equal(plain.log.qpos, level.log.qpos)


@pytest.mark.parametrize(("quat", "extra", "key", "message"), [
    ((2.0, 0.0, 0.0, 0.0), (), "scenario.log", "norm 2: not a unit quaternion"),
    ((math.cos(0.1), math.sin(0.1), 0.0, 0.0), ("airframe=bench", "airframe.bench=down"),
     "airframe.bench", "not level"),
])
def test_a_bad_attitude_is_refused_in_one_line(tmp_path, quat, extra, key, message):
    path = _log(tmp_path, "bad", quat, None)
    with pytest.raises(ConfigError) as err:
        compose(["scenario=replay", f"scenario.log={path}", *extra])
    text = str(err.value)
    assert text.startswith(key) and message in text and "\n" not in text
