"""The alignment window's pinning (``sensing.align_swing``, ``sensing.align_rate``;
docs/sensing.md, "The turn-on bias in the model error"): at their defaults the filter's
parameters and the run id are as before the keys; other values reach the still-arm
pseudo-measurements; bad values and a model-error table fitted for another pinning are refused
in one line naming the key."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import cfg_of

from quadarm.config import ConfigError
from quadarm.runner.trials import trial_id
from quadarm.sensing import armfilter
from quadarm.sensing import config as sc

WINDOW = ("scenario=disturbance", "scenario.duration=4.0", "sensing=realistic_arm",
          "sensing.shape_table=direction", "sensing.align_s=3.0")


def _af(**kw: float) -> np.ndarray:
    return armfilter.scalar_params(sc.preset("realistic_arm").arm_imu, 1e-10, 12, 2, 0.01,
                                   np.zeros(3), 9.81, 100, **kw)


def test_the_defaults_are_the_fixed_pinning_and_the_same_run_id() -> None:
    assert np.array_equal(_af(), _af(align_swing=0.005, align_rate=0.02))
    assert _af()[armfilter.F_RSE] == armfilter.ALIGN_SWING ** 2
    assert _af()[armfilter.F_RSV] == armfilter.ALIGN_RATE ** 2
    cfg = cfg_of("sensing=realistic_arm")
    assert (cfg.sensing.align_swing, cfg.sensing.align_rate) == (armfilter.ALIGN_SWING,
                                                                 armfilter.ALIGN_RATE)
    explicit = cfg_of("sensing=realistic_arm", "sensing.align_swing=0.005",
                      "sensing.align_rate=0.02")
    assert trial_id(cfg) == trial_id(explicit)
    assert trial_id(cfg) != trial_id(cfg_of("sensing=realistic_arm", "sensing.align_swing=0.02"))


def test_the_pinning_reaches_the_still_arm_update() -> None:
    # A still-arm update moves a swing mode towards zero by P / (P + var): a looser pinning
    # moves it less, by the variance it was given.
    nc, nx, _ = armfilter.sizes(4, 2)
    for swing in (0.005, 0.02):
        af = _af(align_swing=swing, align_rate=0.08)
        x = np.zeros(nx)
        x[2] = 0.01  # the first swing mode (after the two bend coordinates)
        p = np.diag(np.full(nx, 1e-4)).ravel()
        armfilter.still(x, p, af, np.zeros(nx))
        assert x[2] == pytest.approx(0.01 * swing ** 2 / (1e-4 + swing ** 2), rel=1e-12)


@pytest.mark.parametrize("key", ["align_swing", "align_rate"])
def test_a_bad_pinning_is_refused_naming_the_key(key: str) -> None:
    with pytest.raises(ConfigError) as err:
        cfg_of("sensing=realistic_arm", f"sensing.{key}=0")
    msg = str(err.value)
    assert msg.startswith(f"sensing.{key}=0") and "\n" not in msg


def test_a_table_for_another_pinning_is_refused() -> None:
    cfg_of(*WINDOW, "sensing.arm_imu.model_error=prb12_direction_align3")
    with pytest.raises(ConfigError) as err:
        cfg_of(*WINDOW, "sensing.align_swing=0.02",
               "sensing.arm_imu.model_error=prb12_direction_align3")
    msg = str(err.value)
    assert "it was fitted with sensing.align_swing=0.005, the trial has 0.02" in msg
    assert "\n" not in msg
