"""The YAML files of ``conf/`` and the typed schemas agree, group by group.

A key added to a schema (a term's switch, a setting) but left out of its group's YAML still
works on the command line, so nothing else notices: here every key of a group's schema must be
listed in the file that lists the group's keys, with a one-line message naming the file and the
key to add. The listing file is the group's default option (``conf/config.yaml``); for a group
with a schema per option kind (``scenario``, ``arm``: the ``<kind>_schema`` of an option's
defaults list), the first option of each schema. A field whose default is None (unset: a derived
scenario duration, an optional model file) need not be listed. The other way, every key of every
option file is a field of its schema. Derived from :data:`quadarm.config.schemas.root.GROUPS`,
the schemas and the files: a new group, option or key needs no edit here.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from pathlib import Path

import pytest
import yaml

from quadarm.config import SCENARIOS, Config
from quadarm.config.schemas import ARMS
from quadarm.config.schemas.root import GROUPS

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
HINTS = typing.get_type_hints(Config)
KINDS: dict[str, dict[str, type]] = {"scenario": dict(SCENARIOS), "arm": dict(ARMS)}


def _defaults() -> dict[str, str]:
    """The default option of each group (``conf/config.yaml``'s defaults list)."""
    out: dict[str, str] = {}
    for entry in yaml.safe_load((CONF / "config.yaml").read_text())["defaults"]:
        if isinstance(entry, dict):
            out.update({k: str(v) for k, v in entry.items() if "/" not in k})
    return out


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {}


def _schema_of(group: str, data: dict) -> type | None:
    """The schema an option file of ``group`` is read with."""
    if group in KINDS:
        named = [d[:-len("_schema")] for d in data.get("defaults", [])
                 if isinstance(d, str) and d.endswith("_schema")]
        return KINDS[group].get(named[0]) if named else None
    kind = HINTS[group]
    return kind if dataclasses.is_dataclass(kind) else None


def _listings() -> list[tuple[str, Path, type]]:
    """(group, listing file, schema) for every group with a folder under ``conf/``."""
    out = []
    defaults = _defaults()
    for group in GROUPS:
        folder = CONF / group
        if not folder.is_dir():
            continue
        if group in KINDS:
            seen: set[type] = set()
            for path in sorted(folder.glob("*.yaml")):
                schema = _schema_of(group, _load(path))
                if schema is not None and schema not in seen:
                    seen.add(schema)
                    out.append((group, path, schema))
        else:
            path = folder / f"{defaults[group]}.yaml"
            schema = _schema_of(group, _load(path))
            assert schema is not None, f"{group}: no schema in quadarm/config/schemas/root.py"
            out.append((group, path, schema))
    return out


def _default(f: dataclasses.Field) -> object:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _where(schema: type) -> str:
    return f"{schema.__name__} ({Path(inspect.getfile(schema)).relative_to(ROOT)})"


LISTINGS = _listings()


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def left_out(path: Path, schema: type) -> str:
    """'' when ``path`` lists every key of ``schema`` (but those unset by default), else the
    one line naming the file, the first key left out and what to add."""
    keys = set(_load(path)) - {"defaults"}
    for f in dataclasses.fields(schema):
        default = _default(f)
        if default is None or f.name in keys:
            continue
        value = yaml.safe_dump(default, default_flow_style=True).strip().removesuffix("...")
        return (f"{_shown(path)}: no key '{f.name}' of {_where(schema)}: add "
                f"'{f.name}: {value.strip()}' (its default; its unit in a comment)")
    return ""


@pytest.mark.parametrize("group,path,schema", LISTINGS,
                         ids=[str(p.relative_to(CONF)) for _, p, _ in LISTINGS])
def test_the_groups_yaml_lists_every_key_of_its_schema(group: str, path: Path,
                                                       schema: type) -> None:
    line = left_out(path, schema)
    if line:
        pytest.fail(line, pytrace=False)


def test_every_key_of_every_option_is_a_schema_field() -> None:
    for group in GROUPS:
        folder = CONF / group
        for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else ():
            data = _load(path)
            schema = _schema_of(group, data)
            if schema is None:
                continue
            fields = {f.name for f in dataclasses.fields(schema)}
            extra = sorted(set(data) - {"defaults"} - fields)
            if extra:
                pytest.fail(f"{_shown(path)}: {', '.join(extra)} not a field of "
                            f"{_where(schema)}: add it there or remove it here", pytrace=False)


def test_a_left_out_key_is_named_in_one_line(tmp_path: Path) -> None:
    """The check above, on a copy of the aero group's file without its last key."""
    _, path, schema = next(x for x in LISTINGS if x[0] == "aero")
    key = dataclasses.fields(schema)[-1].name
    cut = tmp_path / path.name
    cut.write_text("".join(line for line in path.read_text().splitlines(True)
                           if not line.startswith(f"{key}:")))
    line = left_out(cut, schema)
    assert f"no key '{key}' of {schema.__name__}" in line and "\n" not in line


def _option_table() -> dict[str, str]:
    """docs/configuration.md's option table: each group's rows (its own and the unnamed rows
    under it), and the ``(root)`` row, as text."""
    rows: dict[str, str] = {}
    group = ""
    for line in (ROOT / "docs" / "configuration.md").read_text().splitlines():
        m = re.match(r"^\| (?:`(\w+)`|\((root)\)|) \|", line)
        if not m:
            group = "" if not line.startswith("|") else group
            continue
        group = m.group(1) or m.group(2) or group
        if group:
            rows[group] = rows.get(group, "") + line
    return rows


GROUP_SCHEMAS = [(g, HINTS[g]) for g in GROUPS if dataclasses.is_dataclass(HINTS[g])]


@pytest.mark.parametrize("group,schema", GROUP_SCHEMAS, ids=[g for g, _ in GROUP_SCHEMAS])
def test_the_option_table_names_every_key(group: str, schema: type) -> None:
    """Each key of a group's schema is named in docs/configuration.md's option table: in the
    group's row (`key`, `key.*`), or as `group.key` or `group.*` in the root row."""
    rows = _option_table()
    mine, root = rows.get(group, ""), rows.get("root", "")
    for f in dataclasses.fields(schema):
        named = (re.search(rf"`{f.name}(?:\.\*)?`", mine)
                 or re.search(rf"`{group}\.(?:{f.name}|\*)`", root))
        if not named:
            place = (f"`{f.name}` to the `{group}` row" if mine
                     else f"`{group}.{f.name}` to the (root) row")
            pytest.fail(f"docs/configuration.md: the option table does not name {group}."
                        f"{f.name} ({_where(schema)}): add {place}", pytrace=False)
