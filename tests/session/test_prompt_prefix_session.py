"""Consecutive requests of a conversation share their prefix byte for byte (prefix caches hit).

Through the whole session layer: settings -> options (system prompt with AGENTS.md, the
tool catalog) -> the core's request, over real HTTP to the scripted server.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from desktop_agent.testing import ScriptedServer, script


async def finished(session: Any) -> None:
    for _ in range(1000):
        if not session.busy:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the turn did not end")


async def test_two_turns_share_system_tools_and_history_byte_for_byte(
        make_session: Any, model_server: ScriptedServer, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "AGENTS.md").write_text("Run tests with `make check`.\n", encoding="utf-8")
    session = make_session(workdir=str(folder), system_prompt="Be brief.")
    for text in ("Hi", "And again"):
        model_server.enqueue(script.text("Ok."))
        session.send(text)
        await finished(session)
    first, second = (json.dumps(r, ensure_ascii=False) for r in model_server.requests[:2])
    one, two = model_server.requests[:2]
    assert json.dumps(one["tools"]) == json.dumps(two["tools"])
    sent = [json.dumps(m, ensure_ascii=False) for m in one["messages"]]
    again = [json.dumps(m, ensure_ascii=False) for m in two["messages"]]
    assert again[:len(sent)] == sent  # system prompt (with AGENTS.md) and turn 1, unchanged
    assert "make check" in sent[0]
    assert first != second
    await session.close()
