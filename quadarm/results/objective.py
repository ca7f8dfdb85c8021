"""The objective of a gain search's job, from its runs and tidy metrics (one rule for the job's
return value and the search's record, both in :mod:`quadarm.tune`)."""

from __future__ import annotations

import math

import pandas as pd


def objective_of(runs: pd.DataFrame, metrics: pd.DataFrame, phase: str, metric: str,
                 penalty: float) -> float:
    """Mean over ``runs`` (``run_id``, ``status``) of ``metric`` in ``phase`` from ``metrics``
    (``run_id``, ``phase``, ``metric``, ``value``); a trial that is not ``ok``, or whose value
    is missing or NaN, scores ``penalty``. No runs: ``penalty``."""
    chosen = metrics[(metrics["phase"] == phase) & (metrics["metric"] == metric)]
    by_run = dict(zip(chosen["run_id"], chosen["value"], strict=True))
    scores = []
    for run_id, status in zip(runs["run_id"], runs["status"], strict=True):
        v = by_run.get(run_id, math.nan)
        scores.append(float(v) if status == "ok" and math.isfinite(v) else float(penalty))
    return float(sum(scores) / len(scores)) if scores else float(penalty)
