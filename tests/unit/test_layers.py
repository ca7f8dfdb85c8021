"""The package's layering: imports run downward only, and ``analysis`` never reaches MuJoCo.

Layers, from the ground up: ``names`` (the words of the result tables) and ``terms`` (the
registry of per-step terms), standard library only,
``config``, ``results`` and ``reference`` (0: the Cosserat rod, numpy and scipy only), ``model``
(1), ``control`` (2), ``scenarios`` (3), ``runner`` (4), and the
entry points (the top-level modules and ``envs``, the Gymnasium environments). ``analysis``
reads Parquet only: it may use the ground layer and nothing that imports MuJoCo.
"""

from __future__ import annotations

import ast
from pathlib import Path

import quadarm

ROOT = Path(quadarm.__file__).resolve().parent
TOP = 6  # top-level modules: the entry points
LAYERS = {"names": 0, "config": 0, "results": 0, "reference": 0, "model": 1, "control": 2,
          "sensing": 2,
          "scenarios": 3, "runner": 4, "analysis": 5, "envs": TOP}
LAYERS["identify"] = TOP  # python -m quadarm.identify: an entry point


def layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in ("names", "terms", "jitable"):
        return LAYERS["names"]
    if len(parts) == 1 or parts[1] not in LAYERS:
        if len(parts) > 1 and (ROOT / parts[1]).is_dir():
            raise AssertionError(f"subpackage quadarm.{parts[1]} has no layer: add it to LAYERS")
        return TOP
    return LAYERS[parts[1]]


def imports(path: Path) -> set[str]:
    """The modules ``path`` imports (absolute names), type-checking-only imports included."""
    tree = ast.parse(path.read_text())
    rel = path.relative_to(ROOT.parent).with_suffix("")
    package = list(rel.parts[:-1]) if rel.name != "__init__" else list(rel.parts[:-1])
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.add(name)
            out.update(f"{name}.{a.name}" for a in node.names)
    return out


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        found[".".join(parts)] = path
    return found


def test_imports_only_run_downward() -> None:
    known = modules()
    wrong = []
    for name, path in known.items():
        if name == "quadarm":
            continue
        for target in imports(path):
            if target not in known or target == "quadarm":
                continue
            if layer(target) > layer(name) or (layer(name) == 5 and layer(target) not in (0, 5)):
                wrong.append(f"{name} (layer {layer(name)}) imports {target} "
                             f"(layer {layer(target)})")
    assert not wrong, "\n".join(wrong)


def test_analysis_imports_nothing_that_reaches_mujoco() -> None:
    known = modules()
    reach: dict[str, bool] = {}

    def uses_mujoco(name: str, seen: frozenset[str] = frozenset()) -> bool:
        if name in reach:
            return reach[name]
        direct = imports(known[name])
        hit = any(t == "mujoco" or t.startswith("mujoco.") for t in direct)
        hit = hit or any(uses_mujoco(t, seen | {name}) for t in direct
                         if t in known and t not in seen and t != name and t != "quadarm")
        reach[name] = hit
        return hit

    for name in known:
        if name.startswith("quadarm.analysis"):
            assert not uses_mujoco(name), f"{name} reaches mujoco through its imports"


def test_names_module_stands_alone() -> None:
    """``quadarm.names`` imports the standard library only: no MuJoCo, no Hydra, no numpy."""
    stdlib = {"__future__", "re"}
    assert imports(ROOT / "names.py") <= stdlib | {f"__future__.{n}" for n in ("annotations",)}


def test_terms_module_stands_alone() -> None:
    """``quadarm.terms`` (the registry the analysis reads too) imports the standard library
    only."""
    allowed = {"__future__", "json", "math", "collections.abc", "dataclasses", "typing"}
    assert {t.split(".")[0] if t not in allowed else t for t in imports(ROOT / "terms.py")
            if t not in allowed and not any(t.startswith(a + ".") for a in allowed)} == set()
