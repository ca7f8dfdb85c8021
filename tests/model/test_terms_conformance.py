"""Every per-step term of the registry (:data:`quadarm.terms.TERMS`) passes the same checks,
generated from its row: off is the paper's default; trials with it on never reach the paper's
tables; one-trial equals batched and (slow) compiled equals plain; an environment driven by
``controller_action()`` reproduces the command line where the row says it flies the term, and
refuses it where the row says so; it has its doc section. And no term exists without a row:
every field of the seam's records, every term function of the seam and every key of the
``aero`` and ``control`` groups belongs to a row (or to the paper's own loop)."""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
import sys
import typing
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from quadarm import terms
from quadarm.api import compose
from quadarm.config import AeroConfig, ControlConfig, flatten
from quadarm.runner import engine, episode, jit, step

ROOT = Path(__file__).resolve().parents[2]
IDS = [t.name for t in terms.TERMS]
# The scenarios of the paper's tables (quadarm/analysis/tables.py: successful(runs, kind)).
PAPER_SCENARIOS = ("mission", "workspace", "disturbance", "held_bend", "hover")


@functools.cache
def _load(overrides: tuple[str, ...]):
    """The validated config of ``overrides`` (composed once per process: not mutated)."""
    return compose(list(overrides))


def _fail(line: str) -> None:
    """Fail with ``line`` alone: which file, and what to add there."""
    pytest.fail(line, pytrace=False)


def _fly(cfg):
    ep = episode.run_episode(cfg)
    assert ep.status == "ok", ep.message
    return ep


@pytest.mark.parametrize("term", terms.TERMS, ids=IDS)
def test_off_is_the_papers_default_and_the_trial_turns_it_on(term):
    default, on = _load(()), _load(term.trial)
    assert not terms.on(term, default)  # the defaults are the off values: the paper's loop
    for key, off in term.switches:
        assert terms.is_off(terms.get(default, key), off), key
    assert terms.on(term, on)
    assert term.where in terms.WHERE


@pytest.mark.parametrize("term", terms.TERMS, ids=IDS)
def test_trials_with_the_term_on_stay_out_of_the_papers_tables(term):
    from quadarm.analysis.select import only, paper_trials, successful

    cfgs = [_load(()), _load(term.trial)]
    runs = pd.DataFrame([flatten(c) for c in cfgs])
    runs["scenario"] = [c.scenario.kind for c in cfgs]
    runs["status"], runs["run_id"] = "ok", ["off", "on"]
    for kind in PAPER_SCENARIOS:  # every paper table selects through successful()
        if "on" in successful(runs, kind)["run_id"].tolist():
            _fail(f"{term.name}: a trial with it on ({' '.join(term.trial)}) reaches the paper's "
                  f"{kind} table: its row in quadarm/terms.py must name the key that turns it "
                  "on in `switches`")
    if term.scenario:  # a scenario's own term: the paper's tables select other scenarios
        if term.scenario in PAPER_SCENARIOS:
            _fail(f"{term.name}: scenario={term.scenario} is a paper scenario: switch the term "
                  "by a config key (`switches` of its row in quadarm/terms.py)")
        return
    if paper_trials(runs).tolist() != [True, False]:
        _fail(f"{term.name}: analysis/select.py::paper_trials does not exclude its trial: its "
              "row in quadarm/terms.py needs its `switches` with their off values")
    others = {t.select for t in terms.active(_load(term.trial))}
    if only(runs, **dict.fromkeys(others, True)).tolist() != [True, True]:
        _fail(f"{term.name}: select.only({', '.join(f'{o}=True' for o in sorted(others))}) "
              "does not admit its trial: give its row in quadarm/terms.py a `select` flag")


@pytest.mark.parametrize("term", terms.TERMS, ids=IDS)
def test_the_term_has_its_doc_section_and_is_listed(term):
    page, heading = term.doc
    text = (ROOT / page).read_text()
    if not re.search(rf"^#+ .*{re.escape(heading)}", text, re.M):
        _fail(f"{page}: no section '{heading}' ({term.name}'s `doc` in quadarm/terms.py): "
              "add it, or correct the row")
    arch = (ROOT / "docs" / "architecture.md").read_text()
    if f"`{term.name}`" not in arch.split("### Registered terms")[1].split("\n## ")[0]:
        _fail(f"docs/architecture.md: no line for `{term.name}` in the table of section "
              f"'Registered terms': add '| `{term.name}` | {term.where} | ... |'")


# the sensed case compiles the batched sensing kernels: slow (make test's 10-min budget)
@pytest.mark.parametrize("term", [pytest.param(t, marks=pytest.mark.slow) if t.name == "sensing"
                                  else t for t in terms.TERMS], ids=IDS)
