"""The diff a write_file/edit_file call would make, worked out against real files."""

from __future__ import annotations

import os
from pathlib import Path

from desktop_agent.session.files.file_changes import preview_change


def test_write_over_a_file_diffs_against_the_disk(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    preview = preview_change("write_file", {"path": "a.txt", "content": "one\n2\n"}, tmp_path)
    assert preview is not None and preview.diff is not None
    assert preview.diff.counts == "+1 \u22121"
    assert "-two\n+2\n" in preview.text


def test_write_new_file_in_a_new_folder_is_all_added(tmp_path: Path) -> None:
    preview = preview_change("write_file", {"path": "src/x.py", "content": "a\nb\nc\n"},
                             tmp_path)
    assert preview is not None and preview.diff is not None
    assert (preview.diff.kind.value, preview.diff.counts) == ("new", "+3 \u22120")
    assert not (tmp_path / "src").exists()  # a preview writes nothing


def test_edit_uses_the_tools_own_rules(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\nx\n")
    twice = preview_change("edit_file", {"path": "a.txt", "old_string": "x",
                                         "new_string": "y"}, tmp_path)
    assert twice is not None and twice.diff is None
    assert twice.problem is not None and "occurs 2 times" in twice.problem
    every = preview_change("edit_file", {"path": "a.txt", "old_string": "x",
                                         "new_string": "y", "replace_all": True}, tmp_path)
    assert every is not None and every.diff is not None and every.diff.counts == "+2 \u22122"


def test_paths_outside_the_folder_and_binary_files_are_said_in_words(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "secret.txt").write_text("outside\n")
    os.symlink(tmp_path / "secret.txt", work / "link.txt")
    for path in ("../secret.txt", "link.txt"):
        preview = preview_change("write_file", {"path": path, "content": "x"}, work)
        assert preview is not None and preview.diff is None
        assert preview.problem is not None and "outside the working directory" in preview.problem
    (work / "logo.png").write_bytes(b"\x89PNG\x00\x01")
    binary = preview_change("edit_file", {"path": "logo.png", "old_string": "PNG",
                                          "new_string": "GIF"}, work)
    assert binary is not None and binary.problem == "'logo.png' is a binary file; not edited"


def test_other_tools_and_no_folder_have_no_preview(tmp_path: Path) -> None:
    assert preview_change("bash", {"command": "rm -rf /"}, tmp_path) is None
    assert preview_change("write_file", {"path": "a", "content": "b"}, None) is None
