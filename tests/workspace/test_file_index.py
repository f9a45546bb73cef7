"""The working folder's file list for ``@`` completion: what is listed and what matches first."""

from __future__ import annotations

from pathlib import Path

from desktop_agent.workspace.file_index import FolderIndex, fuzzy_matches


def test_listing_skips_bulky_folders_and_does_not_follow_links(tmp_path: Path) -> None:
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "parser.py").write_text("")
    (tmp_path / "README.md").write_text("")
    for skipped in (".git", "node_modules", "__pycache__", ".venv"):
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "parser.py").write_text("")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("")
    (tmp_path / "link").symlink_to(outside)
    (tmp_path / "notes.md").symlink_to(outside / "secret.txt")
    index = FolderIndex.scan(tmp_path)
    assert index.paths == ["README.md", "src/pkg/parser.py"]
    assert index.complete
    assert FolderIndex.scan(tmp_path, limit=1).complete is False


def test_the_name_first_then_the_path_then_scattered_letters() -> None:
    paths = ["docs/parser-notes.md", "src/parser.py", "src/my_parser.py", "parse/r.py",
             "pkg/a/r/s/e/r.txt", "tests/test_other.py"]
    found = fuzzy_matches("parser", paths)
    assert found[0] == "src/parser.py"            # the name starts with it, shortest
    assert found[1] == "docs/parser-notes.md"     # the name starts with it, longer
    assert found[2] == "src/my_parser.py"         # inside the name
    assert found[3] == "parse/r.py"               # letters in order across the path
    assert "tests/test_other.py" not in found
    assert fuzzy_matches("PARSER", paths)[0] == "src/parser.py"  # case does not matter
    assert fuzzy_matches("", paths, 2) == ["parse/r.py", "src/parser.py"]  # shallow, short
