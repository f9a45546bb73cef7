"""The SDK guide (docs/sdk.md) and the README's example run as written, against the scripted server.

Each ``python`` block of both is executed: the address is pointed at
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

REPO = Path(__file__).resolve().parents[2]
PAGES = (REPO / "README.md", REPO / "docs" / "sdk.md")


def sdk_blocks(*, local_models: bool = False) -> list[str]:
    """The pages' Python blocks; those running a ``LocalModel`` only when asked.

    A ``LocalModel`` block starts the real engine with a real model, which the scripted
    server cannot stand in for: tests/engine/test_sdk_local_model.py runs those with
    SmolLM2, in the engine tier where llama.cpp is installed.
    """
    return [block for page in PAGES
            for block in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
            if ("LocalModel(" in block) == local_models]


def run_block(source: str, namespace: dict[str, Any]) -> None:
    code = compile(source, "<documentation>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(code, namespace)  # the documentation's own code
    if asyncio.iscoroutine(result):
        asyncio.run(result)


def test_the_sdk_guide_shows_structured_output_and_sessions() -> None:
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
    assert "You said: Name three uses of a paperclip." in out
    assert "Paris 2" in out
    assert "You said: Write a short poem about the sea." in out  # a command from a folder
    with Store.open() as store:  # the window's own database, in this test's data folder
        (conversation,) = store.list_conversations()
        texts = [r.message["content"] for r in store.active_path(conversation.id)]
    assert texts == ["Pick up where we left off", "You said: Pick up where we left off"]