def test_batched_equals_one_trial(term, monkeypatch):
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    cfgs = [_load(term.trial), _load((*term.trial, "seed=1"))]
    # Row 0 against its one-trial flight (row 1, another seed, shares the batch's records), in
    # the lock-step seam (the engine's threads fly the one-trial loop itself).
    many = engine.run_batched(cfgs, nthread=1, lockstep=True)
    for ep, cfg in zip(many[:1], cfgs[:1], strict=True):
        one = _fly(cfg)
        assert ep.status == "ok"
        for name in ("qpos", "qvel", "tip", "ctrl"):
            assert np.array_equal(getattr(ep.log, name), getattr(one.log, name)), name
        assert [m[:2] for m in ep.metrics] == [m[:2] for m in one.metrics]
        np.testing.assert_array_equal([v for *_, v in ep.metrics], [v for *_, v in one.metrics])


@pytest.mark.slow
def test_compiled_equals_plain_for_every_term(monkeypatch):
    """One compile of the seam's loops serves every term (same record types)."""
    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    for term in terms.TERMS:
        cfg = _load(term.trial)
        monkeypatch.setenv("QUADARM_NUMBA", "1")
        a = _fly(cfg)
        monkeypatch.setenv("QUADARM_NUMBA", "0")
        b = _fly(cfg)
        for name in ("qpos", "qvel", "tip", "ctrl"):
            assert np.array_equal(getattr(a.log, name), getattr(b.log, name)), (term.name, name)


@pytest.mark.parametrize("term", terms.TERMS, ids=IDS)
def test_the_env_flies_it_as_the_command_line_or_refuses_it(term, monkeypatch):
    pytest.importorskip("gymnasium")
    from quadarm.envs.single import QuadArmEnv

    monkeypatch.setenv("QUADARM_NUMBA", "0")
    if term.env == terms.ENV_ORACLE:
        pytest.skip(f"{term.name}: controller_action() is the paper's law on the true state")
    env = QuadArmEnv(overrides=list(term.trial))
    env.reset(seed=0)
    if term.env == terms.ENV_REFUSE:
        with pytest.raises(ValueError, match=re.escape(term.switches[0][0])):
            env.controller_action()
        return
    while True:
        *_, done, trunc, info = env.step(env.controller_action())
        if done or trunc:
            break
    _same_metrics({(p, m): v for p, d in info["metrics"].items() for m, v in d.items()},
                  _fly(env.cfg))


def _same_metrics(got, cli):
    ref = {(p, m): v for p, m, v in cli.metrics}
    assert got.keys() == ref.keys()
    for k, v in ref.items():
        assert got[k] == pytest.approx(v, rel=1e-9, abs=1e-12, nan_ok=True), k


@pytest.mark.parametrize("term", terms.TERMS, ids=IDS)
def test_the_vector_env_flies_it_as_the_command_line(term, monkeypatch):
    """Two rows at different samples, driven by the vector environment's controller_action():
    row 1 is reset 20 steps into its episode (its controller's memory must restart with it),
    row 0 then autoresets and flies a second episode; each finished episode's metrics are the
    command line's."""
    pytest.importorskip("gymnasium")
    from quadarm.envs.vector import QuadArmVectorEnv

    monkeypatch.setenv("QUADARM_NUMBA", "0")
    if term.env == terms.ENV_ORACLE:
        pytest.skip(f"{term.name}: controller_action() is the paper's law on the true state")
    from quadarm.envs.core import UNSUPPORTED_SCENARIOS

    kind = _load(term.trial).scenario.kind
    engine = "batch"
    if kind in UNSUPPORTED_SCENARIOS:  # a payload task's term: the batch engine refuses its
        with pytest.raises(ValueError, match=re.escape(f"scenario={kind}")):  # events,
            QuadArmVectorEnv(2, list(term.trial))
        engine = "rows"  # the rows engine (each row a single environment) flies them
    venv = QuadArmVectorEnv(2, list(term.trial), engine=engine)
    venv.reset(seed=0)
    if term.env == terms.ENV_REFUSE:
        with pytest.raises(ValueError, match=re.escape(term.switches[0][0])):
            venv.controller_action()
        return
    cli = _fly(venv.cfg)
    done = [0, 0]  # episodes finished per row (row 1's first one is cut short by the reset)
    for n in range(5000):
        if n == 20:
            venv.reset(options={"reset_mask": [False, True]})
        *_, term_, trunc, info = venv.step(venv.controller_action())
        assert not term_.any()
        for i in np.flatnonzero(trunc):
            _same_metrics({(p, m): v[i] for p, d in info["metrics"].items()
                           if not p.startswith("_") for m, v in d.items()
                           if not m.startswith("_")}, cli)
            done[i] += 1
        if min(done) >= 1 and done[0] >= 2:
            break
    assert done[0] >= 2 and done[1] >= 1
    venv.close()


