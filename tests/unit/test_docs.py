"""The README and docs/ a newcomer reads: every relative link and anchor resolves, every
generated block has its start and end marker once, the README stays short, and its two
commands are make targets."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Pages that other branches of issue 15 write: a link to one is checked once the page exists.
PENDING = {"docs/architecture.md", "docs/install.md", "docs/python-api.md"}
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
MARKER = re.compile(r"<!-- ([a-z0-9_-]+):(start|end) -->")


def _outside_code(text: str) -> str:
    """``text`` without fenced code blocks and inline code spans (links there are not links)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped (``-`` and ``_``
    kept), spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, flags=re.M)}


def _links() -> list[tuple[Path, str]]:
    return [(page, m.group(1)) for page in PAGES
            for m in LINK.finditer(_outside_code(page.read_text()))
            if not re.match(r"[a-z]+:", m.group(1))]


def test_slug_is_githubs() -> None:
    assert _slug("5. Tolerances") == "5-tolerances"
    assert _slug("How accurate is the arm? (`make arm-convergence`)") == \
        "how-accurate-is-the-arm-make-arm-convergence"


@pytest.mark.parametrize(("page", "target"), _links(),
                         ids=[f"{p.name}->{t}" for p, t in _links()])
def test_relative_link_resolves(page: Path, target: str) -> None:
    path, _, anchor = target.partition("#")
    dest = (page.parent / path).resolve() if path else page
    if not dest.exists() and dest.relative_to(ROOT).as_posix() in PENDING:
        pytest.skip(f"{path}: written on another branch of issue 15")
    assert dest.exists(), f"{page.name}: {target} does not exist"
    if anchor:
        assert dest.suffix == ".md", f"{page.name}: {target}: an anchor into a non-Markdown file"
        assert anchor in _anchors(dest), f"{page.name}: {target}: no such heading"


def test_every_generated_block_has_its_markers_once() -> None:
    """``make readme`` rewrites what lies between ``<!-- name:start -->`` and
    ``<!-- name:end -->``: each name must open once, close once, in that order, in one page."""
    seen: dict[str, Path] = {}
    for page in PAGES:
        marks = [(m.group(1), m.group(2)) for m in MARKER.finditer(page.read_text())]
        names = {n for n, _ in marks}
        for name in names:
            assert name not in seen, f"{name}: in {seen.get(name)} and {page.name}"
            assert [k for n, k in marks if n == name] == ["start", "end"], (page.name, name)
            seen[name] = page
    assert {"reproduction", "beyond"} <= set(seen)
    assert seen["reproduction"].name == "README.md"


def test_readme_is_short_and_its_two_commands_are_make_targets() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    assert "make install mission" in readme and "\nmake test " in readme
    targets = set(re.findall(r"^([a-z0-9-]+):", (ROOT / "Makefile").read_text(), flags=re.M))
    assert {"install", "mission", "test"} <= targets


def _command_lines() -> list[tuple[str, str]]:
    """Every ``python -m quadarm ...`` line of the pages' bash blocks (continuations joined,
    comments dropped), except those that need a folder the page creates (``--config-dir``) or a
    file of the reader's own (``airframe.file``)."""
    found = []
    for page in PAGES:
        for block in re.findall(r"^```bash\n(.*?)^```", page.read_text(), flags=re.S | re.M):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.split(" #")[0].strip()
                if re.fullmatch(r"python -m quadarm( .*)?", line) and not any(
                        own in line for own in ("--config-dir", "airframe.file=")):
                    found.append((page.name, line))
    return found


@pytest.mark.slow  # one Hydra composition per line
@pytest.mark.parametrize(("page", "line"), _command_lines(),
                         ids=[f"{p}: {line}" for p, line in _command_lines()])
def test_documented_command_lines_are_valid(page: str, line: str) -> None:
    """What the pages tell a reader to type passes the command's own preflight (every job
    composed and checked; nothing runs)."""
    from quadarm.cli import CONF_DIR
    from quadarm.preflight import preflight

    args = shlex.split(line)[3:]
    assert preflight(args, CONF_DIR).jobs >= 1
