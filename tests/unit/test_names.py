"""``quadarm.names``: one word per thing in the result tables, units in the metric names, and the
old words still read."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from quadarm import names
from quadarm.analysis import published
from quadarm.results import io


@pytest.mark.parametrize(("t", "name"), [(24.0, "after_24s"), (20, "after_20s"),
                                         (7.5, "after_7.5s"), (0.25, "after_0.25s")])
def test_after_phase_is_named_from_its_time_and_read_back(t: float, name: str) -> None:
    assert names.after_phase(t) == name
    assert names.after_time_of(name) == pytest.approx(t)
    assert names.after_time_of("whole") is None


def test_every_metric_name_ends_with_its_unit() -> None:
    suffix = {"cm": "_cm", "deg": "_deg", "N": "_n", "s": "_s", "mm": "_mm", "cm/s": "_cm_s",
              "% L": "_pct"}
    for metric, (_, unit) in names.METRICS.items():
        if unit == "1":  # a count or a 0/1 flag: no unit suffix, and none that misleads
            assert not metric.endswith(tuple(suffix.values())), metric
            continue
        assert metric.endswith(suffix[unit]), metric
    assert names.metric_unit(names.drift_metric(5.0)) == "cm"
    assert names.drift_time(names.drift_metric(15.0)) == 15.0
    assert names.metric_unit("tension_b_n") == "N"
    with pytest.raises(KeyError, match="quadarm/names.py"):
        names.metric_unit("speed")


def test_the_papers_labels_come_from_the_names_module() -> None:
    for metric in published.TABLE2_METRICS:
        assert published.METRIC_LABELS[metric] == names.METRICS[metric]
    for metric, (_, unit) in published.DISTURBANCE_LABELS.items():
        assert unit == names.metric_unit(metric)
    assert published.PHASES[-1] == names.WHOLE
    assert names.AFTER_PHASE == names.after_phase(names.PAPER_AFTER_TIME) == "after_24s"


def test_old_whole_episode_phase_is_read_under_its_new_name(tmp_path: Path) -> None:
    """Results written before the names module called the whole episode ``all`` outside the
    mission: they are read as ``whole``, values untouched."""
    old = pd.DataFrame({"run_id": ["a", "a", "b"], "phase": ["all", "settled", "whole"],
                        "metric": ["rms_cm", "tilt_mean_deg", "rms_cm"],
                        "value": [0.1, 0.2, 0.3]})
    io.write_table(tmp_path / io.METRICS, old, {})
    back = io.read_metrics(tmp_path)
    assert back["phase"].tolist() == ["whole", "settled", "whole"]
    assert back["value"].tolist() == old["value"].tolist()


def _on_value(off):
    """A value of a switch other than its off value, as ``runs.parquet`` stores it."""
    if isinstance(off, bool):
        return True
    if isinstance(off, float):
        return 0.5
    if isinstance(off, list):
        return json.dumps([1.0] + [0.0] * (len(off) - 1))
    return f"not-{off}"


def test_the_papers_trials_are_those_with_every_switch_off() -> None:
    """One rule for "is this trial the paper's?", derived from the registry of per-step terms:
    a row per switch of every term, on; results collected from older folders (cells missing)
    count as the paper's; any switch beyond the paper excludes a trial; ``paper_physics``
    admits the estimator and controller terms, ``paper_controller`` the force terms."""
    from quadarm import terms
    from quadarm.analysis.select import only, paper_controller, paper_physics, paper_trials

    switches = [(t, k, off) for t in terms.TERMS for k, off in t.switches]
    cells: dict[str, list] = {k: [] for _, k, _ in switches}
    for _, key, _ in switches:  # row r: switch r on, every other one off
        for _, k, off in switches:
            cells[k].append(_on_value(off) if k == key else (json.dumps(off)
                                                              if isinstance(off, list) else off))
    for column in cells.values():  # the last row: a result older than every key
        column.append(None)
    runs = pd.DataFrame(cells)
    n = len(switches)
    assert paper_trials(runs).tolist() == [False] * n + [True]
    assert paper_physics(runs).tolist() == [t.where != terms.FORCE for t, _, _ in switches] + [
        True]
    assert paper_controller(runs).tolist() == [t.where == terms.FORCE for t, _, _ in switches] \
        + [True]
    for flag in terms.flags():
        assert only(runs, **{flag: True}).tolist() == [t.select == flag
                                                       for t, _, _ in switches] + [True]
    assert paper_trials(pd.DataFrame({"x": [1.0]})).tolist() == [True]  # no switch column
