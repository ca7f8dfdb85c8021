"""The mark of a record field that carries memory from one sample to the next.

The seam's :class:`~quadarm.runner.step.State` records hold two kinds of arrays besides the
``MjData`` views: memory, which a term reads at sample k as it left it at sample k - 1 (the
position integral, filter states, the force loop's phase), and scratch, which a term writes
before it reads it within the sample. A loop that keeps a controller of its own across resets
or rebuilds (the vector environment) must carry or reset exactly the memory, so each record
marks its memory fields where they are declared, ``integ: Memory[Any]``, and
:data:`quadarm.runner.step.MEMORY` collects them. ``tests/model/test_state_memory.py`` fills
every unmarked field with garbage between samples and checks that the controller's commands do
not change: a memory field left unmarked fails it.

A leaf (typing only), so that every record's module can import it.
"""

from __future__ import annotations

import typing
from typing import Annotated, Any, TypeVar

T = TypeVar("T")
TAG = "memory"
Memory = Annotated[T, TAG]


def fields(record: type) -> tuple[str, ...]:
    """The names of ``record``'s (a NamedTuple class) fields marked :data:`Memory`, in order."""
    hints: dict[str, Any] = typing.get_type_hints(record, include_extras=True)
    return tuple(f for f in record._fields  # type: ignore[attr-defined]
                 if TAG in getattr(hints.get(f), "__metadata__", ()))