# ---------------------------------------------------------------------------------------------
# No term without a row
# ---------------------------------------------------------------------------------------------


def _paths(record: type, prefix: str) -> tuple[set[str], set[str]]:
    """The paths through ``record``'s nested records: (its leaves, its records), e.g.
    ``Params.air.gusty`` and ``Params.air``."""
    names = vars(sys.modules[record.__module__])  # the annotations name the module's imports
    hints = typing.get_type_hints(record, globalns=names, localns=names)
    leaves, nodes = set(), {prefix}
    for f in record._fields:
        kind, path = hints[f], f"{prefix}.{f}"
        if isinstance(kind, type) and issubclass(kind, tuple) and hasattr(kind, "_fields"):
            sub_leaves, sub_nodes = _paths(kind, path)
            leaves |= sub_leaves
            nodes |= sub_nodes
        else:
            leaves.add(path)
    return leaves, nodes


def _seam_paths() -> tuple[set[str], set[str]]:
    leaves: set[str] = set()
    nodes: set[str] = set()
    for r in (step.Params, step.State, step.Log):
        sub_leaves, sub_nodes = _paths(r, r.__name__)
        leaves |= sub_leaves
        nodes |= sub_nodes
    return leaves, nodes


def _unclaimed(claimed: set[str]) -> set[str]:
    """The leaves of the seam's records that no claimed path covers (a path to a record
    covers every field under it)."""
    leaves, _ = _seam_paths()
    return {f for f in leaves
            if not any(f == c or f.startswith(c + ".") for c in claimed)}


def _claimed() -> set[str]:
    return set(terms.BASE_RECORDS) | {r for t in terms.TERMS for r in t.records}


def test_every_record_field_belongs_to_a_row():
    leaves, nodes = _seam_paths()
    assert {"Params.air.gusty", "State.tip.corr", "Params.sn.ekf"} <= leaves  # nested walk
    for f in sorted(_unclaimed(_claimed())):
        _fail(f"{f}: a field of the seam's records that no row claims: add '{f}' to its "
              "term's `records` in quadarm/terms.py (or to BASE_RECORDS, the paper's loop)")
    for f in sorted(_claimed() - (leaves | nodes)):
        _fail(f"{f}: named in quadarm/terms.py but not a field of the seam's records "
              "(quadarm/runner/step.py Params/State/Log): correct the row")


@pytest.mark.parametrize("term", terms.TERMS, ids=IDS)
def test_each_record_path_of_a_row_is_needed(term):
    """A term that registers only some of its fields fails: without any one path of its row,
    some field of the records is nobody's."""
    for path in term.records:
        others = set(terms.BASE_RECORDS) | {r for t in terms.TERMS if t is not term
                                            for r in t.records} | (set(term.records) - {path})
        if not _unclaimed(others):
            leaves, nodes = _seam_paths()
            why = "claimed by another row too" if path in leaves | nodes else \
                "not a field of the seam's records (quadarm/runner/step.py Params/State/Log)"
            _fail(f"quadarm/terms.py, row {term.name!r}: its record path {path} is {why}: "
                  "name only the fields the term adds (or add the field to its record)")


def test_every_term_function_of_the_seam_belongs_to_a_row():
    tree = ast.parse((ROOT / "quadarm" / "runner" / "step.py").read_text())
    inline = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any(
                ast.unparse(d) == "jit.inline" for d in node.decorator_list):
            inline.add(node.name)
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and ast.unparse(node.value.func) == "jit.inline"):
            inline.update(t.id for t in node.targets if isinstance(t, ast.Name))
    claimed = set(terms.BASE_FUNCTIONS) | {f for t in terms.TERMS for f in t.functions}
    for f in sorted(inline - claimed):
        _fail(f"step.{f}: a term function of the seam that no row claims: add '{f}' to its "
              "term's `functions` in quadarm/terms.py")


def test_every_aero_and_control_key_belongs_to_a_row():
    keys = {f"aero.{f.name}" for f in dataclasses.fields(AeroConfig)}
    keys |= {f"control.{f.name}" for f in dataclasses.fields(ControlConfig)}
    claimed = set(terms.BASE_KEYS) | {k for t in terms.TERMS for k, _ in t.switches}
    claimed |= {k for t in terms.TERMS for k in t.settings}
    for k in sorted(keys - claimed):
        _fail(f"{k}: a key of no term: add it to a row's `switches` or `settings` in "
              "quadarm/terms.py (or to BASE_KEYS, the paper's controller)")


