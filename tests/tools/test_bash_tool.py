"""The bash tool: separate bounded output, exit codes, timeouts that kill everything, secrets."""

from __future__ import annotations

import asyncio
import inspect
import time
import tracemalloc
import uuid
from pathlib import Path

import pytest
from process_checks import processes_running, wait_until_gone

from desktop_agent.core.tooling.builtin import BuiltinToolError, builtin_tools
from desktop_agent.core.tooling.builtin.shell_tool import OUTPUT_CAP
from desktop_agent.core.tooling.tools import Tool
from desktop_agent.session.settings.conversation_secrets import (
    conversation_env_secrets,
    secret_name,
)


def _bash(workdir: Path, secrets: dict[str, str] | None = None) -> Tool:
    return next(t for t in builtin_tools(workdir, env_secrets=secrets) if t.name == "bash")




def _file_text(path: Path) -> str:
    return path.read_text().strip() if path.exists() else ""


async def _read_pid_text(path: Path) -> str:
    deadline = time.monotonic() + 10
    text = ""
    while not text and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        text = _file_text(path)
    return text


def test_bash_asks_by_default_and_defaults_to_sixty_seconds(tmp_path: Path) -> None:
    bash = _bash(tmp_path)
    assert bash.read_only is False
    # the schema leaves defaults out (every prompt carries it); the handler has it
    assert inspect.signature(bash.handler).parameters["timeout_seconds"].default == 60
    assert "timeout_seconds" not in bash.input_schema.get("required", [])


async def test_exit_code_and_separate_streams(tmp_path: Path) -> None:
    command = "echo out; echo err >&2; echo here > made-here.txt; exit 3"
    out = await _bash(tmp_path).execute({"command": command})
    assert out.startswith("exit code: 3\n")
    stdout, stderr = out.split("stderr:\n")
    assert "out\n" in stdout
    assert _file_text(tmp_path / "made-here.txt") == "here"
    assert stderr == "err\n"


async def test_command_that_outlives_its_timeout_is_killed_with_its_children(
    tmp_path: Path,
) -> None:
    marker = f"300.{uuid.uuid4().int % 10**12:012d}"
    command = f"setsid sleep {marker} & nohup sleep {marker} & echo started; sleep {marker}"
    out = await _bash(tmp_path).execute({"command": command, "timeout_seconds": 1})
    assert "timed out after 1 s" in out
    assert "started" in out
    assert await wait_until_gone(marker), "a background child survived the timeout"


async def test_ten_megabytes_of_output_are_capped(tmp_path: Path) -> None:
    tracemalloc.start()
    try:
        out = await _bash(tmp_path).execute(
            {"command": "head -c 10000000 /dev/zero | tr '\\0' 'a'; echo done >&2"}
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out.startswith("exit code: 0\n")
    assert f"[stdout truncated: {10_000_000 - OUTPUT_CAP} more bytes not shown]" in out
    assert "a" * OUTPUT_CAP in out
    assert "a" * (OUTPUT_CAP + 1) not in out
    assert out.rstrip().endswith("stderr:\ndone")
    assert peak < 3_000_000, f"reading 10 MB of output peaked at {peak} bytes of Python memory"


async def test_secrets_reach_the_command_but_not_the_result(tmp_path: Path) -> None:
    token = "ghp_0123456789abcdefSECRET"
    bash = _bash(tmp_path, {"GITHUB_TOKEN": token})
    assert "GITHUB_TOKEN" in bash.description
    assert token not in bash.description
    out = await bash.execute({"command": 'echo "token=$GITHUB_TOKEN"; echo "$GITHUB_TOKEN" >&2; '
                                         'test "$GITHUB_TOKEN" = ' + token + ' && echo matches'})
    assert token not in out
    assert "token=[secret GITHUB_TOKEN redacted]" in out
    assert "matches" in out


async def test_a_secret_across_the_output_cap_is_not_half_shown(tmp_path: Path) -> None:
    token = "s3cr3t-VALUE-0123456789"
    pad = OUTPUT_CAP - 5
    bash = _bash(tmp_path, {"TOKEN": token})
    out = await bash.execute({"command": f"head -c {pad} /dev/zero | tr '\\0' 'x'; "
                                         'printf "%s" "$TOKEN"; printf "tail"'})
    assert "s3cr3" not in out
    assert "[secret TOKEN redacted]" in out


async def test_cancelling_the_call_kills_the_process_group(tmp_path: Path) -> None:
    bash = _bash(tmp_path)
    marker = f"300.{uuid.uuid4().int % 10**12:012d}"
    task = asyncio.create_task(bash.execute({"command": f"echo up > up.txt; sleep {marker}"}))
    await _read_pid_text(tmp_path / "up.txt")
    assert processes_running(marker)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_until_gone(marker)


async def test_bad_input_is_refused_clearly(tmp_path: Path) -> None:
    bash = _bash(tmp_path)
    with pytest.raises(BuiltinToolError, match="empty"):
        await bash.execute({"command": "  "})
    with pytest.raises(BuiltinToolError, match="time limit"):
        await bash.execute({"command": "true", "timeout_seconds": 10_000})


async def test_conversation_secrets_come_from_the_app_secret_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from desktop_agent.appdata import secrets

    monkeypatch.setenv("DESKTOP_AGENT_DATA_DIR", str(tmp_path))
    conversation = f"test-{uuid.uuid4().hex}"
    value = f"deploy-{uuid.uuid4().hex}"
    stored = [secret_name(conversation, "DEPLOY_KEY"), secret_name(conversation, "bad name")]
    for name in stored:
        secrets.set_secret(name, value)
    try:
        env = conversation_env_secrets(conversation)
        assert env == {"DEPLOY_KEY": value}
        out = await _bash(tmp_path, env).execute({"command": 'echo "key: $DEPLOY_KEY"'})
        assert out == "exit code: 0\nstdout:\nkey: [secret DEPLOY_KEY redacted]\n"
    finally:
        for name in stored:
            secrets.delete_secret(name)
