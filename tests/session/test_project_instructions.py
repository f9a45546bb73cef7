"""AGENTS.md in the working folder reaches the model's system prompt (a real request)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from desktop_agent.session.files.project_instructions import MAX_INSTRUCTION_BYTES
from desktop_agent.testing import ScriptedServer, script


async def finished(session: Any) -> None:
    for _ in range(1000):
        if not session.busy:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the turn did not end")


def system_text(request: dict[str, Any]) -> str:
    first = request["messages"][0]
    return str(first["content"]) if first["role"] == "system" else ""


async def turn(session: Any, model_server: ScriptedServer, text: str) -> dict[str, Any]:
    model_server.enqueue(script.text("Ok."))
    session.send(text)
    await finished(session)
    return model_server.requests[-1]


async def test_agents_md_reaches_the_request_and_a_change_reaches_the_next_turn(
        make_session: Any, model_server: ScriptedServer, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "AGENTS.md").write_text("Run tests with `make check`.\n", encoding="utf-8")
    session = make_session(workdir=str(folder), system_prompt="Be brief.", tools=[])

    first = system_text(await turn(session, model_server, "Hi"))
    assert first.startswith("Be brief.")
    assert "Run tests with `make check`." in first
    assert "AGENTS.md" in first

    instructions = session.project_instructions()
    assert instructions is not None and instructions.included and not instructions.truncated
    assert instructions.tokens() > 5

    agents = folder / "AGENTS.md"
    agents.write_text("Use tabs, never spaces.\n", encoding="utf-8")
    stat = agents.stat()  # same size is possible; the mtime moves on a real edit
    os.utime(agents, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    second = system_text(await turn(session, model_server, "Again"))
    assert "Use tabs, never spaces." in second
    assert "make check" not in second
    await session.close()


async def test_the_switch_leaves_it_out_and_claude_md_is_read_without_agents_md(
        make_session: Any, model_server: ScriptedServer, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "CLAUDE.md").write_text("Answer in French.", encoding="utf-8")
    session = make_session(workdir=str(folder), tools=[])
    assert "Answer in French." in system_text(await turn(session, model_server, "Hi"))

    session.update_settings(project_instructions=False)
    off = await turn(session, model_server, "Again")
    assert "Answer in French." not in system_text(off)
    found = session.project_instructions()
    assert found is not None and found.name == "CLAUDE.md" and not found.included
    await session.close()


async def test_a_long_file_is_cut_at_the_cap_and_says_so(
        make_session: Any, model_server: ScriptedServer, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "AGENTS.md").write_text("é" * MAX_INSTRUCTION_BYTES, encoding="utf-8")
    session = make_session(workdir=str(folder), tools=[])
    sent = system_text(await turn(session, model_server, "Hi"))
    assert sent.count("é") == MAX_INSTRUCTION_BYTES // 2
    assert "only its first 32,768 bytes are sent" in sent
    found = session.project_instructions()
    assert found is not None and found.truncated and found.size == 2 * MAX_INSTRUCTION_BYTES
    await session.close()


async def test_a_folder_without_the_file_sends_only_the_own_prompt(
        make_session: Any, model_server: ScriptedServer, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    session = make_session(workdir=str(folder), system_prompt="Be brief.", tools=[])
    assert system_text(await turn(session, model_server, "Hi")) == "Be brief."
    assert session.project_instructions() is None
    await session.close()


async def test_a_symlinked_agents_md_is_not_read(
        make_session: Any, model_server: ScriptedServer, tmp_path: Path) -> None:
    """A command could plant AGENTS.md -> a private file; the app reads outside the sandbox."""
    folder = tmp_path / "project"
    folder.mkdir()
    private = tmp_path / "id_rsa"
    private.write_text("PRIVATE KEY MATERIAL", encoding="utf-8")
    (folder / "AGENTS.md").symlink_to(private)
    (folder / "CLAUDE.md").symlink_to(private)
    session = make_session(workdir=str(folder), tools=[])
    request = await turn(session, model_server, "Hi")
    assert "PRIVATE KEY" not in str(request["messages"])
    assert session.project_instructions() is None
    await session.close()
