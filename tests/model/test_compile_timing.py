"""Honest first-run timings (issue 16): numba's one-time compile is reported as ``compile_s``,
not counted in the first trial's ``wall_s``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from quadarm.runner import jit

# Three identical trials in a fresh process: the first compiles every kernel (an empty cache
# folder), the others find them compiled.
SCRIPT = """
import json
from quadarm.api import compose
from quadarm.runner.episode import run_episode
out = []
for _ in range(3):
    ep = run_episode(compose(["scenario=hover", "scenario.duration=4", "aero=gusty"]))
    assert ep.status == "ok", ep.message
    out.append((ep.wall_s, ep.compile_s))
print(json.dumps(out))
"""


@pytest.mark.slow
@pytest.mark.timing
@pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")
def test_first_trial_wall_time_excludes_the_compile(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "QUADARM_NUMBA": "1"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, check=True, timeout=600)
    (w0, c0), (w1, c1), (w2, c2) = json.loads(proc.stdout.strip().splitlines()[-1])
    assert any((tmp_path / "numba").rglob("*.nbi")), "the kernels were not cached there"
    # The first trial compiled (seconds), the reruns did not (milliseconds at most).
    assert c0 > 10 * max(c1, c2) and c0 > 0.5
    # Its wall time is that of a rerun (1.3x; the faster rerun is the reference).
    assert w0 <= 1.3 * min(w1, w2)
