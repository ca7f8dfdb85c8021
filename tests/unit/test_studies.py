"""The registry of studies (``conf/experiment/``, ``quadarm/config/studies.py``) against every
place that runs or reads a study: a study registered in some and not the others fails here.

For each ``conf/experiment/<name>.yaml``: its ``# study:`` line parses; its ``make`` target
exists and runs it (the target's recipe, or the ``experiments/*.sh`` script it calls, names
``+experiment=<name>``, or globs ``<prefix>*.yaml`` of the folder); its tables are built by the
analysis; a study run by hand names its script under ``research/``. The other way: every analysis
table is fed by some study, every script of ``experiments/`` is run by some target, and
``python -m quadarm.reproduce`` plans exactly the studies whose set says so.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from quadarm.analysis.studies import NAMES
from quadarm.config.studies import SETS, Study, studies

ROOT = Path(__file__).resolve().parents[2]
STUDIES = studies()
EXTRA_TABLES = ("tasks",)  # the task leaderboards: quadarm.analysis.tasks, not the registry


def targets() -> dict[str, str]:
    """Every Makefile target -> its recipe, with the text of the experiments/*.sh it runs."""
    text = (ROOT / "Makefile").read_text()
    out: dict[str, str] = {}
    for m in re.finditer(r"^([A-Za-z0-9_-]+):[^\n]*\n((?:\t[^\n]*\n?)*)", text, re.M):
        recipe = m.group(2)
        for script in re.findall(r"experiments/(\w+\.sh)", recipe):
            recipe += (ROOT / "experiments" / script).read_text()
        out[m.group(1)] = recipe
    return out


TARGETS = targets()


def runs(recipe: str, name: str) -> bool:
    """Whether ``recipe`` runs study ``name``: by name, or by a glob of the folder."""
    if re.search(rf"experiment=\$?{{?{re.escape(name)}\b", recipe) or \
            re.search(rf"for study in [^;\n]*\b{re.escape(name)}\b", recipe):
        return True
    return any(name.startswith(prefix) for prefix in re.findall(r"ls (\w+)\*\.yaml", recipe))


@pytest.mark.parametrize("study", list(STUDIES.values()), ids=list(STUDIES))
def test_each_study_is_run_and_read(study: Study) -> None:
    if study.alias is not None:
        assert study.alias in STUDIES, f"{study.name}: alias of no study {study.alias}"
        assert f"- {study.alias}" in study.path.read_text(), f"{study.name}: must include it"
    elif study.make is None:
        assert study.research and (ROOT / study.research).is_file(), \
            f"{study.name}: no make target, so '# study:' must name its research/ script"
        assert study.name in (ROOT / study.research).read_text()
    else:
        assert study.make in TARGETS, f"{study.name}: no Makefile target {study.make}"
        assert runs(TARGETS[study.make], study.name), \
            f"{study.name}: make {study.make} does not run +experiment={study.name}"
    for table in study.tables:
        assert table in (*NAMES, *EXTRA_TABLES), f"{study.name}: no analysis table {table}"
    if study.reproduce is not None:
        assert study.reproduce in SETS and study.make is not None


def test_every_table_is_fed_and_every_script_run() -> None:
    fed = {t for s in STUDIES.values() for t in s.tables}
    assert not set(NAMES) - fed, f"tables no study feeds: {sorted(set(NAMES) - fed)}"
    called = {s for recipe in TARGETS.values() for s in re.findall(r"experiments/(\w+)\.sh",
                                                                    recipe)}
    scripts = {p.stem for p in (ROOT / "experiments").glob("*.sh")} - {"common"}
    assert scripts <= called, f"scripts no target runs: {sorted(scripts - called)}"


def test_reproduce_plans_exactly_the_registered_sets() -> None:
    from quadarm import reproduce

    planned = {name for group in (reproduce.PAPER, reproduce.BEYOND, reproduce.ARM,
                                  reproduce.SENSING, reproduce.SENSING_GAINS)
               for name, _ in group}
    assert planned == {s.name for s in STUDIES.values() if s.reproduce is not None}
    assert set(reproduce.EXPECTED) == {t for s in STUDIES.values() if s.reproduce == "paper"
                                       for t in s.tables}


def test_a_half_registered_study_fails(tmp_path: Path) -> None:
    """A new experiment file without its '# study:' line is refused by the registry itself,
    with the file named; one naming a target that does not exist fails the test above."""
    from quadarm.config.studies import header

    (tmp_path / "experiment").mkdir()
    bare = tmp_path / "experiment" / "new.yaml"
    bare.write_text("# @package _global_\nscenario:\n  duration: 1.0\n")
    with pytest.raises(ValueError, match="new.yaml: no '# study:"):
        studies(str(tmp_path))
    bare.write_text("# @package _global_\n# study: {make: nowhere}\n")
    assert header(bare) == {"make": "nowhere"} and "nowhere" not in TARGETS
