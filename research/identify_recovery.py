"""The recovery suite's table (docs/identify.md, "Recovery suite"): every arm of
``tests/model/test_identify_recovery.py`` generated, fitted with its one setting and measured;
with ``seeds=N`` also the calibration of the standard errors on the first ``arms`` servo arms
(``arms=K``): the same arm under N noise draws (Generator seeds 0..N-1), the RMS of
error / standard error per kind of key (1 when the standard errors are right).

    .venv/bin/python research/identify_recovery.py [seeds=N] [arms=K]

Prints a Markdown table: arm, kind, pairs, every key within 2 SE, the worst |error| / SE (and
its key), the largest relative standard error of a modulus, val / floor (val's aligned RMSE
over the true parameters' on the same noisy rows, mm), the fit's time (stage 1 and 2, s).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "model")]

import test_identify_recovery as suite  # noqa: E402 - the tests' folders first


def table() -> None:
    print("| arm | kind | pairs | within 2 SE | worst abs(error)/SE | largest SE/E | "
          "val / floor (mm) | fit (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for case in suite.CASES:
        kind = "servo" if case.actuation == "displacement" else "tension"
        head = (f"| {case.sections}x{case.length * 1e3:g} mm | {kind} | "
                f"{'yes' if case.pairs else 'no'} |")
        try:
            r = suite.recover(case)
        except ValueError as err:
            print(f"{head} refused: {err} | | | | |")
            continue
        key, worst = max(r["ratio"].items(), key=lambda kv: kv[1])
        print(f"{head} {'yes' if worst <= 2 else 'no'} | {worst:.2f} ({key}) | "
              f"{max(r['rel_se'].values()):.3f} | {r['val_mm']:.3f} / {r['floor_mm']:.3f} = "
              f"{r['val_mm'] / r['floor_mm']:.2f} | {r['seconds']:.1f} |", flush=True)


def calibration(seeds: int, arms: int) -> None:
    for case in suite.SERVO[:arms]:
        z: dict[str, list[float]] = {"modulus": [], "turn": []}
        over = 0
        for seed in range(seeds):
            r = suite.recover(case, seed)
            for k, v in r["ratio"].items():
                z["modulus" if "modulus" in k else "turn"].append(v)
                over += v > 2
        rms = {k: math.sqrt(sum(x * x for x in v) / len(v)) for k, v in z.items()}
        count = sum(len(v) for v in z.values())
        print(f"{case.name}: {seeds} seeds, RMS error/SE moduli {rms['modulus']:.2f}, turns "
              f"{rms['turn']:.2f}; beyond 2 SE {over} of {count}", flush=True)


if __name__ == "__main__":
    opts = dict(a.split("=", 1) for a in sys.argv[1:])
    if "seeds" in opts:
        calibration(int(opts["seeds"]), int(opts.get("arms", 1)))
    else:
        table()
