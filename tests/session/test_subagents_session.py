"""Subagents in a conversation: definitions from config.json and the folder, one undo."""

from __future__ import annotations

import json
import threading
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from desktop_agent.session import (
    ConversationSession,
    SessionEnvironment,
    ToolCatalog,
)
from desktop_agent.session import events as ev
from desktop_agent.session.approvals.approval_broker import ApprovalAnswer, ApprovalChoice
from desktop_agent.session.tools.config import AppConfig
from desktop_agent.store import Store
from desktop_agent.testing import ScriptedServer, script
from desktop_agent.testing.script import Script

pytestmark = pytest.mark.timeout(90)


class Router:
    """Answers by who asks (the main agent or a subagent, by its system prompt)."""

    def __init__(self) -> None:
        self.scripts: dict[str, list[Script]] = defaultdict(list)
        self.bodies: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Script:
        system = body["messages"][0].get("content") or ""
        who = next((n for n in ("writer", "reader") if f"You are the {n}." in system), "main")
        with self._lock:
            self.bodies[who].append(body)
            return self.scripts[who].pop(0)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / ".claude" / "agents").mkdir(parents=True)
    (folder / "notes.txt").write_text("old\n")
    (folder / ".claude" / "agents" / "reader.md").write_text(
        "---\nname: reader\ndescription: Reads files.\ntools: read_file\n---\nYou are the reader.")
    return folder


@pytest.fixture
def session(store: Store, data_dir: Path, model_server: ScriptedServer, asker: Any,
            project: Path) -> Any:
    (data_dir / "config.json").write_text(json.dumps({"agents": {
        "writer": {"description": "Writes files.", "prompt": "You are the writer.",
                   "tools": ["write_file"]},
        "searcher": {"description": "Searches the web.", "prompt": "You search.",
                     "tools": ["web_search"]}}}))
    config = AppConfig(data_dir / "config.json")
    env = SessionEnvironment(tools=ToolCatalog([], config=config), config=config)
    record = store.create_conversation(title="subagents", settings={
        "base_url": model_server.base_url, "model": "test-model", "workdir": str(project),
        "tools": ["read_file", "write_file"]})
    made = ConversationSession(store, record.id, env, asker, owner="test")
    made.events = []  # type: ignore[attr-defined]
    made.subscribe(made.events.append)  # type: ignore[attr-defined]
    return made


async def test_a_subagent_writes_under_the_same_broker_and_undo_takes_it_back(
        session: Any, model_server: ScriptedServer, asker: Any, project: Path,
        store: Store) -> None:
    router = Router()
    model_server.responder = router
    router.scripts["main"] += [
        script.tool_calls([("delegate", {"agent": "writer", "prompt": "Update notes.txt"})]),
        script.text("The writer updated the notes.")]
    router.scripts["writer"] += [
        script.tool_calls([("write_file", {"path": "notes.txt", "content": "new\n"})]),
        script.text("Wrote notes.txt.")]
    asker.answers.append(ApprovalAnswer(ApprovalChoice.ALLOW_ONCE))
    try:
        session.send("Please update the notes")
        await session.task
        assert (project / "notes.txt").read_text() == "new\n"
        # the person was asked once, about the subagent's write, and told who asks
        assert [(q.tool_name, q.context.agent) for q in asker.questions] == [
            ("write_file", "writer")]
        offered = [t["function"]["name"] for t in router.bodies["main"][0]["tools"]]
        assert offered[-1] == "delegate"
        described = router.bodies["main"][0]["tools"][-1]["function"]["description"]
        assert "writer: Writes files." in described and "reader: Reads files." in described
        assert "searcher" not in described  # it needs a tool this conversation does not offer
        notices = " ".join(e.text for e in session.events if isinstance(e, ev.Notice))
        assert "'web_search'" in notices and "not offered in this conversation" in notices
        steps = [(e.step, e.name) for e in session.events
                 if isinstance(e, ev.SubagentReported)]
        assert steps[0] == ("started", None) and steps[-1] == ("finished", None)
        assert ("tool_call", "write_file") in steps and ("tool_result", "write_file") in steps
        # the delegation's result keeps a record of the run, for the card when reopened
        result = next(r for r in store.active_path(session.conversation_id)
                      if r.role == "tool" and r.metadata.get("subagent"))
        run = result.metadata["subagent"]
        assert (run["agent"], run["model"], run["requests"]) == ("writer", "test-model", 2)
        assert run["calls"][0]["name"] == "write_file" and run["text"] == "Wrote notes.txt."
        # the subagent's change belongs to the main agent's turn: one undo takes it back
        changed = [e for e in session.events if isinstance(e, ev.FilesChanged)]
        assert [c.path for c in changed[0].changes.changes] == ["notes.txt"]
        await session.undo_turn()
        assert (project / "notes.txt").read_text() == "old\n"
    finally:
        await session.close()


