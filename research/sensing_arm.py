"""The arm-IMU study's table (docs/sensing.md): per mission phase, mean (std) over the seeds of
the arm-shape tip RMS error (% of L), the tip NEES (2 dof) and the vehicle EKF's NEES (9 dof),
and the seed-mean NEES against the chi-square 95 % band of that mean at every logged time.

    python -m quadarm -m +experiment=sensing_arm
    .venv/bin/python research/sensing_arm.py <sweep folder>

Reads Parquet only (the sweep's metrics and time series).
"""

from __future__ import annotations

import sys

import numpy as np
from scipy import stats

from quadarm import names
from quadarm.api import load_results

PHASES = ("hover", "climb", "figure_eight", "tendon_sweep", "return", "whole")
METRICS = ("shape_tip_rms_pct", "shape_tip_mean_pct", "shape_tip_max_pct", "shape_nees_mean",
           "shape_nees_in95_share", "est_nees_mean", "est_nees_in95_share")


def main(folders: list[str]) -> None:
    res = load_results(folders)
    runs = res.runs
    m = res.metrics.merge(runs[["run_id", "sensing.preset", "seed"]], on="run_id")
    for preset, group in m.groupby("sensing.preset"):
        n = group["seed"].nunique()
        print(f"\n## sensing={preset}, {n} seeds: mean (std) [min, max] over the seeds\n")
        print("| phase | " + " | ".join(METRICS) + " |")
        print("|---|" + "---:|" * len(METRICS))
        for phase in PHASES:
            cells = []
            for metric in METRICS:
                v = group[(group.phase == phase) & (group.metric == metric)]["value"]
                cells.append(f"{v.mean():.2f} ({v.std():.2f}) [{v.min():.2f}, {v.max():.2f}]"
                             if len(v) else "")
            print(f"| {phase} | " + " | ".join(cells) + " |")
        ids = runs[runs["sensing.preset"] == preset]["run_id"]
        frames = [res.timeseries(r) for r in ids if r in res.series]
        if not frames:
            continue
        k = min(len(f) for f in frames)
        for col, dof in ((names.SHAPE_NEES, 2), (names.EST_NEES, 9)):
            nees = np.stack([f[col].to_numpy()[1:k] for f in frames])
            mean = np.nanmean(nees, axis=0)
            lo = stats.chi2.ppf(0.025, dof * len(frames)) / len(frames)
            hi = stats.chi2.ppf(0.975, dof * len(frames)) / len(frames)
            inside = np.mean((mean >= lo) & (mean <= hi)) * 100
            print(f"\n{col}: the {len(frames)}-seed mean inside [{lo:.2f}, {hi:.2f}] at "
                  f"{inside:.0f} % of the logged times; its median {np.nanmedian(mean):.2f}, "
                  f"time mean {np.nanmean(mean):.2f} (dof {dof})")


if __name__ == "__main__":
    main(sys.argv[1:])
