"""The controller's memory is what the records mark (``quadarm.runner.step.MEMORY``, from the
``Memory[...]`` fields of the State records): every other field of the controller's records is
scratch, written before it is read within a sample. Checked by flying each controller and
command-shaping term's registry trial twice, sample by sample, one of the two with every
unmarked field overwritten with garbage before each sample: the commands must stay the same bit
for bit. A term that keeps memory in a field it forgot to mark fails here (and the vector
environment would have dropped that memory on a rebuild, or kept it across a reset)."""

from __future__ import annotations

import typing
from typing import Any

import mujoco
import numpy as np
import pytest

from quadarm import terms
from quadarm.api import compose
from quadarm.runner import lifecycle, memory, step

GARBAGE = 12345.0
CONTROL_TERMS = [t for t in terms.TERMS if t.where in (terms.CONTROLLER, terms.SHAPING)]


def _fill(x: Any) -> None:
    if isinstance(x, list):
        for j, item in enumerate(x):
            if isinstance(item, list):
                _fill(item)
            else:
                x[j] = GARBAGE
    elif x.size:
        x[...] = GARBAGE


def _spoil(st: step.State, paths: list[tuple[str, str]]) -> None:
    for rec, f in paths:
        _fill(getattr(getattr(st, rec), f))


def scratch(st: step.State) -> list[tuple[str, str]]:
    """Every field of the controller's records that is not marked as memory."""
    return [(rec, f) for rec in st._fields if rec not in step.NOT_CONTROLLER
            for f in getattr(st, rec)._fields if (rec, f) not in step.MEMORY]


def _fly(p: lifecycle.Prepared, spoiled: list[tuple[str, str]]) -> np.ndarray:
    """The commands (K + 1, nu) of ``p``'s flight in plain Python, the fields ``spoiled``
    overwritten with garbage before every sample."""
    m = p.built.model
    d = mujoco.MjData(m)
    lifecycle.reset(m, d, p.plan.start)
    prm, _ = step.params([p])
    st = step.one_state(d, m.opt.wind, prm)
    lg = step.log(prm, m.nq, m.nv, m.nu, m.nbody)
    fly = step.kernels(False).fly_chunk
    never = step.Check(every=1, warn=d.warning.number, unstable=np.zeros(0, dtype=np.int64),
                       start=np.zeros(3), box=np.inf, boxed=False)  # no divergence test
    for k in range(p.plan.steps + 1):
        p.task.events(k, p.plan, d.xfrc_applied, lambda: (m, d))
        _spoil(st, spoiled)
        fly(m, d, k, k + 1, prm, st, lg, never)
    return lg.ctrl[:, 0].copy()


def test_memory_is_marked_in_the_records() -> None:
    assert step.MEMORY[0] == ("law", "prm")  # the vector environment restarts it from Params
    assert {("law", "integ"), ("tendon", "filtered"), ("contact", "fcs"),
            ("tip", "corr")} <= set(step.MEMORY)
    records = typing.get_type_hints(step.State)
    for rec, f in step.MEMORY:
        assert f in memory.fields(records[rec])


@pytest.mark.parametrize("term", CONTROL_TERMS, ids=lambda t: t.name)
def test_unmarked_fields_are_scratch(term: terms.Term, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUADARM_NUMBA", "0")
    p = lifecycle.prepare(compose(list(term.trial)))
    assert isinstance(p, lifecycle.Prepared)
    st = step.one_state(mujoco.MjData(p.built.model), p.built.model.opt.wind,
                        step.params([p])[0])
    clean = _fly(p, [])
    assert np.array_equal(_fly(p, scratch(st)), clean)
    # The check sees memory: spoiling the law's integral changes the commands.
    assert not np.array_equal(_fly(p, [("law", "integ")]), clean)
