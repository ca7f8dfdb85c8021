"""The documented SB3 example (examples/sb3_hover.py, docs/interfaces.md) shows learning: after
40 960 steps of PPO the deterministic policy's mean return over the same 16 evaluation episodes
is better than the untrained policy's (measured: 16-38 % better over seeds 0-2; the threshold
here, 10 %, is well inside the untrained episodes' spread of about 35 % of their mean) and the
evaluation's spread is not 0 (the airframe mass is drawn per episode). Slow: minutes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_ppo_beats_the_untrained_policy_on_short_hovers() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "sb3_hover.py"), "--seed", "1"],
                         capture_output=True, text=True, check=True, timeout=3600,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    found = re.search(r"return untrained (\S+) \+- (\S+), after \d+ steps (\S+) \+- (\S+) ", out)
    assert found, out
    before, spread, after, after_spread = (float(x.rstrip(",")) for x in found.groups())
    assert spread > 0 and after_spread > 0
    assert after > before * 0.9  # returns are negative: 10 % closer to 0 at least
