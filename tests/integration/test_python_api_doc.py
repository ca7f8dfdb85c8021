"""``docs/python-api.md`` is a notebook that runs: its code blocks, executed in order in one
namespace (in a scratch folder), do what the page says, and the objects they leave behind obey
the front door's contracts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"


def blocks(text: str) -> list[str]:
    """The ```python blocks of a Markdown page, in order."""
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


@pytest.fixture(scope="module")
def notebook(tmp_path_factory: pytest.TempPathFactory) -> dict:
    import os

    code = blocks(DOC.read_text())
    assert len(code) >= 6, "the page lost its example"
    here = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("notebook"))
    namespace: dict = {"__name__": "__notebook__"}
    try:
        for i, block in enumerate(code):
            exec(compile(block, f"{DOC.name} block {i + 1}", "exec"), namespace)  # noqa: S102
        namespace["__cwd__"] = Path.cwd()
    finally:
        os.chdir(here)
    return namespace


def test_the_page_runs_and_runs_what_it_says(notebook: dict) -> None:
    import quadarm

    cwd = notebook["__cwd__"]
    assert notebook["cfg"].scenario.duration == 1.0
    assert notebook["result"].failed == 0 and notebook["result"].out_dir == Path(
        "outputs/api/hover")
    # The sweep: one folder per point, one trial each, collected into the sweep folder.
    swept = notebook["swept"]
    assert sorted(p.name for p in (cwd / "outputs/api/gains").iterdir()
                  if p.name.startswith("gains=")) == ["gains=nominal", "gains=soft"]
    assert len(swept.runs) == 2 and swept.runs["gains.kr"].nunique() == 2
    assert (cwd / "outputs/api/gains/runs.parquet").exists()
    # load_results found every trial the page had run by then, each once: the first hover is
    # the sweep's nominal point (same config, same run id), so two trials.
    res = notebook["res"]
    assert len(res.runs) == 2 and set(res.runs["scenario"]) == {"hover"}
    assert isinstance(res, quadarm.Results) and isinstance(swept, quadarm.Results)
    ts = notebook["ts"]
    assert set(ts["run_id"]) == set(res.runs["run_id"])
    assert ts.groupby("run_id")["t"].max().tolist() == pytest.approx([1.0] * 2)
    assert [t.name for t in notebook["built"]] == ["disturbance"]


def test_the_same_trial_twice_is_one_trial_from_python_and_from_disk(notebook: dict) -> None:
    """The nominal point of the sweep is the page's first hover (same config, same seed):
    the same run id, and the same numbers whether read from the returned Results or from
    disk."""
    import quadarm

    first = notebook["result"]
    again = quadarm.load_results([notebook["__cwd__"] / "outputs/api/hover"])
    assert first.runs["run_id"].tolist() == again.runs["run_id"].tolist()
    merged = first.metrics.merge(again.metrics, on=["run_id", "phase", "metric"])
    assert len(merged) == len(first.metrics)
    assert (merged["value_x"].to_numpy() == merged["value_y"].to_numpy()).all()
    nominal = notebook["swept"].runs
    nominal_id = nominal[nominal["source"].str.endswith("gains=nominal")]["run_id"].item()
    assert nominal_id == first.runs["run_id"].item()