def test_the_compiled_sources_are_the_rows_modules():
    for t in terms.TERMS:
        for m in t.modules:
            if not (ROOT / "quadarm" / m).exists():
                _fail(f"{t.name}: `modules` names quadarm/{m}, which does not exist "
                      "(quadarm/terms.py)")
            assert m in jit.COMPILED_SOURCES


def test_unknown_selection_flag_is_refused():
    from quadarm.analysis.select import only

    with pytest.raises(TypeError, match="unknown selection flag"):
        only(pd.DataFrame({"x": [1]}), lagg=True)


# ---------------------------------------------------------------------------------------------
# Where a term acts: an agent's action meets the same terms on the model as the controller's
# ---------------------------------------------------------------------------------------------

# The agent's stand-in for a term that shapes the rotor commands after the controller (a
# battery's thrust sag, a motor model): a factor per sample, on ctrl, after the law wrote it.
def _sag(k: int) -> float:
    return 1.0 - 0.02 * (k % 7) / 6.0


def _flight(p, mode: int, sent: np.ndarray | None, monkeypatch) -> dict[str, np.ndarray]:
    """The seam's flight of ``p`` sample by sample in plain Python: with ``mode`` FLY, the
    controller's commands thrust-shaped by :func:`_sag`; with EXTERNAL, the commands ``sent``
    (K, nu) written into ``ctrl`` as an agent's actions. Returns what reached the model before
    each step (ctrl, xfrc_applied, opt.wind, and the rotor thrusts the air terms used), the
    final state, and how often each seam function of the registry ran."""
    import mujoco

    from quadarm.runner import lifecycle

    m = p.built.model
    wind0 = m.opt.wind.copy()
    d = mujoco.MjData(m)
    lifecycle.reset(m, d, p.plan.start)
    prm, _ = step.params([p], mode)
    st = step.one_state(d, m.opt.wind, prm)
    lg = step.log(prm, m.nq, m.nv, m.nu, m.nbody)
    calls: dict[str, int] = {}
    for name in {f for t in terms.TERMS for f in t.functions}:
        fn = getattr(step, name)

        def counted(*args, _fn=fn, _name=name):
            calls[_name] = calls.get(_name, 0) + 1
            return _fn(*args)

        monkeypatch.setattr(step, name, counted)
    control = step.control

    def shaped(k, p_, s_, lg_, i, *rest):
        control(k, p_, s_, lg_, i, *rest)
        if p_.mode == step.FLY:  # a thrust-shaping term: after the controller, on ctrl
            for j in p_.law.rotors:
                s_.data.ctrl[i, j] *= _sag(k)

    monkeypatch.setattr(step, "control", shaped)
    rows: dict[str, list[np.ndarray]] = {"ctrl": [], "cmd": [], "xfrc": [], "wind": [],
                                         "thrust": []}
    for k in range(p.plan.steps):
        p.task.events(k, p.plan, d.xfrc_applied, lambda: (m, d))
        if sent is not None:
            d.ctrl[:] = sent[k]
        step.before(k, prm, st, lg, 0)
        rows["ctrl"].append(d.ctrl.copy())  # what the model applies in the coming step
        # the commands as the seam logged them (step 5): an agent's action is one; a plant
        # term (a servo model) may turn it into what the actuators apply after the log
        rows["cmd"].append(lg.ctrl[k, 0].copy())
        rows["xfrc"].append(d.xfrc_applied.copy())
        rows["wind"].append(m.opt.wind.copy())
        rows["thrust"].append(st.air.thrust.copy())  # the thrusts the air terms drove with
        mujoco.mj_step(m, d)
        step.after(k, prm, st, lg, 0)
    monkeypatch.undo()
    m.opt.wind[:] = wind0
    return {**{k: np.array(v) for k, v in rows.items()}, "qpos": d.qpos.copy(),
            "calls": calls}  # type: ignore[dict-item]


