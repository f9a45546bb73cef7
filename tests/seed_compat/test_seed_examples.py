"""The seed's 12 examples run unchanged (after the rename) against the scripted server.

Each example under ``examples/`` is the seed's script rewritten in our own
words with the same calls; it runs as a real subprocess configured only by
the seed's environment variables, and the test checks what a person running
it would read, plus what reached the server.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from desktop_agent.testing import script

pytestmark = pytest.mark.timeout(180)

LONG_ESSAY = " ".join(f"Rivers carry water number {i}." for i in range(200))


def user_texts(server) -> list[str]:
    return [m["content"] for r in server.requests for m in r["messages"] if m["role"] == "user"]


def test_simple_lmstudio(server, run_example):
    done = run_example("simple_lmstudio")
    assert done.returncode == 0
    assert done.stdout.strip() == "You said: Tidy this sentence: the cat sat in mat."
    request = server.requests[0]
    assert request["messages"][0] == {"role": "system", "content": "You are a careful copy editor."}
    assert request["temperature"] == 0.1


def test_ollama_chat_counts_turns(server, run_example):
    server.enqueue(script.tool_calls([("get_time", {"zone": "UTC"})], text_before="Checking."))
    done = run_example("ollama_chat", stdin="what time is it?\nhow are you\nquit\n")
    assert done.returncode == 0
    assert "[Tool: get_time] input={'zone': 'UTC'}" in done.stdout
    assert "You said: how are you" in done.stdout
    assert "Total turns: 2" in done.stdout and "Max turns: 10" in done.stdout


def test_tool_use_agent_patterns(server, run_example):
    server.enqueue(
        script.tool_calls([("capital_of", {"country": "France"})]), script.text("Paris it is."),
        script.tool_calls([("capital_of", {"country": "Japan"})]), script.text("Tokyo."),
        script.tool_calls([("capital_of", {"country": "France"})]), script.text("Paris again."),
    )
    done = run_example("tool_use_agent")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "[calling capital_of]" in lines and "Paris it is." in lines
    assert "manual loop turns: 1" in lines
    assert "helper: Tokyo." in lines
    assert "agent: Paris again." in lines and "agent: You said: Thanks!" in lines
    assert "agent turns: 2" in lines
    results = [m["content"] for r in server.requests for m in r["messages"] if m["role"] == "tool"]
    assert json.dumps({"capital": "Tokyo"}) in results


def test_config_examples(server, run_example):
    done = run_example("config_examples")
    assert done.returncode == 0
    out = done.stdout
    assert "2 ollama shortcut: http://localhost:11434/v1" in out
    assert "3 llamacpp shortcut: http://localhost:8080/v1" in out
    assert "4 vllm shortcut: http://localhost:8000/v1" in out
    assert "5 fallback model: fallback-model" in out and "6 env model: test-model" in out
    assert "8 reply: You said: config check" in out


def test_simple_with_env(server, run_example):
    done = run_example("simple_with_env")
    assert done.returncode == 0
    assert f"model=test-model url={server.base_url}" in done.stdout
    assert "You said: Say hello from the environment." in done.stdout


def test_env_config_complete_is_strict(server, run_example):
    missing = run_example("env_config_complete", with_model=False)
    assert missing.returncode == 2 and "Set OPEN_AGENT_MODEL" in missing.stderr
    assert server.requests == []
    done = run_example("env_config_complete")
    assert done.returncode == 0 and "You said: strict env check" in done.stdout


def test_git_commit_agent(server, run_example, tmp_path: Path):
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "hello.py").write_text("print('hello')\n")
    git("add", "hello.py")
    server.enqueue(script.text("feat(hello): add a greeting script\n\n- print hello"))
    done = run_example("git_commit_agent", "--repo", str(tmp_path))
    assert done.returncode == 0
    assert "Found staged changes in 1 file(s)" in done.stdout
    assert "feat(hello): add a greeting script" in done.stdout
    assert "hello.py" in user_texts(server)[0]


def test_log_analyzer_agent(server, run_example, tmp_path: Path):
    log = tmp_path / "app.log"
    log.write_text("\n".join([
        "2025-10-15 10:00 INFO started",
        "2025-10-15 10:01 ERROR Connection Error: pool exhausted",
        "2025-10-15 10:02 ERROR Connection Error: pool exhausted",
        "2025-10-15 10:03 WARNING slow query",
        "2025-10-15 10:04 ERROR Timeout Error: payment api",
    ]))
    server.enqueue(script.text("Raise the connection pool size."))
    done = run_example("log_analyzer_agent", str(log))
    assert done.returncode == 0
    assert "Total entries: 5" in done.stdout and "Errors: 3  Warnings: 1" in done.stdout
    assert "- Connection Error: 2 occurrences" in done.stdout
    assert "Raise the connection pool size." in done.stdout


def test_calculator_tools_answered_inside_the_loop(server, run_example):
    server.enqueue(script.tool_calls([("add", {"a": 3, "b": 4})]),
                   script.tool_calls([("multiply", {"a": 7, "b": 6})]),
                   script.text("(3 + 4) * 6 = 42"))
    done = run_example("calculator_tools")
    assert done.returncode == 0, done.stderr
    assert "'result': 7" in done.stdout and "'result': 42" in done.stdout
    assert done.stdout.strip().endswith("(3 + 4) * 6 = 42")
    sent = server.requests[2]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "tool"]


def test_hooks_example_runs_two_queries_on_a_default_client(server, run_example):
    server.enqueue(script.tool_calls([("delete_file", {"path": "/etc/passwd"})]),
                   script.text("I may not delete that."),
                   script.tool_calls([("delete_file", {"path": "/tmp/scratch.txt"})]),
                   script.text("Deleted."))
    done = run_example("hooks_example")
    assert done.returncode == 0, done.stderr
    assert "[refused]" in done.stdout and "system files are off limits" in done.stdout
    assert "[ran] deleted /tmp/scratch.txt" in done.stdout
    assert "audit: ['delete_file -> deleted /tmp/scratch.txt']" in done.stdout
    assert user_texts(server)[0] == "Delete /etc/passwd (please be concise)"


def test_interrupt_demo_keeps_the_partial_reply(server, run_example):
    server.enqueue(script.text(LONG_ESSAY, delay=0.02))
    done = run_example("interrupt_demo")
    assert done.returncode == 0, done.stderr
    assert "interrupted=True" in done.stdout
    kept = int(done.stdout.split("kept=")[1].split()[0])
    assert 0 < kept < len(LONG_ESSAY)
    assert "history ends with: assistant" in done.stdout
    assert "You said: Just one short sentence now." in done.stdout


def test_context_management_patterns(server, run_example):
    done = run_example("context_management")
    assert done.returncode == 0, done.stderr
    assert "You said: Summarise A" in done.stdout
    assert "truncated 12 -> 4 messages" in done.stdout
    assert "after one more turn: 6 messages" in done.stdout
    assert "tokens > 60, trimmed" in done.stdout
    assert "final estimate:" in done.stdout
