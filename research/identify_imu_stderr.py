"""The standard errors of identify from IMUs alone (docs/identify.md, "IMUs alone" and
"Standard errors and stage 1"): each arm of ``tests/model/test_identify_imu_only.py`` fitted
under ``seeds`` noise draws (Generator(SeedSequence(seed)), seeds ``first``..``last``) with
stage 1's angle uncertainty propagated (``fit.stage2(..., stage1=...)``, as
``identify.stage1_stderr=true`` runs it). One fit per seed gives both standard errors (the
fitted values do not depend on the switch): the fit's own, s^2 (J^T J)^-1, and the one with
stage 1's tendon angles. Prints, per arm, the RMS over the fitted keys and seeds of
error / SE (1 when the SE are right) and the count beyond 2 SE with each, by kind of key,
and the largest val / floor; with ``true=1`` stage 1's angles are replaced by the true ones
(the IMUs' frame: the true arm's less their 0.3 rad turn) and the fit's own SE is scored.

    .venv/bin/python research/identify_imu_stderr.py [arms=0,1,2,3] [first=1] [last=6]
        [true=0] [rows=1]
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
from test_identify_recovery import SETTING, design  # noqa: E402

from quadarm.identify import fit  # noqa: E402


def one(case: imu.Case, seed: int, true_angles: bool, detail: bool = False) -> dict:
    """One seed's fit of ``case``: each key's error over the fit's SE and over the SE with
    stage 1, val / floor; with ``detail`` also the errors and both SE themselves."""
    rec = imu.recordings(case, (SETTING.train_rows, SETTING.val_rows), seed)
    true_arm, nominal = design(case), design(case, modulus_factor=2.0)
    problem, s1 = imu._stage1(rec, nominal)
    if true_angles:
        problem = imu.with_true_angles(problem, true_arm)
    problem.keys = imu.recovery_keys(nominal)
    train_pull, train_angles = rec["train"]
    start = time.perf_counter()
    out = fit.stage2(problem, train_pull, np.empty((len(train_pull), 0)), stride=SETTING.stride,
                     starts=SETTING.starts, workers=1, max_nfev=SETTING.max_nfev, seed=0,
                     angles=train_angles,
                     stage1=None if true_angles else (s1["angle_covariance"], "angles"))
    seconds = time.perf_counter() - start
    err = imu._angle_errors(problem, true_arm).mean(axis=1)
    want = {f"sections.{j}.youngs_modulus": sec.youngs_modulus
            for j, sec in enumerate(true_arm.sections)}
    want |= {f"sections.{j}.tendons.rotate_deg": -math.degrees(err[j])
             for j in range(case.sections)}
    val = fit.orientation_scores(problem.angles(out["values"], rec["val"][0]), rec["val"][1])
    floor = float(np.sqrt(np.mean(rec["noise"]["val"] ** 2)))
    fit_se = out.get("stderr_fit", out["stderr"])
    extra = ({"err": {k: out["values"][k] - v for k, v in want.items()},
              "se": out["stderr"], "se_fit": fit_se} if detail else {})
    return {**extra, "fit": {k: (out["values"][k] - v) / fit_se[k] for k, v in want.items()},
            "stage1": {k: (out["values"][k] - v) / out["stderr"][k] for k, v in want.items()},
            "val_floor": val["orientation_rmse_rad"] / floor, "seconds": seconds}


def summary(z: list[float]) -> str:
    a = np.asarray(z)
    return f"{math.sqrt(float(np.mean(a * a))):.2f} ({int(np.sum(np.abs(a) > 2))} of {a.size})"


def main() -> None:
    opts = dict(a.split("=", 1) for a in sys.argv[1:])
    arms = [int(a) for a in opts.get("arms", "0,1,2,3").split(",")]
    first, last = int(opts.get("first", 1)), int(opts.get("last", 6))
    true_angles, rows = opts.get("true", "0") == "1", opts.get("rows", "0") == "1"
    print("| arm | seeds | RMS error/SE, fit's SE: all (beyond 2) | moduli | turns | with stage 1: "
          "all (beyond 2) | moduli | turns | val/floor max | stage 2 (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for a in arms:
        case = imu.CASES[a]
        z: dict[str, dict[str, list[float]]] = {w: {"all": [], "mod": [], "rot": []}
                                                for w in ("fit", "stage1")}
        worst, secs = 0.0, 0.0
        for seed in range(first, last + 1):
            r = one(case, seed, true_angles)
            worst, secs = max(worst, r["val_floor"]), secs + r["seconds"]
            for w in z:
                for k, v in r[w].items():
                    z[w]["all"].append(v)
                    z[w]["mod" if "modulus" in k else "rot"].append(v)
            if rows:
                print(f"  seed {seed}: " + ", ".join(
                    f"{k.split('.')[1]}.{k.split('.')[-1][:3]} {r['fit'][k]:+.2f}/"
                    f"{r['stage1'][k]:+.2f}" for k in r["fit"])
                    + f", val/floor {r['val_floor']:.3f}", flush=True)
        n = last - first + 1
        print(f"| {case.name} | {first}-{last} | " + " | ".join(
            summary(z[w][k]) for w in ("fit", "stage1") for k in ("all", "mod", "rot"))
            + f" | {worst:.3f} | {secs / n:.1f} |", flush=True)


if __name__ == "__main__":
    main()
