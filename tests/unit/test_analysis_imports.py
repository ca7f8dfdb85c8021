"""The analysis package imports one way: no module of ``quadarm.analysis`` reaches itself
through its imports (function-level ones included), and the trial-selection rule lives in one
module."""

from __future__ import annotations

import ast
from pathlib import Path

import quadarm

ROOT = Path(quadarm.__file__).resolve().parent


def _graph() -> dict[str, set[str]]:
    mods = {}
    for path in sorted((ROOT / "analysis").rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        mods[".".join(parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        out: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                # ``from pkg import mod`` imports mod (and pkg's __init__, which the
                # machinery runs first: a real edge only if a name comes from pkg itself).
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    out.add(sub if sub in mods else node.module)
            elif isinstance(node, ast.Import):
                out.update(a.name for a in node.names)
        graph[name] = {t for t in out if t in mods and t != name}
    return graph


def test_no_import_circle_in_analysis() -> None:
    graph = _graph()
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str], seen: set[str]) -> None:
        for nxt in graph[node]:
            if nxt in path:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in seen:
                seen.add(nxt)
                visit(nxt, [*path, nxt], seen)

    for start in graph:
        visit(start, [start], {start})
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles[:5])


def test_selection_helpers_are_defined_once() -> None:
    """"Is this trial the paper's?" and the config-cell readers live in analysis/select.py."""
    defined: dict[str, list[str]] = {}
    for path in (ROOT / "analysis").rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef):
                defined.setdefault(node.name, []).append(path.name)
    for helper in ("first", "only", "paper_physics", "paper_controller", "successful",
                   "trials", "metric_frame", "column", "vector"):
        assert defined.get(helper) == ["select.py"], (helper, defined.get(helper))
