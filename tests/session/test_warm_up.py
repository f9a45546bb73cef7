"""Warming up before serving: the first turn then loads nothing on the event loop.

Run in a fresh interpreter (the test process has imported everything already):
warm up, then run a real turn with the built-in tools against the scripted
model server and list every module the turn imported. Each one would have been
imported on the event loop, stalling every stream the server was serving.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TURN_AFTER_WARM_UP = r"""
import asyncio, json, sys
from pathlib import Path
from desktop_agent.session.turn.warm_up import warm_up_turns
from desktop_agent.testing import ScriptedServer, script

warm = sys.argv[1] == "warm"
if warm:
    warm_up_turns()
from desktop_agent.session.tools.config import AppConfig
from desktop_agent.session.conversation import ConversationSession
from desktop_agent.session.turn.options import SessionEnvironment
from desktop_agent.session.tools.tool_catalog import ToolCatalog
from desktop_agent.store import Store

async def refuse(question):
    raise AssertionError("nothing asks here")

async def main() -> None:
    data = Path(sys.argv[2])
    store = Store.open(data / "conversations.sqlite3")
    config = AppConfig(data / "config.json")
    env = SessionEnvironment(tools=ToolCatalog([], include_builtin=True, config=config,
                                               workdirs_root=data / "workdirs"),
                             config=config)
    with ScriptedServer() as server:
        server.enqueue(script.text("hello there"))
        record = store.create_conversation(title="t", settings={
            "base_url": server.base_url, "model": "m"})
        session = ConversationSession(store, record.id, env, refuse, owner="test")
        before = set(sys.modules)
        session.send("hi")
        await session.task
        loaded = sorted(set(sys.modules) - before)
        print(json.dumps({"loaded": loaded, "state": session.state}))
    store.close()

asyncio.run(main())
"""


def _first_turn_imports(tmp_path: Path, mode: str) -> list[str]:
    data = tmp_path / mode
    data.mkdir()
    done = subprocess.run([sys.executable, "-c", TURN_AFTER_WARM_UP, mode, str(data)],
                          capture_output=True, text=True, timeout=120,
                          env={"DESKTOP_AGENT_DATA_DIR": str(data), "PATH": "/usr/bin:/bin",
                               "HOME": str(data)})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["state"] == "idle"
    return [name for name in report["loaded"]
            if name.split(".")[0] in {"desktop_agent", "aiohttp", "jsonschema", "pydantic",
                                            "anyio", "httpx", "httpcore", "h11", "openai"}]


def test_the_first_turn_after_warming_up_imports_nothing(tmp_path: Path) -> None:
    cold = _first_turn_imports(tmp_path, "cold")
    assert "desktop_agent.core.client" in cold  # the test can see what a turn loads
    warm = _first_turn_imports(tmp_path, "warm")
    assert warm == [], warm
