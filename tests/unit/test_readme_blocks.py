"""``make readme``: every generated block is refreshed wherever its markers live, in README.md
or in any page of docs/, and nothing else in those files changes."""

from __future__ import annotations

from pathlib import Path

from quadarm.analysis.report import BEYOND_END, BEYOND_START, README_END, README_START
from quadarm.reproduce import readme_files, refresh_blocks


def test_blocks_are_refreshed_where_their_markers_are(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    readme = tmp_path / "README.md"
    readme.write_text(f"# quadarm\n\nintro\n{README_START}\nold table\n{README_END}\ntail\n")
    moved = docs / "studies.md"  # a block moved out of the README keeps its markers
    moved.write_text(f"# Studies\n{BEYOND_START}\nold beyond\n{BEYOND_END}\n")
    plain = docs / "model.md"
    plain.write_text("# Model\nno generated block here\n")
    files = readme_files([readme, docs])
    assert files == [readme, plain, moved]
    logged: list[str] = []
    found = refresh_blocks(files, {(README_START, README_END): "new table",
                                   (BEYOND_START, BEYOND_END): "new beyond",
                                   ("<!-- x:start -->", "<!-- x:end -->"): "lost"},
                           log=logged.append)
    assert readme.read_text() == (f"# quadarm\n\nintro\n{README_START}\nnew table\n"
                                  f"{README_END}\ntail\n")
    assert moved.read_text() == f"# Studies\n{BEYOND_START}\nnew beyond\n{BEYOND_END}\n"
    assert plain.read_text() == "# Model\nno generated block here\n"
    assert found[(README_START, README_END)] == [readme]
    assert found[(BEYOND_START, BEYOND_END)] == [moved]
    assert len(logged) == 1 and "<!-- x:start -->" in logged[0]


def test_default_files_are_the_readme_and_the_docs(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("x")
    (tmp_path / "docs" / "a.md").write_text("y")
    assert readme_files([]) == [Path("README.md"), Path("docs/a.md")]