@pytest.mark.parametrize("seconds", [0.049, 0.0449, 0.95, 12.3456])
def test_the_live_card_and_the_stored_record_show_the_same_time(seconds: float) -> None:
    # The card drew the live event's time and, reopened, the stored record's:
    # 0.049 s showed "0.0 s" live and "0.1 s" reopened (rounded twice).
    from desktop_agent.core.types import SubagentBlock
    from desktop_agent.session.turn.subagent_runs import SubagentRuns, reported

    event = reported(SubagentBlock("call-1", "checker", "checker-1", "finished",
                                   model="m", requests=2, tokens=10, seconds=seconds))
    assert event is not None
    runs = SubagentRuns()
    runs.note(event)
    record = runs.record_of("call-1")
    assert record is not None
    assert f"{record['seconds']:.1f}" == f"{event.seconds:.1f}"


@pytest.mark.usefixtures("bubblewrap")
async def test_a_subagents_command_runs_in_the_conversations_sandbox(
        store: Store, data_dir: Path, model_server: ScriptedServer, asker: Any,
        tmp_path: Path) -> None:
    # A subagent gets the conversation's own tool objects: its bash runs in the
    # same bubblewrap sandbox, so it can write in the working folder and nowhere else.
    project = tmp_path / "work"
    project.mkdir()
    # not under /tmp: the sandbox's own /tmp is private, so a write there "works" and vanishes
    outside = Path.home() / f".desktop-agent-subagent-{uuid.uuid4().hex}.txt"
    (data_dir / "config.json").write_text(json.dumps({"agents": {
        "writer": {"description": "Runs commands.", "prompt": "You are the writer.",
                   "tools": ["bash"]}}}))
    config = AppConfig(data_dir / "config.json")
    env = SessionEnvironment(tools=ToolCatalog([], config=config), config=config)
    record = store.create_conversation(title="sandboxed subagent", settings={
        "base_url": model_server.base_url, "model": "test-model", "workdir": str(project),
        "tools": ["bash"], "sandbox": "workdir"})
    session = ConversationSession(store, record.id, env, asker, owner="test")
    events: list[ev.SessionEvent] = []
    session.subscribe(events.append)
    router = Router()
    model_server.responder = router
    command = (f"echo in > inside.txt; echo out > {outside} || echo 'refused outside'; "
               "(echo owned > /etc/desktop-agent-test) 2>/dev/null || echo 'refused etc'")
    router.scripts["main"] += [
        script.tool_calls([("delegate", {"agent": "writer", "prompt": "Run it"})]),
        script.text("Done.")]
    router.scripts["writer"] += [
        script.tool_calls([("bash", {"command": command})]), script.text("Ran it.")]
    asker.answers.append(ApprovalAnswer(ApprovalChoice.ALLOW_ONCE))
    try:
        session.send("Delegate the command")
        await session.task
        assert [(q.tool_name, q.context.agent) for q in asker.questions] == [("bash", "writer")]
        assert (project / "inside.txt").read_text() == "in\n"
        assert not outside.exists()
        etc_file = Path("/etc") / "desktop-agent-test"
        assert not etc_file.exists()
        output = next(e.text for e in events if isinstance(e, ev.SubagentReported)
                      and e.step == "tool_result" and e.name == "bash")
        assert "refused outside" in output and "refused etc" in output
    finally:
        outside.unlink(missing_ok=True)
        await session.close()
