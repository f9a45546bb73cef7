"""Checkpoints through a real session: a scripted turn's real sandboxed bash, then undo.

The model is the ScriptedServer, the command runs in real bubblewrap, the
folder and the checkpoint store are real files; undo and restore go through
the same session methods the window and the REST server call.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from desktop_agent.session import events as ev
from desktop_agent.session.conversation import ConversationSession
from desktop_agent.session.files.file_checkpoints import checkpoints_folder
from desktop_agent.session.lifecycle.deletion import delete_conversation
from desktop_agent.session.tools.config import AppConfig
from desktop_agent.session.tools.tool_catalog import ToolCatalog
from desktop_agent.session.turn.options import SessionEnvironment
from desktop_agent.store import Store
from desktop_agent.testing import ScriptedServer, script
from desktop_agent.workspace.checkpoints import RestoreConflictError

BINARY = bytes(range(256)) * 40 + b"\x00"

pytestmark = pytest.mark.usefixtures("bubblewrap")


def make_project(root: Path, outside: Path) -> None:
    (root / "src" / "lib").mkdir(parents=True)
    (root / "src" / "tool.sh").write_text("#!/bin/sh\necho tool\n")
    (root / "src" / "tool.sh").chmod(0o755)
    (root / "src" / "lib" / "data.bin").write_bytes(BINARY)
    (root / "src" / "lib" / "data.bin").chmod(0o600)
    (root / "src" / "lib").chmod(0o750)
    (root / "src" / "inside").symlink_to("lib/data.bin")
    outside.mkdir()
    (outside / "keep.txt").write_text("not the agent's\n")
    (root / "src" / "outside").symlink_to(outside / "keep.txt")
    (root / "notes.md").write_text("first\n")


def tree(root: Path) -> dict[str, tuple[str, int, bytes | str]]:
    found: dict[str, tuple[str, int, bytes | str]] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            full = Path(folder, name)
            st = full.lstat()
            rel = full.relative_to(root).as_posix()
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", 0, os.readlink(full))
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = ("dir", stat.S_IMODE(st.st_mode), b"")
            else:
                found[rel] = ("file", stat.S_IMODE(st.st_mode), full.read_bytes())
    return found


class Sessions:
    def __init__(self, store: Store, data_dir: Path, server: ScriptedServer) -> None:
        self.store, self.data_dir, self.server = store, data_dir, server
        self.opened: list[ConversationSession] = []

    def open(self, conversation_id: str) -> ConversationSession:
        config = AppConfig(self.data_dir / "config.json")
        env = SessionEnvironment(tools=ToolCatalog(config=config, include_mcp=False),
                                 config=config)

        async def never_asked(question: Any) -> Any:
            raise AssertionError(f"asked about {question}")

        session = ConversationSession(self.store, conversation_id, env, never_asked,
                                      owner="test")
        events: list[ev.SessionEvent] = []
        session.subscribe(events.append)
        session.events = events  # type: ignore[attr-defined]
        self.opened.append(session)
        return session

    def new(self, workdir: Path, **settings: Any) -> ConversationSession:
        record = self.store.create_conversation(title="Undo test", settings={
            "base_url": self.server.base_url, "model": "test-model", "workdir": str(workdir),
            "tools": ["bash", "read_file", "write_file"], "confirm_tools": False, **settings})
        return self.open(record.id)


@pytest.fixture
async def sessions(store: Store, data_dir: Path, model_server: ScriptedServer) -> Any:
    made = Sessions(store, data_dir, model_server)
    yield made
    for session in made.opened:
        await session.close()


async def turn(session: ConversationSession, server: ScriptedServer, prompt: str,
               command: str) -> None:
    server.enqueue(script.tool_calls([("bash", {"command": command})]), script.text("Done."))
    session.send(prompt)
    assert session.task is not None
    await session.task


async def test_a_bash_turn_that_deletes_src_is_undone_byte_for_byte_after_a_restart(
        sessions: Sessions, model_server: ScriptedServer, tmp_path: Path,
        data_dir: Path) -> None:
    workdir = tmp_path / "project"
    make_project(workdir, tmp_path / "outside")
    before = tree(workdir)
    session = sessions.new(workdir)

    await turn(session, model_server, "clean up", "rm -rf src && echo x > new.txt")

    assert not (workdir / "src").exists()  # the sandboxed command really ran
    assert (workdir / "new.txt").read_text() == "x\n"
    [changed] = [e for e in session.events if isinstance(e, ev.FilesChanged)]
    assert {(c.path, c.change) for c in changed.changes.changes} >= {
        ("src/tool.sh", "deleted"), ("src/lib/data.bin", "deleted"), ("src/inside", "deleted"),
        ("new.txt", "added")}
    folder = checkpoints_folder(session.conversation_id)
    assert folder.is_relative_to(data_dir) and not folder.is_relative_to(workdir)

    reopened = sessions.open(session.conversation_id)  # as after a restart
    report = await reopened.undo_turn()

    assert tree(workdir) == before
    assert not (workdir / "new.txt").exists()
    assert os.readlink(workdir / "src" / "outside") == str(tmp_path / "outside" / "keep.txt")
    assert (tmp_path / "outside" / "keep.txt").read_text() == "not the agent's\n"
    assert "new.txt" in report.applied.removed


async def test_a_file_edited_by_hand_after_the_agent_is_a_conflict_not_overwritten(
        sessions: Sessions, model_server: ScriptedServer, tmp_path: Path) -> None:
    workdir = tmp_path / "project"
    workdir.mkdir()
    (workdir / "notes.md").write_text("mine\n")
    session = sessions.new(workdir)
    await turn(session, model_server, "edit", "echo agent > notes.md && echo b > other.md")
    (workdir / "notes.md").write_text("agent\nmy own line after the agent\n")

    with pytest.raises(RestoreConflictError, match=r"notes\.md") as raised:
        await session.undo_turn()

    assert raised.value.paths == ["notes.md"]
    assert (workdir / "notes.md").read_text() == "agent\nmy own line after the agent\n"
    assert (workdir / "other.md").exists()  # nothing at all was restored
    await session.undo_turn(force=True)
    assert (workdir / "notes.md").read_text() == "mine\n"
    assert not (workdir / "other.md").exists()


async def test_restore_to_before_a_message_can_move_the_conversation_to_a_new_branch(
        sessions: Sessions, model_server: ScriptedServer, tmp_path: Path,
        store: Store) -> None:
    workdir = tmp_path / "project"
    workdir.mkdir()
    session = sessions.new(workdir)
    await turn(session, model_server, "one", "echo 1 > a.txt")
    await turn(session, model_server, "two", "echo 2 > a.txt && echo b > b.txt")
    second = [r for r in session.path if r.role == "user"][1]

    report = await session.restore_files(second.id, branch=True)

    assert report is not None
    assert (workdir / "a.txt").read_text() == "1\n"
    assert not (workdir / "b.txt").exists()
    path = store.active_path(session.conversation_id)
    assert [r.role for r in path][-1] == "assistant"
    assert second.id not in [r.id for r in path]
    assert len([r for r in path if r.role == "user"]) == 1
    assert store.get_message(second.id) is not None  # the old branch is kept


async def test_a_read_only_round_takes_no_checkpoint_and_delete_removes_them(
        sessions: Sessions, model_server: ScriptedServer, tmp_path: Path,
        store: Store) -> None:
    workdir = tmp_path / "project"
    workdir.mkdir()
    (workdir / "a.txt").write_text("a\n")
    session = sessions.new(workdir)
    model_server.enqueue(script.tool_calls([("read_file", {"path": "a.txt"})]),
                         script.text("It says a."))
    session.send("read it")
    assert session.task is not None
    await session.task
    assert await session.checkpoints.checkpoints() == []

    await turn(session, model_server, "write", "echo b > b.txt")
    assert checkpoints_folder(session.conversation_id).is_dir()
    await delete_conversation(store, session.conversation_id)
    assert not checkpoints_folder(session.conversation_id).exists()


async def test_a_folder_that_cannot_be_recorded_is_said_and_the_turn_still_runs(
        store: Store, data_dir: Path, model_server: ScriptedServer) -> None:
    from desktop_agent.core.tooling.tools import tool

    ran: list[str] = []

    @tool("touch_notes", "Write the notes file", {})
    async def touch_notes(args: dict[str, Any]) -> str:
        ran.append("yes")
        return "written"

    config = AppConfig(data_dir / "config.json")
    env = SessionEnvironment(tools=ToolCatalog([touch_notes], config=config,
                                               include_builtin=False, include_mcp=False),
                             config=config)
    inside = data_dir / "not-a-working-folder"  # the work-folder rule refuses it
    inside.mkdir()
    record = store.create_conversation(title="No checkpoint", settings={
        "base_url": model_server.base_url, "model": "test-model", "workdir": str(inside),
        "tools": ["touch_notes"], "confirm_tools": False})

    async def never_asked(question: Any) -> Any:
        raise AssertionError(f"asked about {question}")

    session = ConversationSession(store, record.id, env, never_asked, owner="test")
    events: list[ev.SessionEvent] = []
    session.subscribe(events.append)
    model_server.enqueue(script.tool_calls([("touch_notes", {})]), script.text("Done."))
    session.send("write them")
    assert session.task is not None
    await session.task

    assert ran == ["yes"]
    assert events[-1] == ev.StateChanged("idle", "complete")
    [notice] = [e for e in events if isinstance(e, ev.Notice)]
    assert "undo cannot bring back" in notice.text
    await session.close()


async def test_checkpoints_past_the_latest_50_turns_go_and_the_kept_ones_still_undo(
        sessions: Sessions, model_server: ScriptedServer, tmp_path: Path) -> None:
    from desktop_agent.session import CheckpointError
    from desktop_agent.workspace.checkpoints import KEEP_TURNS, CheckpointStore

    workdir = tmp_path / "project"
    workdir.mkdir()
    session = sessions.new(workdir)
    # Old data: 70 turns recorded before pruning held (an older version, say).
    old = CheckpointStore(checkpoints_folder(session.conversation_id))
    for n in range(70):
        old.checkpoint(workdir, kind="tool_round", turn=f"old-{n}")
        (workdir / "log.txt").write_text(f"old turn {n}\n")
        old.close_turn(workdir, f"old-{n}")

    await turn(session, model_server, "once more", "echo new > log.txt && echo b > b.txt")

    kept = [t.turn for t in CheckpointStore(checkpoints_folder(session.conversation_id)).turns()]
    assert len(kept) == KEEP_TURNS
    assert "old-0" not in kept and "old-20" not in kept and "old-69" in kept
    with pytest.raises(CheckpointError):
        await session.undo_turn("old-5")
    await session.undo_turn()  # the newest turn, kept
    assert (workdir / "log.txt").read_text() == "old turn 69\n"
    assert not (workdir / "b.txt").exists()
    await session.undo_turn("old-69")  # and an old one within the 50
    assert (workdir / "log.txt").read_text() == "old turn 68\n"


async def test_checkpoints_a_deleted_conversation_left_behind_are_removed_and_others_kept(
        sessions: Sessions, model_server: ScriptedServer, tmp_path: Path,
        store: Store) -> None:
    from desktop_agent.session import prune_left_behind

    gone, kept = tmp_path / "gone", tmp_path / "kept"
    gone.mkdir()
    kept.mkdir()
    (kept / "a.txt").write_text("mine\n")
    first, second = sessions.new(gone), sessions.new(kept)
    await turn(first, model_server, "write", "echo x > x.txt")
    await turn(second, model_server, "write", "echo agent > a.txt")
    # The rows went but not the folders (the process stopped in between, say).
    store.delete_conversation(first.conversation_id)
    await first.close()
    unrelated = checkpoints_folder(first.conversation_id).parent / "not-a-conversation"
    unrelated.mkdir()

    assert prune_left_behind(store) == 1

    assert not checkpoints_folder(first.conversation_id).exists()
    assert checkpoints_folder(second.conversation_id).is_dir() and unrelated.is_dir()
    await second.undo_turn()
    assert (kept / "a.txt").read_text() == "mine\n"
    assert prune_left_behind(store) == 0


def test_a_store_that_is_not_the_data_folders_own_removes_nothing(
        store: Store, tmp_path: Path) -> None:
    # serve on PostgreSQL (or any other database) beside a window on this data
    # folder: conversations it does not know are not its to call deleted.
    from desktop_agent.session import prune_left_behind

    theirs = checkpoints_folder("0123456789abcdef0123456789abcdef")
    theirs.mkdir(parents=True)
    with Store.open(tmp_path / "another.sqlite3") as other:
        assert prune_left_behind(other) == 0
    assert theirs.is_dir()
    assert prune_left_behind(store) == 1  # the folder's own database knows it is gone
    assert not theirs.exists()
