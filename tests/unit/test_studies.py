"""The registry of studies (``conf/experiment/``, ``quadarm/config/studies.py``) against every
place that runs or reads a study: a study registered in some and not the others fails here.

For each ``conf/experiment/<name>.yaml``: its ``# study:`` line parses; its ``make`` target
exists (the Makefile's rule for every registered target) and runs it (the plan of
``python -m quadarm.studies <target>`` names ``+experiment=<name>``, or its own command reads
the registry); its tables are built by the analysis; a study run by hand names its script under
``research/``. The other way: every analysis table is fed by some study, every script of
``experiments/`` is run by some target, and ``python -m quadarm.reproduce`` plans exactly the
studies whose set says so. The targets and the folders they write are those of the hand-written
scripts they replaced (a contract: ``make <target>`` writes where it always did).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from quadarm import studies as runner
from quadarm import suite
from quadarm.analysis.studies import NAMES
from quadarm.config.studies import SETS, Study, studies

ROOT = Path(__file__).resolve().parents[2]
STUDIES = studies()
EXTRA_TABLES = ("tasks",)  # the task leaderboards: quadarm.analysis.tasks, not the registry
ENV = runner.Env(python="PY", out="OUT", jobs="J", resume="R")


def targets() -> dict[str, str]:
    """Every hand-written Makefile target -> its recipe, with the text of the
    experiments/*.sh it runs."""
    text = (ROOT / "Makefile").read_text()
    out: dict[str, str] = {}
    for m in re.finditer(r"^([A-Za-z0-9_-]+):[^\n]*\n((?:\t[^\n]*\n?)*)", text, re.M):
        recipe = m.group(2)
        for script in re.findall(r"experiments/(\w+\.sh)", recipe):
            recipe += (ROOT / "experiments" / script).read_text()
        out[m.group(1)] = recipe
    return out


TARGETS = targets()


def plan_text(target: str) -> str:
    """What ``make target`` runs: the runner's commands, with the scripts they call."""
    commands = runner.plan(target, ENV)
    if ["PY", "-m", "quadarm.suite"] in commands:  # the task suite's driver: its own commands
        flown, report = suite.commands(suite.tasks({}), ENV, [], None)
        commands += [*flown, report]
    text = "\n".join(" ".join(c) for c in commands)
    for script in re.findall(r"experiments/(\w+\.sh)", text):
        text += (ROOT / "experiments" / script).read_text()
    return text


def runs(recipe: str, study: Study) -> bool:
    """Whether ``recipe`` runs ``study``: by name, or through the registry's list of its
    target (``quadarm.studies --list``)."""
    name = study.name
    return bool(re.search(rf"experiment={re.escape(name)}\b", recipe)
                or "quadarm.studies --list " + str(study.make) in recipe)


def _fail(line: str) -> None:
    pytest.fail(line, pytrace=False)


@pytest.mark.parametrize("study", list(STUDIES.values()), ids=list(STUDIES))
def test_each_study_is_run_and_read(study: Study) -> None:
    where = f"conf/experiment/{study.name}.yaml"
    if study.alias is not None:
        if study.alias not in STUDIES:
            _fail(f"{where}: alias of no study {study.alias}")
        if f"- {study.alias}" not in study.path.read_text():
            _fail(f"{where}: must include its alias in its defaults list: '- {study.alias}'")
    elif study.make is None:
        if not (study.research and (ROOT / study.research).is_file()):
            _fail(f"{where}: no make target, so '# study:' must name its research/ script")
        assert study.name in (ROOT / study.research).read_text()
    else:
        assert study.make in runner.targets(STUDIES)
        if not runs(plan_text(study.make), study):
            _fail(f"{where}: make {study.make} does not run +experiment={study.name}")
    for table in study.tables:
        if table not in (*NAMES, *EXTRA_TABLES):
            _fail(f"{where}: no analysis table {table!r}: add its builder to quadarm/analysis "
                  "(tables.PAPER, or analysis/beyond/__init__.py::BUILDERS)")
    if study.reproduce is not None:
        assert study.reproduce in SETS and study.make is not None


def test_every_table_is_fed_and_every_script_run() -> None:
    fed = {t for s in STUDIES.values() for t in s.tables}
    for table in sorted(set(NAMES) - fed):
        _fail(f"table {table!r}: no study feeds it: name it in 'tables:' of the '# study:' line "
              "of its conf/experiment/<name>.yaml")
    called = {s for recipe in [*TARGETS.values(), *map(plan_text, runner.targets(STUDIES))]
              for s in re.findall(r"experiments/(\w+)\.sh", recipe)}
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
    assert header(bare) == {"make": "nowhere"} and "nowhere" not in runner.targets(STUDIES)
    bare.write_text("# @package _global_\n# study: {tables: [x], make: nowhere}\n")
    with pytest.raises(ValueError, match="must start with make"):
        header(bare)


# The folders each target wrote when it was a hand-written script (experiments/<target>.sh):
# its run folders, then its analyses' output folders, under $OUT. A frozen record of those
# scripts (a contract: these targets keep writing there), never extended: a target added since
# is checked against the registry's own folders only (test_each_target_writes_its_studies_folders,
# which checks every target, these too).
FOLDERS = {
    "table2": ["table2", "table2"],
    "table3": ["table3", "table3"],
    "workspace": ["workspace_beta", "workspace_mu", "workspace"],
    "disturbance": ["disturbance", "disturbance"],
    "held-bend": ["held_bend", "held_bend"],
    "drift": ["held_bend", "held_bend"],
    "monte-carlo": ["monte_carlo", "monte_carlo"],
    "motor-lag": ["motor_lag", "motor_lag"],
    "compliance": ["compliance", "compliance_mount", "compliance", "compliance_mount"],
    "downwash": ["downwash_workspace", "downwash_mission", "downwash"],
    "wind": ["wind_hover", "wind_gusts", "wind_mission", "wind"],
    "feedforward": ["feedforward", "feedforward"],
    "payload": ["payload", "payload"],
    "active-damping": ["active_damping", "active_damping/recommended", "active_damping"],
    "sensing": ["sensing/sensing", "sensing/sensing_feedforward", "sensing/sensing_gains",
                "sensing/sensing", "sensing/sensing_gains"],
    "arm-convergence": ["arm_convergence_statics", "arm_convergence_zero_g",
                        "arm_convergence_mission", "arm_convergence"],
    "tune": ["tune_gains"],
    "tipspace": ["tipspace/tipspace_pick_place", "tipspace/tipspace_reach",
                 "tipspace/tipspace_trace", "tipspace"],
    "tune-pareto": ["tune_gains_pareto"],
}


def _folders(cmd: list[str]) -> str:
    if cmd[2] == "quadarm.analysis":
        return cmd[cmd.index("-o") + 1] if "-o" in cmd else cmd[3]
    return next(a.split("=", 1)[1] for a in cmd if a.startswith(("hydra.run.dir=",
                                                                    "hydra.sweep.dir=")))


@pytest.mark.parametrize("target", list(FOLDERS))
def test_each_target_writes_where_its_script_did(target: str) -> None:
    got = [_folders(c) for c in runner.plan(target, ENV)]
    assert got == [f"OUT/{f}" for f in FOLDERS[target]]


def test_the_commands_of_a_target() -> None:
    """The runner's commands for a target of each kind (one job with an extra run, a multirun
    with overrides of its own, the task suite's script, an alias): the scripts' commands."""
    assert runner.plan("arm-convergence", ENV) == [
        ["PY", "-m", "quadarm", "+experiment=arm_convergence",
         "hydra.run.dir=OUT/arm_convergence_statics", "runner.n_jobs=J", "runner.resume=R"],
        ["PY", "-m", "quadarm", "+experiment=arm_convergence",
         "hydra.run.dir=OUT/arm_convergence_zero_g", "runner.n_jobs=J", "runner.resume=R",
         "sim.gravity=[0,0,0]", "arm.tension_max=1"],
        ["PY", "-m", "quadarm", "+experiment=arm_convergence_mission",
         "hydra.run.dir=OUT/arm_convergence_mission", "runner.n_jobs=J", "runner.resume=R"],
        ["PY", "-m", "quadarm.analysis", "OUT/arm_convergence_statics",
         "OUT/arm_convergence_zero_g", "OUT/arm_convergence_mission", "-o",
         "OUT/arm_convergence", "--tables", "arm_convergence,arm_mission"]]
    assert runner.plan("tune", ENV) == [
        ["PY", "-m", "quadarm", "-m", "+experiment=tune_gains", "hydra.sweep.dir=OUT/tune_gains",
         "hydra.launcher.n_jobs=J", "runner.resume=R", "hydra.sweeper.n_jobs=J",
         "runner.progress=false"]]
    assert runner.plan("tasks", ENV) == [["PY", "-m", "quadarm.suite"]]
    assert runner.plan("drift", ENV) == runner.plan("held-bend", ENV)


@pytest.mark.parametrize("target", runner.targets(STUDIES))
def test_each_target_writes_its_studies_folders(target: str) -> None:
    """Derived from the registry alone (a new target needs no edit here): each study of the
    target runs into its ``out`` folder (or
    its name) and its ``also`` folders, and its tables go to its ``report`` folder (or its run
    folder), as its ``# study:`` line says (quadarm/config/studies.py)."""
    found = [s for s in STUDIES.values() if s.make == target]
    if any(s.alias or s.command for s in found):
        return  # an alias flies its study's target; a driver of its own writes where it says
    runs = [f for s in found for f in (s.folder, *(a.out for a in s.also))]
    reports = list(dict.fromkeys(s.report or s.folder for s in found if s.tables))
    got = [_folders(c) for c in runner.plan(target, ENV)]
    if got != [f"OUT/{f}" for f in (*runs, *reports)]:
        pytest.fail(f"make {target}: writes {got}, not the folders its studies' '# study:' lines "
                    "name (conf/experiment/*.yaml: out, also, report)", pytrace=False)


def test_every_target_of_before_is_a_make_target() -> None:
    """Every target name of the hand-written Makefile is still one, and `make` runs the
    registry's targets through the runner."""
    gone = sorted(set(FOLDERS) - set(runner.targets(STUDIES)))
    if gone:
        pytest.fail(f"make {', '.join(gone)}: no study has 'make: {gone[0]}' any more "
                    "(conf/experiment/*.yaml): a script's target must stay", pytrace=False)
    if shutil.which("make") is None:
        pytest.skip("no make")
    names = runner.targets(STUDIES)
    # Run as a top-level make even under `make test` (no "Entering directory" lines).
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    out = subprocess.run(["make", "-n", "--no-print-directory", f"PYTHON={sys.executable}",
                          *names], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out == [f"{sys.executable} -m quadarm.studies {t}" for t in names]


def test_the_runner_stops_at_an_unknown_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert runner.main(["no-such-target"]) == 2
    assert "no-such-target: no study has 'make: no-such-target'" in capsys.readouterr().err
