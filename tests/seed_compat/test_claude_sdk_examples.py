"""The "Coming from claude-agent-sdk" page's examples, run as scripts against the scripted server.

Each script in ``examples/from_claude_sdk/`` is the runnable row of the page's
map (docs/claude-agent-sdk.md); it runs as a subprocess, as a person would run
it, and the test reads what it printed and what reached the server.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from desktop_agent.testing import ScriptedServer, script
from desktop_agent.testing.script import Script

pytestmark = pytest.mark.timeout(180)
ROOT = Path(__file__).resolve().parents[2]


def run_example(server: ScriptedServer, name: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("DESKTOP_AGENT_")}
    environment.update(PYTHONPATH=str(ROOT), DESKTOP_AGENT_BASE_URL=server.base_url,
                       DESKTOP_AGENT_MODEL="test-model")
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "from_claude_sdk" /
                                               f"{name}.py")],
                          capture_output=True, text=True, env=environment, timeout=150,
                          check=False)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done


def test_subagents(server: ScriptedServer) -> None:
    scripts: dict[str, list[Script]] = {
        "main": [script.tool_calls([("delegate", {"agent": "reviewer",
                                                  "prompt": "Review parser.py"})]),
                 script.text("The reviewer says quoted commas break parse_row().")],
        "reviewer": [script.tool_calls([("read_file", {"path": "parser.py"})]),
                     script.text("parse_row() splits quoted commas (parser.py:2).")]}
    lock = threading.Lock()

    def respond(body: dict[str, Any]) -> Script:
        who = "reviewer" if "You review code." in body["messages"][0]["content"] else "main"
        with lock:
            return scripts[who].pop(0)

    server.responder = respond
    lines = run_example(server, "subagents").stdout.splitlines()
    assert "[asked] the subagent reviewer wants read_file" in lines
    assert ("[reviewer] 2 request(s), answer: parse_row() splits quoted commas "
            "(parser.py:2).") in lines
    assert "[delegate result] parse_row() splits quoted commas (parser.py:2)." in lines
    assert lines[-1] == "The reviewer says quoted commas break parse_row()."


def test_plan_mode(server: ScriptedServer) -> None:
    server.enqueue(script.tool_calls([("exit_plan_mode", {"plan": "1. write hello.txt"})]),
                   script.tool_calls([("write_file", {"path": "hello.txt",
                                                      "content": "hello"})]),
                   script.text("Done."))
    lines = run_example(server, "plan_mode").stdout.splitlines()
    assert "[plan] 1. write hello.txt" in lines
    assert not any(line.startswith("[asked]") for line in lines)  # the edit ran unasked
    assert "mode now: acceptEdits" in lines
    assert "files: ['hello.txt']" in lines
    first = server.requests[0]
    assert "exit_plan_mode" in [t["function"]["name"] for t in first["tools"]]
    assert "plan mode" in first["messages"][0]["content"]  # the model was told
    assert "exit_plan_mode" not in [t["function"]["name"] for t in server.requests[1]["tools"]]


def test_lifecycle_hooks(server: ScriptedServer) -> None:
    server.enqueue(script.text("Air scatters blue sunlight more than red."),
                   script.text("Scattered sunlight looks blue."))
    lines = run_example(server, "lifecycle_hooks").stdout.splitlines()
    assert lines[0] == "[SessionStart] SessionStart"
    assert "[Stop] last answer: Scattered sunlight looks blue." in lines
    assert "[SessionEnd]" in lines
    assert "[result] success, 2 request(s): Scattered sunlight looks blue." in lines
    # the Stop hook's reason reached the model as the person's words
    assert server.requests[1]["messages"][-1] == {
        "role": "user", "content": "Say it in five words or fewer."}


def test_sessions(server: ScriptedServer) -> None:
    server.enqueue(script.text("Day 1: the old town."), script.text("Day 2: the hills."),
                   script.text("Paris: the Louvre."),
                   script.tool_calls([("write_file", {"path": "notes.txt",
                                                      "content": "draft\n"})]),
                   script.text("Written."))
    lines = run_example(server, "sessions").stdout.splitlines()
    assert "Day 2: the hills." in lines and "Paris: the Louvre." in lines
    assert "conversations: 2" in lines
    assert "notes.txt after rewind: original" in lines
    resumed, forked = server.requests[1]["messages"], server.requests[2]["messages"]
    assert [m["content"] for m in resumed] == [
        "Plan a day in Lyon.", "Day 1: the old town.", "And a second day?"]
    assert [m["content"] for m in forked] == ["Plan a day in Lyon.", "Paris instead, please."]
