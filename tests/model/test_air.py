"""The air in the model: steady wind in MuJoCo's fluid model (``aero.wind``)."""

from __future__ import annotations

import mujoco
import numpy as np

from quadarm.config import AeroConfig, AirframeConfig, ArmConfig, SimConfig
from quadarm.model import build


def test_steady_wind_is_mujocos_opt_wind() -> None:
    still = build(AirframeConfig(), ArmConfig(), SimConfig())
    calm = build(AirframeConfig(), ArmConfig(), SimConfig(), aero=AeroConfig())
    windy = build(AirframeConfig(), ArmConfig(), SimConfig(), aero=AeroConfig(wind=[3, -1, 0]))
    assert still.xml() == calm.xml()  # still air: the paper's model, unchanged
    np.testing.assert_array_equal(windy.model.opt.wind, [3.0, -1.0, 0.0])
    # the fluid model pushes a body at rest downwind
    d = mujoco.MjData(windy.model)
    mujoco.mj_resetDataKeyframe(windy.model, d, 0)
    mujoco.mj_forward(windy.model, d)
    f = d.qfrc_fluid[:3]
    assert f[0] > 0 and f[1] < 0
