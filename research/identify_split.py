"""The identification's split of train (docs/identify.md, "How the terms were chosen" and
"Two structural terms that did not earn it"): refit the shipped calibration
(``arm=ftdcr_v4_calibrated``) with the parameters of ``+experiment=identify_ftdcr_v4`` plus
any extra keys, on every eighth train row without the ``pair23_*`` patterns, and score the
held-out ``pair23_*`` rows (aligned tip RMSE, mm). Val is never read.

    .venv/bin/python research/identify_split.py TAG ['{"key": [lo, hi, start], ...}'] [NFEV] [all]
        [gravity=tracking_frame] [arm.KEY=VALUE ...]
        [jitter=SEED:SIGMA]

``all``: fit every eighth row of every pattern and score all train rows instead. Prints one
JSON line (rows, the start's and the fit's RMSE on the fitted / scored rows, the extra keys'
values) and writes the whole result to ``TAG.json`` in the current folder.
``arm.KEY=VALUE``: a fixed override of the calibrated arm (``arm.torsion=true``). NFEV 0 scores
the start only. ``jitter=SEED:SIGMA``: start from the calibration moved by a seeded N(0, SIGMA)
in the normalised variables (each bound range is 1). ``gravity=tracking_frame``: gravity along
the tracking frame's -z through the registration (``identify.gravity``), stage 1 registered the
same way.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from quadarm.identify import data, fit
from quadarm.identify.__main__ import compose

# The shipped calibration's tracked point (m beyond the tip ball): its file's comment.
MARKER = 0.0033933


def split_problem(fixed: list[str], extra: dict[str, list[float]],
                  gravity: str = "arm_axis") -> tuple[fit.Problem, Any]:
    """The shipped calibration with the fixed arm overrides ``fixed`` and the ``extra`` keys
    at their starts (``{"key": [lo, hi, start]}``), registered by stage 1 from the pulls (its
    tracked point :data:`MARKER`, the shipped angles), fitting the experiment's keys and
    ``extra``'s; and the job's identify config."""
    frame, arm, sim, cfg, _ = compose(["+experiment=identify_ftdcr_v4",
                                       "arm=ftdcr_v4_calibrated", *fixed])
    arm = fit.apply(arm, {k.replace("sections.#.", "sections.*.", 1): v[2]
                          for k, v in extra.items()})
    pulls = data.read(cfg, "pulls", arm.length)
    problem, _, _ = fit.stage1(frame, sim, arm, cfg.pointing, MARKER, pulls.pull, pulls.tip,
                               pulls.label, measure_angles=False, gravity=gravity)
    params = dict(cfg.parameters)
    params.update({k: v[:2] for k, v in extra.items()})
    problem.keys = fit.expand(arm, params)
    return problem, cfg


def main(argv: list[str]) -> None:
    gravity = "arm_axis"
    # arm.<key>=<value>: a fixed override of the calibrated arm (e.g. arm.torsion=true).
    fixed = [a for a in argv if a.startswith("arm.")]
    argv = [a for a in argv if a not in fixed]
    # jitter=SEED:SIGMA: start from the calibration moved by N(0, SIGMA) in the normalised
    # variables (each bound range is 1), seeded, clipped to the bounds.
    jitter = [a for a in argv if a.startswith("jitter=")]
    argv = [a for a in argv if a not in jitter]
    for a in [a for a in argv if a.startswith("gravity=")]:
        gravity = a.partition("=")[2]
        argv = [b for b in argv if b != a]
    tag = argv[0]
    extra = json.loads(argv[1]) if len(argv) > 1 else {}
    nfev = int(argv[2]) if len(argv) > 2 else 6
    problem, cfg = split_problem(fixed, extra, gravity)
    train = data.read(cfg, "train", problem.arm.length)
    held = np.array(["pair23_" in str(label) for label in train.label])
    fit_rows, score_rows = np.flatnonzero(~held)[::8], np.flatnonzero(held)
    if len(argv) > 3 and argv[3] == "all":
        fit_rows, score_rows = np.arange(0, len(train.pull), 8), np.arange(len(train.pull))

    def score(x: np.ndarray, rows: np.ndarray) -> float:
        sim_ = problem.simulate(problem.values(x), train.pull, rows)
        return fit.aligned_rmse(sim_, train.tip[rows]) * 1e3

    x0 = problem.normalised(problem.nominal())
    if jitter:
        seed, _, sigma = jitter[0].partition("=")[2].partition(":")
        rng = np.random.default_rng(int(seed))
        x0 = np.clip(x0 + rng.normal(0.0, float(sigma), x0.shape), 0.0, 1.0)
    t0 = time.time()
    start = (score(x0, fit_rows), score(x0, score_rows))
    if nfev == 0:  # score the start only
        print(json.dumps({"tag": tag, "rows": [len(fit_rows), len(score_rows)], "start": start,
                          "wall_s": time.time() - t0}))
        return
    res = least_squares(fit._residuals, x0, bounds=(0.0, 1.0),
                        args=(problem, train.pull, fit_rows, train.tip[fit_rows]),
                        diff_step=1e-3, max_nfev=nfev, x_scale="jac")
    values = problem.values(res.x)
    out = {"tag": tag, "rows": [len(fit_rows), len(score_rows)], "start": start,
           "fit": (score(res.x, fit_rows), score(res.x, score_rows)), "nfev": int(res.nfev),
           "wall_s": time.time() - t0,
           "new": {k: values[k] for k in values if k in extra or any(
               e.startswith("sections.#.") and k.startswith("sections.")
               and k.split(".", 2)[2] == e.split(".", 2)[2] for e in extra)}}
    print(json.dumps(out))
    with open(f"{tag}.json", "w") as fh:
        json.dump({**out, "values": values}, fh, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
