"""Command previews through a real session: a scripted model's bash runs on a real overlay.

The model is the ScriptedServer, the command runs in real bubblewrap on a
real overlay, and the person is a listener that applies or discards the
preview the moment its card is announced, through the same session methods
the window and the REST server call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from desktop_agent.session import (
    PreviewConflictError,
    PreviewNotFoundError,
    preview_status,
)
from desktop_agent.session import events as ev
from desktop_agent.session.approvals.approval_broker import ApprovalAnswer, ApprovalChoice
from desktop_agent.session.conversation import ConversationSession
from desktop_agent.session.files.checkpoint_paths import previews_folder
from desktop_agent.session.lifecycle.deletion import delete_conversation
from desktop_agent.session.tools.config import AppConfig
from desktop_agent.session.tools.tool_catalog import ToolCatalog
from desktop_agent.session.turn.options import SessionEnvironment
from desktop_agent.store import Store
from desktop_agent.testing import ScriptedServer, script
from tests.session.conftest import Asker
from tests.tools.folder_snapshot import snapshot

pytestmark = pytest.mark.usefixtures("bubblewrap", "overlay")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('app')\n")
    (root / "src" / "util.py").write_text("def util():\n    return 1\n")
    (root / "notes.md").write_text("first\n")
    return root


class Person:
    """Decides each preview as its card is announced (apply, discard, or a custom step)."""

    def __init__(self, session: ConversationSession,
                 decide: Callable[[ev.CommandPreviewReady], Any]) -> None:
        self.session = session
        self.cards: list[ev.CommandPreviewReady] = []
        self.tasks: list[asyncio.Task[Any]] = []
        self.errors: list[BaseException] = []
        self._decide = decide
        session.subscribe(self._on_event)

    def _on_event(self, event: ev.SessionEvent) -> None:
        if isinstance(event, ev.CommandPreviewReady):
            self.cards.append(event)
            self.tasks.append(asyncio.ensure_future(self._run(event)))

    async def _run(self, event: ev.CommandPreviewReady) -> None:
        try:
            await self._decide(event)
        except Exception as exc:
            self.errors.append(exc)


@pytest.fixture
async def open_session(store: Store, data_dir: Path, model_server: ScriptedServer,
                       asker: Asker) -> Any:
    opened: list[ConversationSession] = []

    def make(workdir: Path, approval_timeout: float | None = 60.0,
             **settings: Any) -> ConversationSession:
        config = AppConfig(data_dir / "config.json")
        env = SessionEnvironment(tools=ToolCatalog(config=config, include_mcp=False),
                                 config=config, approval_timeout=approval_timeout)
        record = store.create_conversation(title="Preview test", settings={
            "base_url": model_server.base_url, "model": "test-model", "workdir": str(workdir),
            "tools": ["bash"], "confirm_tools": False, **settings})
        session = ConversationSession(store, record.id, env, asker, owner="test")
        events: list[ev.SessionEvent] = []
        session.subscribe(events.append)
        session.events = events  # type: ignore[attr-defined]
        opened.append(session)
        return session

    yield make
    for session in opened:
        await session.close()


async def _run(session: ConversationSession, server: ScriptedServer, command: str) -> None:
    """Run one turn whose model calls bash once."""
    server.enqueue(script.tool_calls([("bash", {"command": command})]), script.text("Done."))
    session.send("go")
    assert session.task is not None
    await session.task


async def _turn(session: ConversationSession, server: ScriptedServer, command: str) -> str:
    """Run one turn whose model calls bash once; the bash result as stored."""
    await _run(session, server, command)
    results = [e for e in session.events  # type: ignore[attr-defined]
               if isinstance(e, ev.ToolResultArrived)]
    return results[-1].content


async def test_preview_then_apply_changes_the_folder_and_undo_puts_it_back(
        open_session: Any, model_server: ScriptedServer, project: Path) -> None:
    session = open_session(project, command_preview="preview")
    before = snapshot(project)

    async def apply(event: ev.CommandPreviewReady) -> None:
        card = event.card
        assert card.summary == "creates 1 file, deletes 2"
        assert snapshot(project) == before  # nothing reached the folder yet
        assert "new.txt" in card.diffs and card.diffs["new.txt"].added == 1
        await session.apply_preview(card.id)

    person = Person(session, apply)
    result = await _turn(session, model_server, "rm -rf src && echo made > new.txt && echo ok")
    assert not person.errors
    assert "ok" in result and result.rstrip().endswith("preview outcome: applied")
    assert not (project / "src").exists() and (project / "new.txt").read_text() == "made\n"
    settled = [e for e in session.events if isinstance(e, ev.CommandPreviewSettled)]
    assert [(s.outcome, s.text) for s in settled] == [("applied", "applied")]
    assert settled[0].tool_use_id == person.cards[0].card.tool_use_id is not None
    # Applied inside the turn: the turn's checkpoint has it, and undo puts it back.
    [changed] = [e for e in session.events if isinstance(e, ev.FilesChanged)]
    assert {c.path for c in changed.changes.changes} >= {"new.txt", "src/app.py"}
    await session.undo_turn()
    assert {p: v[:2] for p, v in snapshot(project).items()} == \
        {p: v[:2] for p, v in before.items()}
    assert not any(previews_folder(session.conversation_id).iterdir())


async def test_discard_leaves_the_folder_byte_for_byte_and_tells_the_model_why(
        open_session: Any, model_server: ScriptedServer, project: Path) -> None:
    session = open_session(project, command_preview="preview")
    before = snapshot(project)

    async def discard(event: ev.CommandPreviewReady) -> None:
        await session.discard_preview(event.card.id, "it deletes my sources")

    Person(session, discard)
    result = await _turn(session, model_server, "rm -rf src")
    assert result.rstrip().endswith("preview outcome: discarded: it deletes my sources")
    assert snapshot(project) == before
    assert not [e for e in session.events if isinstance(e, ev.FilesChanged)]
    with pytest.raises(PreviewNotFoundError):
        await session.discard_preview("no-such-preview")


async def test_a_file_edited_meanwhile_is_a_conflict_until_applied_anyway(
        open_session: Any, model_server: ScriptedServer, project: Path) -> None:
    session = open_session(project, command_preview="preview")
    conflicts: list[list[str]] = []

    async def edit_then_apply(event: ev.CommandPreviewReady) -> None:
        (project / "notes.md").write_text("my own edit\n")
        try:
            await session.apply_preview(event.card.id)
        except PreviewConflictError as exc:
            conflicts.append(exc.paths)
            await session.apply_preview(event.card.id, force=True)

    Person(session, edit_then_apply)
    result = await _turn(session, model_server, "echo agent > notes.md")
    assert conflicts == [["notes.md"]]
    assert "preview outcome: applied (overwriting 1 file changed meanwhile)" in result
    assert (project / "notes.md").read_text() == "agent\n"


async def test_preview_on_the_approval_card_previews_just_that_call(
        open_session: Any, model_server: ScriptedServer, project: Path, asker: Asker) -> None:
    session = open_session(project, confirm_tools=True)
    asker.answers = [ApprovalAnswer(ApprovalChoice.ALLOW_ONCE, preview=True),
                     ApprovalAnswer(ApprovalChoice.ALLOW_ONCE)]

    async def discard(event: ev.CommandPreviewReady) -> None:
        await session.discard_preview(event.card.id, "no")

    Person(session, discard)
    first = await _turn(session, model_server, "echo one > one.txt")
    assert asker.questions[0].can_preview is True
    assert "preview outcome: discarded: no" in first and not (project / "one.txt").exists()
    second = await _turn(session, model_server, "echo two > two.txt")
    assert "preview" not in second and (project / "two.txt").read_text() == "two\n"


async def test_no_decision_in_time_discards(
        open_session: Any, model_server: ScriptedServer, project: Path) -> None:
    session = open_session(project, approval_timeout=0.5, command_preview="preview")
    before = snapshot(project)
    result = await _turn(session, model_server, "echo late > late.txt")
    assert "preview outcome: discarded: no decision came within 0.5 s" in result
    assert snapshot(project) == before
    assert not session.pending_previews


async def test_stopping_the_turn_discards_the_waiting_preview(
        open_session: Any, model_server: ScriptedServer, project: Path) -> None:
    session = open_session(project, command_preview="preview")
    before = snapshot(project)

    async def stop(_event: ev.CommandPreviewReady) -> None:
        await session.interrupt()

    Person(session, stop)
    await _run(session, model_server, "rm -rf src")
    settled = [e for e in session.events if isinstance(e, ev.CommandPreviewSettled)]
    assert [s.text for s in settled] == ["discarded: the turn was stopped"]
    assert snapshot(project) == before
    assert not any(previews_folder(session.conversation_id).iterdir())


async def test_a_rest_command_preview_waits_and_its_apply_is_undoable(
        open_session: Any, project: Path) -> None:
    session = open_session(project)
    before = snapshot(project)
    card = await session.preview_command("rm src/util.py && echo hi >> notes.md", project,
                                         time_limit=60, env_secrets={}, output_cap=10_000)
    assert card.tool_use_id is None and card.summary == "changes 1 file, deletes 1"
    assert [c.id for c in session.pending_previews] == [card.id]
    assert not session.can_evict()
    assert snapshot(project) == before
    await session.apply_preview(card.id)
    assert not (project / "src" / "util.py").exists()
    [changed] = [e for e in session.events if isinstance(e, ev.FilesChanged)]
    assert changed.changes.kind == "command"
    await session.undo_turn(changed.changes.turn)
    assert {p: v[:2] for p, v in snapshot(project).items()} == \
        {p: v[:2] for p, v in before.items()}
    assert session.can_evict() and not session.pending_previews


async def test_deleting_the_conversation_removes_its_previews(
        open_session: Any, store: Store, project: Path) -> None:
    session = open_session(project)
    card = await session.preview_command("echo x > x.txt", project, time_limit=60,
                                         env_secrets={}, output_cap=10_000)
    folder = previews_folder(session.conversation_id)
    assert (folder / card.id).is_dir()
    await session.close()
    assert not (folder / card.id).exists()  # closing discards what waits
    await delete_conversation(store, session.conversation_id)
    assert not folder.exists()


async def test_the_setting_says_whether_previews_work_here() -> None:
    status = await asyncio.to_thread(preview_status, {"command_preview": "preview"})
    assert status.chosen and status.available and "Apply or Discard" in status.detail
    off = await asyncio.to_thread(preview_status, {"sandbox": "off"})
    assert not off.available and "Commands run on the folder" in off.detail


async def test_a_secret_the_command_writes_into_a_file_is_blanked_on_the_card(
        open_session: Any, project: Path) -> None:
    session = open_session(project)
    token = "tok-3f9a8c7e1b2d4f6a"
    card = await session.preview_command('echo "key=$DEPLOY_TOKEN" > deploy.env', project,
                                         time_limit=60, env_secrets={"DEPLOY_TOKEN": token},
                                         output_cap=10_000)
    shown = repr(card.to_dict())
    assert token not in shown
    assert "key=[secret DEPLOY_TOKEN redacted]" in card.diffs["deploy.env"].unified_text()
    await session.apply_preview(card.id)  # the folder gets what the command wrote
    assert (project / "deploy.env").read_text() == f"key={token}\n"


def test_preview_folders_a_crash_left_are_swept_when_old(tmp_path: Path) -> None:
    import os
    import time

    from desktop_agent.session.files.command_previews import sweep_previews

    old, fresh = tmp_path / "old", tmp_path / "fresh"
    for folder in (old, fresh):
        (folder / "upper" / "work").mkdir(parents=True)
    os.chmod(old / "upper" / "work", 0)  # as overlayfs leaves work/work
    day_ago = time.time() - 2 * 24 * 3600
    os.utime(old, (day_ago, day_ago))
    assert sweep_previews(tmp_path, 24 * 3600) == 1
    assert not old.exists() and fresh.is_dir()
