"""The README's SDK section runs as written, against the scripted server.

Each ``python`` block of the section is executed: the address is pointed at
the scripted server, and the names a snippet leaves to the reader
(``options``, ``conversation_id``) are given.
"""

from __future__ import annotations

import ast
import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from desktop_agent import AgentOptions
from desktop_agent.store import Store
from desktop_agent.testing import ScriptedServer, script

README = Path(__file__).resolve().parents[2] / "README.md"


def sdk_blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## The SDK"):]
    section = section[:section.index("\n## ", 1)]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def run_block(source: str, namespace: dict[str, Any]) -> None:
    code = compile(source, "<README>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(code, namespace)  # the README's own code
    if asyncio.iscoroutine(result):
        asyncio.run(result)


def test_the_sdk_section_shows_structured_output_and_sessions() -> None:
    blocks = sdk_blocks()
    assert any("output_type=" in b for b in blocks)
    assert any("session=" in b for b in blocks)


@pytest.mark.timeout(60)
def test_every_sdk_snippet_runs(capsys: pytest.CaptureFixture[str],
                                isolated_app_data: Path) -> None:
    with ScriptedServer() as server:
        options = AgentOptions(model="test-model", base_url=server.base_url)
        for source in sdk_blocks():
            source = source.replace("http://localhost:1234/v1", server.base_url)
            if "output_type=" in source:
                server.enqueue(script.text(json.dumps({"name": "Paris", "population": 2})))
            run_block(source, {"__name__": "readme", "options": options,
                               "conversation_id": None})
    out = capsys.readouterr().out
    assert "You said: What's the weather in Paris?" in out
    assert "Paris 2" in out
    with Store.open() as store:  # the window's own database, in this test's data folder
        (conversation,) = store.list_conversations()
        texts = [r.message["content"] for r in store.active_path(conversation.id)]
    assert texts == ["Pick up where we left off", "You said: Pick up where we left off"]
