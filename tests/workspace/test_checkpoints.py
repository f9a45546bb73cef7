"""Checkpoints of real folders: undo and restore byte for byte, conflicts named, caps said."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from desktop_agent.workspace.checkpoints import (
    CheckpointError,
    CheckpointStore,
    RestoreConflictError,
)
from desktop_agent.workspace.folder_scan import Limits

BINARY = bytes(range(256)) * 64 + b"\x00\xff\x00"


def make_project(root: Path, outside: Path) -> None:
    """src/ with a script (0755), a read-only file (0444), a binary, links in and out."""
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "src" / "run.sh").chmod(0o755)
    (root / "src" / "frozen.txt").write_text("do not change\n")
    (root / "src" / "frozen.txt").chmod(0o444)
    (root / "src" / "pkg" / "blob.bin").write_bytes(BINARY)
    (root / "src" / "pkg").chmod(0o750)
    (root / "src" / "link_in").symlink_to("pkg/blob.bin")
    outside.mkdir(exist_ok=True)
    (outside / "secret.txt").write_text("outside\n")
    (root / "src" / "link_out").symlink_to(outside / "secret.txt")
    (root / "README").write_text("top\n")


def tree(root: Path) -> dict[str, tuple[str, int, bytes | str]]:
    """Every path under root: kind, mode, bytes or link target (links not followed)."""
    found: dict[str, tuple[str, int, bytes | str]] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            full = Path(folder, name)
            rel = full.relative_to(root).as_posix()
            st = full.lstat()
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", 0, os.readlink(full))
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = ("dir", stat.S_IMODE(st.st_mode), b"")
            else:
                found[rel] = ("file", stat.S_IMODE(st.st_mode), full.read_bytes())
    return found


def agent_turn(store: CheckpointStore, workdir: Path, turn: str, change) -> None:  # type: ignore[no-untyped-def]
    store.checkpoint(workdir, kind="tool_round", turn=turn, message=f"m-{turn}")
    change()
    store.close_turn(workdir, turn, message=f"m-{turn}")


def test_undo_brings_back_a_deleted_folder_byte_for_byte_and_removes_new_files(
        checkpoints: CheckpointStore, workdir: Path, tmp_path: Path) -> None:
    make_project(workdir, tmp_path / "outside")
    before = tree(workdir)

    def rm_src() -> None:
        (workdir / "src" / "pkg").chmod(0o755)
        shutil.rmtree(workdir / "src")
        (workdir / "new.txt").write_text("x\n")

    agent_turn(checkpoints, workdir, "t1", rm_src)
    [turn] = checkpoints.turns()
    assert {(c.path, c.change) for c in turn.changes} >= {
        ("src", "deleted"), ("src/run.sh", "deleted"), ("src/link_out", "deleted"),
        ("new.txt", "added")}

    report = checkpoints.undo_turn(workdir, "t1")

    assert tree(workdir) == before
    assert not (workdir / "new.txt").exists()
    assert os.readlink(workdir / "src" / "link_out") == str(tmp_path / "outside" / "secret.txt")
    assert (tmp_path / "outside" / "secret.txt").read_text() == "outside\n"
    assert report.turn is not None and report.turn.kind == "restore"
    assert "new.txt" in report.applied.removed


def test_a_restore_can_itself_be_undone(checkpoints: CheckpointStore, workdir: Path) -> None:
    (workdir / "a.txt").write_text("one\n")
    agent_turn(checkpoints, workdir, "t1", lambda: (workdir / "a.txt").write_text("two\n"))
    report = checkpoints.undo_turn(workdir, "t1")
    assert (workdir / "a.txt").read_text() == "one\n"
    assert report.turn is not None
    checkpoints.undo_turn(workdir, report.turn.turn)
    assert (workdir / "a.txt").read_text() == "two\n"


def test_a_link_put_in_place_of_a_folder_does_not_redirect_the_restore(
        checkpoints: CheckpointStore, workdir: Path, tmp_path: Path) -> None:
    (workdir / "src").mkdir()
    (workdir / "src" / "main.py").write_text("print(1)\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def swap() -> None:
        shutil.rmtree(workdir / "src")
        (workdir / "src").symlink_to(elsewhere)

    agent_turn(checkpoints, workdir, "t1", swap)
    checkpoints.undo_turn(workdir, "t1")

    assert not (workdir / "src").is_symlink()
    assert (workdir / "src" / "main.py").read_text() == "print(1)\n"
    assert list(elsewhere.iterdir()) == []


def test_a_file_edited_by_hand_after_the_agent_is_a_conflict_named_and_not_overwritten(
        checkpoints: CheckpointStore, workdir: Path) -> None:
    (workdir / "notes.md").write_text("mine\n")
    (workdir / "other.md").write_text("other\n")

    def edit() -> None:
        (workdir / "notes.md").write_text("agent\n")
        (workdir / "other.md").write_text("agent other\n")

    agent_turn(checkpoints, workdir, "t1", edit)
    (workdir / "notes.md").write_text("agent\nand my own line\n")

    with pytest.raises(RestoreConflictError) as raised:
        checkpoints.undo_turn(workdir, "t1")

    assert raised.value.paths == ["notes.md"]
    assert "notes.md" in str(raised.value)
    assert (workdir / "notes.md").read_text() == "agent\nand my own line\n"
    assert (workdir / "other.md").read_text() == "agent other\n"  # nothing was done

    report = checkpoints.undo_turn(workdir, "t1", force=True)
    assert report.overwritten == ["notes.md"]
    assert (workdir / "notes.md").read_text() == "mine\n"
    assert (workdir / "other.md").read_text() == "other\n"


def test_restore_to_an_earlier_checkpoint_leaves_files_no_turn_changed(
        checkpoints: CheckpointStore, workdir: Path) -> None:
    (workdir / "a.txt").write_text("a0\n")
    (workdir / "mine.txt").write_text("m0\n")
    agent_turn(checkpoints, workdir, "t1", lambda: (workdir / "a.txt").write_text("a1\n"))
    (workdir / "mine.txt").write_text("m1 by hand between turns\n")
    agent_turn(checkpoints, workdir, "t2", lambda: (workdir / "b.txt").write_text("b\n"))

    first = next(c for c in checkpoints.checkpoints() if c.turn == "t1")
    checkpoints.restore_to(workdir, first.id)

    assert (workdir / "a.txt").read_text() == "a0\n"
    assert not (workdir / "b.txt").exists()
    assert (workdir / "mine.txt").read_text() == "m1 by hand between turns\n"


def test_the_plan_of_a_restore_names_what_the_restore_then_does(
        checkpoints: CheckpointStore, workdir: Path) -> None:
    (workdir / "a.txt").write_text("a0\n")
    (workdir / "old.txt").write_text("old\n")
    agent_turn(checkpoints, workdir, "t1", lambda: (workdir / "a.txt").write_text("a1\n"))
    agent_turn(checkpoints, workdir, "t2", lambda: ((workdir / "notes.txt").write_text("n\n"),
                                                    (workdir / "old.txt").unlink()))
    first = next(c for c in checkpoints.checkpoints() if c.turn == "t1")

    plan = checkpoints.restore_plan(workdir, first.id)
    assert [(c.path, c.change) for c in plan] == [
        ("a.txt", "modified"), ("notes.txt", "deleted"), ("old.txt", "added")]
    assert (workdir / "notes.txt").exists()  # nothing done yet

    report = checkpoints.restore_to(workdir, first.id)
    assert report.turn is not None and report.turn.changes == plan
    with pytest.raises(CheckpointError, match="now works in"):
        checkpoints.restore_plan(workdir / "elsewhere", first.id)


def test_an_unchanged_folder_writes_no_new_manifest(
        checkpoints: CheckpointStore, workdir: Path) -> None:
    for i in range(50):
        (workdir / f"f{i}.txt").write_text(f"{i}\n")
    first = checkpoints.checkpoint(workdir, kind="tool_round", turn="t1")
    second = checkpoints.checkpoint(workdir, kind="tool_round", turn="t1")
    assert second.manifest == first.manifest
    assert len(list((checkpoints.root / "manifests").glob("*.json"))) == 1
    (workdir / "f3.txt").write_text("changed\n")
    third = checkpoints.checkpoint(workdir, kind="tool_round", turn="t1")
    assert third.manifest != first.manifest
    assert checkpoints.entries_of(third.id)["f3.txt"].digest != \
        checkpoints.entries_of(first.id)["f3.txt"].digest


def test_a_same_size_rewrite_within_the_clock_tick_is_still_seen(
        checkpoints: CheckpointStore, workdir: Path) -> None:
    target = workdir / "same.txt"
    target.write_text("aaaa\n")
    first = checkpoints.checkpoint(workdir, kind="tool_round", turn="t1")
    stamp = target.stat().st_mtime_ns
    target.write_text("bbbb\n")
    os.utime(target, ns=(stamp, stamp))  # same size, same mtime: only the racy rule sees it
    second = checkpoints.checkpoint(workdir, kind="tool_round", turn="t1")
    assert second.manifest != first.manifest


def test_files_over_the_caps_are_said_and_left_alone(tmp_path: Path, workdir: Path) -> None:
    store = CheckpointStore(tmp_path / "cp", Limits(max_file_bytes=1000, max_total_bytes=3000))
    (workdir / "big.iso").write_bytes(b"x" * 5000)
    for i in range(5):
        (workdir / f"part{i}.txt").write_bytes(b"y" * 900)
    taken = store.checkpoint(workdir, kind="tool_round", turn="t1")
    assert any("big.iso" in n and "cap for one file" in n for n in taken.notes)
    assert any("total cap" in n and "2 files" in n for n in taken.notes)

    (workdir / "big.iso").write_bytes(b"z" * 6000)
    store.close_turn(workdir, "t1")
    store.undo_turn(workdir, "t1")
    assert (workdir / "big.iso").read_bytes() == b"z" * 6000  # not in the checkpoint: kept


def test_git_folders_and_excluded_folders_are_never_recorded_nor_restored(
        tmp_path: Path, workdir: Path) -> None:
    store = CheckpointStore(tmp_path / "cp", Limits(excluded=frozenset({"node_modules"})))
    (workdir / ".git").mkdir()
    (workdir / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (workdir / "node_modules").mkdir()
    (workdir / "code.py").write_text("1\n")

    def work() -> None:
        (workdir / ".git" / "HEAD").write_text("ref: refs/heads/agent\n")
        (workdir / "node_modules" / "dep.js").write_text("x\n")
        (workdir / "code.py").write_text("2\n")

    agent_turn(store, workdir, "t1", work)
    [turn] = store.turns()
    assert [c.path for c in turn.changes] == ["code.py"]
    store.undo_turn(workdir, "t1")
    assert (workdir / "code.py").read_text() == "1\n"
    assert (workdir / ".git" / "HEAD").read_text() == "ref: refs/heads/agent\n"
    assert (workdir / "node_modules" / "dep.js").exists()
    assert not (tmp_path / "cp").is_relative_to(workdir)


def test_checkpoints_survive_a_new_store_object_and_go_with_delete(
        tmp_path: Path, workdir: Path) -> None:
    root = tmp_path / "cp"
    (workdir / "a.txt").write_text("1\n")
    agent_turn(CheckpointStore(root), workdir, "t1",
               lambda: (workdir / "a.txt").write_text("2\n"))
    reopened = CheckpointStore(root)  # as after a restart
    assert [t.turn for t in reopened.turns()] == ["t1"]
    assert reopened.size_bytes() > 0
    reopened.undo_turn(workdir, "t1")
    assert (workdir / "a.txt").read_text() == "1\n"
    reopened.delete()
    assert not root.exists()


def test_pruning_keeps_the_latest_turns_and_frees_unused_contents(
        checkpoints: CheckpointStore, workdir: Path) -> None:
    for n in range(5):
        agent_turn(checkpoints, workdir, f"t{n}",
                   lambda n=n: (workdir / "f.txt").write_bytes(bytes([n]) * 4096))
    freed = checkpoints.prune(keep_turns=2)
    assert freed >= 2 * 4096
    assert [t.turn for t in checkpoints.turns()] == ["t3", "t4"]
    with pytest.raises(CheckpointError):
        checkpoints.undo_turn(workdir, "t1")
    checkpoints.undo_turn(workdir, "t3")
    assert (workdir / "f.txt").read_bytes() == bytes([2]) * 4096


def test_a_checkpoint_of_another_folder_is_refused_in_words(
        checkpoints: CheckpointStore, workdir: Path, tmp_path: Path) -> None:
    (workdir / "a").write_text("1")
    agent_turn(checkpoints, workdir, "t1", lambda: (workdir / "a").write_text("2"))
    other = tmp_path / "moved"
    other.mkdir()
    with pytest.raises(CheckpointError, match="now works in"):
        checkpoints.undo_turn(other, "t1")
    with pytest.raises(CheckpointError, match="does not exist"):
        checkpoints.checkpoint(tmp_path / "missing", kind="tool_round", turn="t2")


def test_a_file_hard_linked_outside_is_replaced_not_written_through(
        checkpoints: CheckpointStore, workdir: Path, tmp_path: Path) -> None:
    (workdir / "a.txt").write_text("mine\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("outside\n")

    def link() -> None:
        (workdir / "a.txt").unlink()
        os.link(outside, workdir / "a.txt")

    agent_turn(checkpoints, workdir, "t1", link)
    checkpoints.undo_turn(workdir, "t1")
    assert (workdir / "a.txt").read_text() == "mine\n"
    assert outside.read_text() == "outside\n"


def test_a_long_chain_of_small_checkpoints_restores_and_prunes_from_a_fresh_store(
        tmp_path: Path, workdir: Path) -> None:
    root = tmp_path / "cp"
    for i in range(40):
        (workdir / f"f{i:02d}.txt").write_text(f"{i}\n")
    store = CheckpointStore(root)
    for n in range(25):  # deeper than one chain of deltas
        agent_turn(store, workdir, f"t{n}",
                   lambda n=n: (workdir / f"f{n:02d}.txt").write_text(f"turn {n}\n"))
    assert len(list((root / "manifests").glob("*.json"))) > 20

    fresh = CheckpointStore(root)  # reads every chain back from disk
    early = next(c for c in fresh.checkpoints() if c.turn == "t3")
    fresh.restore_to(workdir, early.id)
    assert (workdir / "f02.txt").read_text() == "turn 2\n"
    assert [(workdir / f"f{i:02d}.txt").read_text() for i in (3, 10, 24)] == \
        ["3\n", "10\n", "24\n"]

    again = CheckpointStore(root)
    again.prune(keep_turns=3)
    third = CheckpointStore(root)
    last = third.turns()[-1]
    third.undo_turn(workdir, last.turn)  # the restore, undone from pruned storage
    assert (workdir / "f24.txt").read_text() == "turn 24\n"
    assert (workdir / "f03.txt").read_text() == "turn 3\n"


def test_a_fifo_met_where_a_file_was_does_not_hang_the_checkpoint(
        checkpoints: CheckpointStore, workdir: Path) -> None:
    # The scan stores only what it saw as a regular file; one swapped for a FIFO since
    # must fail at once rather than wait for a writer that never comes.
    os.mkfifo(workdir / "pipe")
    folder = os.open(workdir, os.O_RDONLY)
    try:
        with pytest.raises(OSError, match="not a regular file"):
            checkpoints.objects.put_file("pipe", dir_fd=folder)
    finally:
        os.close(folder)
    taken = checkpoints.checkpoint(workdir, kind="tool_round", turn="t1")
    assert "pipe" not in checkpoints.entries_of(taken.id)
