"""Stage 1 from IMUs alone on a base that leans, without and with
``identify.imu_rest_reference`` (docs/identify.md, "IMUs alone", "A base that leans"): the
reference arm of ``tests/model/test_identify_imu_only.py`` (2x80 mm servo arm, 48 train
rows, 0.2 deg of noise from Generator(SeedSequence(seed))) on a base leaning by Ry(-0.04)
Rx(0.06) and on a level one. For each base and switch: stage 1's tendon-angle errors (deg,
against the true angles in the IMUs' frame) and, from moduli 2x too high, the fit of both
moduli, both turns and both tilt keys (the tests' ``fit_lean``): each key's value, its SE
with stage 1's angle uncertainty (``identify.stage1_stderr``) and the fit's own, and the
error over each. All of it twice: with the single pulls of the tests (each releases its
section's other servos by half) and with pulls that hold them at 0.

    .venv/bin/python research/identify_imu_lean.py [seed=11]
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "model")]

import numpy as np  # noqa: E402
import test_identify_imu_only as imu  # noqa: E402 - the tests' folders first


def main() -> None:
    opts = dict(a.split("=", 1) for a in sys.argv[1:])
    seed = int(opts.get("seed", "11"))
    for pulls in ("released", "held"):
        for base, tilt in (("lean", imu.LEAN), ("level", (0.0, 0.0))):
            rec = imu.leaning_recordings(tilt=tilt, seed=seed, held=pulls == "held")
            for switch in (False, True):
                one(rec, f"{pulls} pulls, {base} base", switch)


def one(rec: dict, what: str, switch: bool) -> None:
    """Fit ``rec`` with the switch ``switch`` and print stage 1's angle errors and each key
    against its truth, over the SE with stage 1's angles and over the fit's own."""
    start = time.perf_counter()
    out = imu.fit_lean(rec, rest_reference=switch, stage1_stderr=True)
    err = np.degrees(out["angle_errors"])
    print(f"{what}, imu_rest_reference={str(switch).lower()} "
          f"({time.perf_counter() - start:.0f} s, {out['nfev']} evaluations)")
    print(f"  stage 1 angle errors (deg) {np.round(err, 2).tolist()}, max abs "
          f"{np.abs(err).max():.2f}, spread within a section "
          f"{np.round(np.ptp(err, axis=1), 2).tolist()}")
    # The turns' truth: stage 1's mean angle error per section, undone.
    truth = dict(rec["want"]) | {f"sections.{j}.tendons.rotate_deg": -float(np.mean(e))
                                 for j, e in enumerate(err)}
    tilt = [out["values"][k] - truth[k] for k in ("gravity.tilt_x", "gravity.tilt_y")]
    print(f"  tilt error length {math.hypot(*tilt):.4f} rad")
    for k, v in truth.items():
        got, se, own = out["values"][k], out["stderr"][k], out["stderr_fit"][k]
        scale = 1e-9 if "modulus" in k else 1.0
        print(f"  {k}: {got * scale:.5f} +- {se * scale:.5f} (fit's own {own * scale:.5f}; "
              f"true {v * scale:.5f}; {abs(got - v) / se if se > 0 else math.inf:.2f} SE, "
              f"{abs(got - v) / own if own > 0 else math.inf:.2f} own SE)")

if __name__ == "__main__":
    main()
