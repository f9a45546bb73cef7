"""Diffs of one file from its old and new bytes: every kind a card or REST shows."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from desktop_agent.workspace.diffs import (
    DiffKind,
    FileDiff,
    diff_bytes,
    side_by_side_rows,
)


def _numbered(lines: int) -> bytes:
    return "".join(f"line {i}\n" for i in range(1, lines + 1)).encode()


def test_an_edit_shows_hunks_with_both_line_numbers_and_counts() -> None:
    old = _numbered(20)
    new = old.replace(b"line 10\n", b"line ten\nline ten and a half\n")
    diff = diff_bytes("src/app.py", old, new)
    assert diff.kind is DiffKind.EDIT
    assert diff.counts == "+2 \u22121"
    assert len(diff.hunks) == 1
    hunk = diff.hunks[0]
    assert hunk.header == "@@ -7,7 +7,8 @@"
    removed = [line for line in hunk.lines if line.sign == "-"]
    added = [line for line in hunk.lines if line.sign == "+"]
    assert [(line.old_no, line.new_no, line.text) for line in removed] == [(10, None, "line 10")]
    assert [(line.old_no, line.new_no) for line in added] == [(None, 10), (None, 11)]
    after = [line for line in hunk.lines if line.sign == " " and line.old_no == 11]
    assert after[0].new_no == 12


def test_the_unified_text_is_a_patch_that_patch_applies(tmp_path: Path) -> None:
    old = _numbered(300)
    new = (old.replace(b"line 5\n", b"")
           .replace(b"line 150\n", b"line 150 changed\n")
           .replace(b"line 300\n", b"line 300"))  # and the last newline goes
    diff = diff_bytes("notes.txt", old, new)
    text = diff.unified_text()
    assert text.startswith("--- a/notes.txt\n+++ b/notes.txt\n@@ ")
    assert "\\ No newline at end of file" in text
    target = tmp_path / "notes.txt"
    target.write_bytes(old)
    (tmp_path / "change.patch").write_text(text)
    subprocess.run(["patch", "-s", str(target), str(tmp_path / "change.patch")], check=True)
    assert target.read_bytes() == new


def test_writing_a_new_file_shows_every_line_added() -> None:
    diff = diff_bytes("hello.py", None, b"print('hi')\nprint('bye')\n")
    assert diff.kind is DiffKind.NEW
    assert diff.counts == "+2 \u22120"
    assert [(line.sign, line.new_no, line.old_no) for line in diff.hunks[0].lines] == \
        [("+", 1, None), ("+", 2, None)]
    assert diff.unified_text().startswith("--- /dev/null\n+++ b/hello.py\n@@ -0,0 +1,2 @@\n")
    assert diff.summary == "Creates hello.py (2 lines)."


def test_writing_over_a_file_diffs_against_what_was_there() -> None:
    diff = diff_bytes("a.txt", b"one\ntwo\nthree\n", b"one\n2\nthree\nfour\n")
    assert diff.kind is DiffKind.EDIT
    assert diff.counts == "+2 \u22121"
    assert "-two\n+2\n" in diff.unified_text()
    assert diff.summary == "Changes a.txt (+2 \u22121)."


def test_writing_the_same_content_changes_nothing() -> None:
    diff = diff_bytes("a.txt", b"same\n", b"same\n")
    assert not diff.changed
    assert diff.summary == "No change to a.txt."
    assert diff.unified_text() == "No change to a.txt.\n"


def test_a_deletion_is_said_in_words() -> None:
    diff = diff_bytes("old.txt", b"a\nb\nc\n", None)
    assert diff.kind is DiffKind.DELETE
    assert diff.hunks == ()
    assert diff.summary == "Deletes old.txt (6 bytes, 3 lines)."
    assert diff.counts == "+0 \u22123"


def test_a_binary_file_is_said_in_words_with_its_sizes() -> None:
    diff = diff_bytes("logo.png", b"\x89PNG\x00" + b"x" * 2043, b"\x89PNG\x00" + b"y" * 4090)
    assert diff.kind is DiffKind.BINARY
    assert diff.hunks == ()
    assert diff.summary == "Binary file logo.png: 2 KB \u2192 4 KB; no line diff."
    assert diff_bytes("x.bin", b"text\n", b"\x00\x01").kind is DiffKind.BINARY


def test_a_file_over_the_cap_says_which_cap() -> None:
    big = b"x\n" * 600_000  # 1.1 MB
    diff = diff_bytes("data.csv", b"small\n", big, cap=1024 * 1024)
    assert diff.kind is DiffKind.OVER_CAP
    assert diff.hunks == ()
    assert diff.summary == "data.csv is too large to diff (6 bytes \u2192 1.1 MB; the cap is 1 MB)."


def test_nothing_on_either_side_is_refused_in_words() -> None:
    with pytest.raises(ValueError, match="no content on either side"):
        diff_bytes("ghost", None, None)


def test_a_diff_survives_metadata_and_bad_metadata_is_refused() -> None:
    diff = diff_bytes("a.txt", b"one\ntwo\n", b"one\nTWO")
    assert FileDiff.from_dict(diff.to_dict()) == diff
    with pytest.raises(ValueError, match="not a stored file diff"):
        FileDiff.from_dict({"path": "a", "kind": "sideways"})


def test_side_by_side_lays_removed_lines_beside_added_ones() -> None:
    diff = diff_bytes("a.txt", b"k\nold1\nold2\nk2\n", b"k\nnew1\nk2\n")
    rows = side_by_side_rows(diff.hunks[0])
    pairs = [(r.left.text if r.left else None, r.right.text if r.right else None) for r in rows]
    assert pairs == [("k", "k"), ("old1", "new1"), ("old2", None), ("k2", "k2")]


def test_changes_spread_through_a_long_file_are_all_found() -> None:
    lines = [f"value_{i} = compute({i})\n" for i in range(10_000)]
    changed = list(lines)
    for i in range(0, 10_000, 100):
        changed[i] = f"value_{i} = compute({i} + 1)\n"
    diff = diff_bytes("big.py", "".join(lines).encode(), "".join(changed).encode())
    assert diff.counts == "+100 \u2212100"
    assert len(diff.hunks) == 100
