"""claude-agent-sdk's hook events beyond the tool ones, through real turns, and command hooks."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from desktop_agent import Client, HookDecision, MemoryHistory, PermissionResultAllow, tool
from desktop_agent.core.tooling.builtin.sandbox import SandboxPolicy
from desktop_agent.core.tooling.command_hooks import (
    CommandHook,
    command_hook_handlers,
    parse_command_hooks,
    sandboxed_runner,
)
from desktop_agent.core.tooling.config import ToolConfigError
from desktop_agent.core.tooling.hooks import PreToolUseEvent, StopEvent
from desktop_agent.testing import script

pytestmark = pytest.mark.timeout(90)


@tool("bash", "Run a command", {"command": str})
async def bash(args):
    return f"ran {args['command']}"


def recorder(seen: list, answer=None):
    def hook(event):
        seen.append(event)
        return answer
    return hook


async def test_session_start_and_end_by_claude_names(server, make_options):
    seen: list = []
    server.enqueue(script.text("hi"), script.text("again"))
    options = make_options(hooks={"SessionStart": [recorder(seen)],
                                  "SessionEnd": [recorder(seen)]}, cwd="/work/here")
    async with Client(options) as client:
        await client.query("one")
        [i async for i in client.receive_messages()]
    history = MemoryHistory(client.history)
    async with Client(options, session=history) as again:
        await again.query("two")
        [i async for i in again.receive_messages()]
    kinds = [(type(e).__name__, getattr(e, "source", getattr(e, "reason", None))) for e in seen]
    assert kinds == [("SessionStartEvent", "startup"), ("SessionEndEvent", "other"),
                     ("SessionStartEvent", "resume"), ("SessionEndEvent", "other")]
    payload = seen[0].payload()
    assert payload["hook_event_name"] == "SessionStart" and payload["cwd"] == "/work/here"
    assert payload["permission_mode"] == "default" and payload["source"] == "startup"


async def test_a_stop_hook_sends_the_model_back_once(server, make_options):
    seen: list = []

    def stop(event: StopEvent):
        seen.append((event.stop_hook_active, event.last_message))
        if not event.stop_hook_active:
            return HookDecision(continue_=False, reason="Run the tests before you stop.")
        return None

    server.enqueue(script.text("Done."), script.text("Tests pass. Done."))
    async with Client(make_options(hooks={"Stop": [stop]})) as client:
        await client.query("fix it")
        [i async for i in client.receive_messages()]
        assert client.final_text == "Tests pass. Done."
        assert client.turn_metadata["stop_hook_reasons"] == ["Run the tests before you stop."]
    assert seen == [(False, "Done."), (True, "Tests pass. Done.")]
    assert server.requests[1]["messages"][-1] == {"role": "user",
                                                  "content": "Run the tests before you stop."}


async def test_a_stop_hook_that_never_lets_go_ends_at_the_limit(server, make_options):
    server.enqueue(*[script.text(f"try {i}") for i in range(5)])
    never = recorder([], HookDecision(continue_=False, reason="Again."))
    async with Client(make_options(hooks={"stop": [never]}, max_tool_iterations=2)) as client:
        await client.query("go")
        [i async for i in client.receive_messages()]
    assert len(server.requests) == 3  # the answer, then two refusals at most


async def test_notification_hook_when_an_approval_waits(server, make_options):
    seen: list = []

    async def approve(name, tool_input, context):
        return PermissionResultAllow()

    server.enqueue(script.tool_calls([("bash", {"command": "ls"})]), script.text("ok"))
    options = make_options(tools=[bash], auto_execute_tools=True, can_use_tool=approve,
                           hooks={"Notification": [recorder(seen)]})
    async with Client(options) as client:
        await client.query("go")
        [i async for i in client.receive_messages()]
    assert len(seen) == 1
    payload = seen[0].payload()
    assert payload["hook_event_name"] == "Notification"
    assert payload["message"] == "The agent needs your permission to use bash"
    assert payload["tool_name"] == "bash"


async def test_a_failing_listening_hook_is_logged_not_raised(server, make_options, caplog):
    def broken(event):
        raise RuntimeError("hook bug")

    server.enqueue(script.text("hi"))
    with caplog.at_level(logging.WARNING, "desktop_agent.hooks"):
        async with Client(make_options(hooks={"SessionStart": [broken]})) as client:
            await client.query("x")
            [i async for i in client.receive_messages()]
    assert "a SessionStart hook failed: hook bug" in caplog.text


async def test_pre_compact_is_told_before_a_compaction(server, make_options):
    seen: list = []
    server.enqueue(*[script.text("ok") for _ in range(4)])
    options = make_options(context_length=400, max_tokens=64, compaction="drop_oldest",
                           hooks={"PreCompact": [recorder(seen)]})
    compacted = []
    async with Client(options) as client:
        for turn in range(4):
            await client.query(f"turn {turn}: " + "many words here " * 30)
            compacted += [i async for i in client.receive_messages()
                          if type(i).__name__ == "CompactionBlock"]
    assert compacted and len(seen) == len(compacted)
    assert seen[0].payload()["trigger"] == "auto" and seen[0].messages >= 2
    assert seen[0].tokens_before > 0.8 * 400


# -- command hooks (config.json) ---------------------------------------------------------

def test_the_config_shape_is_checked_with_the_place_named():
    good = parse_command_hooks({"PreToolUse": [{"matcher": "bash|write_file",
                                                "hooks": [{"type": "command",
                                                           "command": "true", "timeout": 5}]}],
                                "stop": [{"hooks": [{"command": "echo"}]}]}, "config.json")
    assert [(h.event, h.matcher, h.timeout) for h in good] == [
        ("pre_tool_use", "bash|write_file", 5.0), ("stop", None, 60.0)]
    assert good[0].applies_to("write_file") and not good[0].applies_to("bash2")
    for bad, words in (({"OnExit": []}, "unknown event 'OnExit'"),
                       ({"Stop": {}}, "hooks.Stop must be a list"),
                       ({"Stop": [{"hooks": []}]}, "hooks.Stop[0].hooks must be a non-empty"),
                       ({"Stop": [{"matcher": "(", "hooks": [{"command": "x"}]}]},
                        "not a valid pattern"),
                       ({"Stop": [{"hooks": [{"command": "x", "timeout": -1}]}]},
                        "timeout must be seconds")):
        with pytest.raises(ToolConfigError, match=re.escape(words)):
            parse_command_hooks(bad, "config.json")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


async def run_pre_hook(command: str, folder: Path, timeout: float = 20.0):
    hooks = command_hook_handlers([CommandHook("pre_tool_use", command, "bash", timeout)],
                                  sandboxed_runner(SandboxPolicy(), folder, {"TOKEN": "s3cret"}))
    event = PreToolUseEvent("bash", {"command": "rm -rf /"}, "call_1", session_id="c1",
                            cwd=str(folder))
    return await hooks["pre_tool_use"][0](event)


async def test_exit_2_blocks_with_stderr_and_the_payload_arrives_on_stdin(
        folder: Path, bubblewrap: None):
    decision = await run_pre_hook(
        "cat > seen.json; echo \"no rm for you ($TOKEN)\" >&2; exit 2", folder)
    assert decision is not None and not decision.continue_
    assert decision.reason == "no rm for you ([redacted])"
    payload = json.loads((folder / "seen.json").read_text())
    assert payload["hook_event_name"] == "PreToolUse" and payload["tool_name"] == "bash"
    assert payload["tool_input"] == {"command": "rm -rf /"} and payload["session_id"] == "c1"


async def test_a_json_answer_decides_and_rewrites(folder: Path, bubblewrap: None):
    blocked = await run_pre_hook(
        'echo \'{"decision": "block", "reason": "not on Fridays"}\'', folder)
    assert blocked is not None and blocked.reason == "not on Fridays"
    rewritten = await run_pre_hook(
        'echo \'{"hookSpecificOutput": {"hookEventName": "PreToolUse", '
        '"updatedInput": {"command": "ls"}}}\'', folder)
    assert rewritten is not None and rewritten.modified_input == {"command": "ls"}


async def test_garbage_output_and_a_hanging_hook_decide_nothing(
        folder: Path, bubblewrap: None, caplog):
    with caplog.at_level(logging.WARNING, "desktop_agent.hooks.commands"):
        assert await run_pre_hook("echo '<<<not json>>>'; head -c 200000 /dev/zero", folder) \
            is None
        assert await run_pre_hook("sleep 60", folder, timeout=0.5) is None
        assert await run_pre_hook("exit 3", folder) is None
    assert "not a JSON object; ignored" in caplog.text
    assert "did not finish within 0.5 s" in caplog.text
    assert "exited with 3" in caplog.text


async def test_a_hook_command_runs_in_the_sandbox(folder: Path, bubblewrap: None):
    decision = await run_pre_hook(
        f"test -e {Path.home()}/.bashrc -o -e /root && ls {Path.home()} >&2; "
        "touch outside-attempt /etc/hook-was-here 2>&1 >&2; exit 2", folder)
    assert decision is not None
    assert written_where(folder) == (False, True)  # not /etc; the working folder is writable


def written_where(folder: Path) -> tuple[bool, bool]:
    return Path("/etc/hook-was-here").exists(), (folder / "outside-attempt").exists()