@pytest.mark.parametrize("term", terms.TERMS, ids=IDS)
def test_an_agents_action_meets_the_terms_the_row_says(term, monkeypatch):
    """A row's ``where`` says once where the term acts. Estimate, controller and command-shaping
    terms act on the controller's commands (an agent's action replaces the controller, and the
    seam's EXTERNAL mode runs none of their functions); force terms act on the model, so on
    whatever command is applied: the controller's, after any term that shaped it, or an agent's.
    Flown: the controller's commands thrust-shaped after the law, then the same commands sent
    as an agent's actions; the model must receive the same commands, forces and wind, bit for
    bit (the air terms read the applied command, not the law's)."""
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    from quadarm.runner import lifecycle

    p = lifecycle.prepare(_load(term.trial))
    assert isinstance(p, lifecycle.Prepared)
    fly = _flight(p, step.FLY, None, monkeypatch)
    agent = _flight(p, step.EXTERNAL, fly["cmd"], monkeypatch)
    ran = {f for f, n in agent["calls"].items() if n}
    mine = set(term.functions)
    if term.where == terms.FORCE and mine and not mine & ran:
        _fail(f"{term.name}: a force term ({', '.join(sorted(mine))}) that an agent's action "
              "does not meet: call it where EXTERNAL mode runs (step.before, step 6)")
    if term.where != terms.FORCE and mine & ran:
        _fail(f"{term.name}: where={term.where!r} in quadarm/terms.py, but "
              f"{', '.join(sorted(mine & ran))} ran on an agent's action: say where="
              "'force on the model', or run it inside step.control")
    for name in ("ctrl", "xfrc", "wind", "thrust"):
        if not np.array_equal(fly[name], agent[name]):
            k = int(np.flatnonzero((fly[name] != agent[name]).reshape(len(fly[name]), -1)
                                   .any(axis=1))[0])
            _fail(f"{term.name}: the model gets another {name} at sample {k} from an agent's "
                  "action than from the same shaped controller command: a term on the model "
                  "must read what is applied (ctrl, act), not the controller's own variables")
    assert np.array_equal(fly["qpos"], agent["qpos"])


def _items(text: str) -> dict[int, str]:
    """The numbered items (``1.`` to ``9.``) of the first list in ``text``."""
    out: dict[int, str] = {}
    n = 0
    for line in text.splitlines():
        m = re.match(r"^\s*(\d)\. (.*)", line)
        if m:
            n = int(m.group(1))
            out[n] = m.group(2)
        elif n and line.startswith("   ") and line.strip():
            out[n] += " " + line.strip()
        elif n and not line.strip():
            continue
        elif n:
            break
    return out


def _step_lists() -> dict[str, dict[int, str]]:
    arch = (ROOT / "docs" / "architecture.md").read_text()
    where = arch.split("### Where a term runs in the step")[1].split("\n### ")[0]
    return {"docs/architecture.md ('Where a term runs')": _items(where),
            "quadarm/runner/step.py (docstring)": _items(step.__doc__ or "")}


@pytest.mark.parametrize("term", [t for t in terms.TERMS if t.functions],
                         ids=[t.name for t in terms.TERMS if t.functions])
def test_the_step_lists_name_the_rows_functions_where_they_run(term):
    """The list of where a term runs, in the docs and in the seam's docstring, is checked
    against the rows: each seam function of a row is named in an item its ``where`` allows."""
    allowed = terms.STEP_ITEMS[term.where]
    for place, items in _step_lists().items():
        assert sorted(items) == [1, 2, 3, 4, 5, 6], f"{place}: not the six items of the step"
        for f in term.functions:
            found = [n for n, text in items.items()
                     if re.search(rf"(?<![\w]){re.escape(f)}(?![\w])", text)]
            if not set(found) & set(allowed):
                _fail(f"{place}: {term.name}'s seam function {f} is not named in item "
                      f"{' or '.join(map(str, allowed))} of the step's list (where="
                      f"{term.where!r}): name it there")


def test_the_records_section_names_every_field():
    """docs/architecture.md's "Records": the table names every field of ``Params`` and
    ``State`` with its record's type, and the text every field of ``Log``."""
    arch = (ROOT / "docs" / "architecture.md").read_text()
    section = arch.split("\n### Records\n")[1].split("\n### ")[0]
    table = "\n".join(line for line in section.splitlines() if line.startswith("|"))
    for record in (step.Params, step.State):
        hints = typing.get_type_hints(record, globalns=vars(step), localns=vars(step))
        for f in record._fields:
            kind = hints[f]
            if f"`{f}`" not in table:
                _fail(f"docs/architecture.md ('Records'): the table has no {record.__name__}."
                      f"{f}: add `{f}` to its row")
            if hasattr(kind, "_fields") and f"`{kind.__name__}`" not in table:
                _fail(f"docs/architecture.md ('Records'): the table does not name "
                      f"{record.__name__}.{f}'s record `{kind.__name__}`: add it to its row")
    for f in step.Log._fields:
        if f"`{f}`" not in section:
            _fail(f"docs/architecture.md ('Records'): Log.{f} is not named: add `{f}` to the "
                  "`Log` line")
