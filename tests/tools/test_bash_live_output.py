"""A bash call's output streams while it runs; Stop ends just that command.

Real ``bash`` under real bubblewrap, driven by a real Client over HTTP to the
ScriptedServer: the model still gets one final, budgeted result.
"""

from __future__ import annotations

import asyncio
import base64
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest

from desktop_agent import AgentOptions, Client
from desktop_agent.core.tooling.builtin import builtin_tools
from desktop_agent.core.tooling.builtin.sandbox import sandbox_backend
from desktop_agent.core.tooling.builtin.shell_tool import OUTPUT_CAP
from desktop_agent.core.tooling.progress import ProgressChannel, report_output
from desktop_agent.core.types import ToolProgressBlock, ToolResultBlock
from desktop_agent.testing import ScriptedServer, script

#: 10,000 lines over about two seconds (a line every 0.2 ms, in bursts of 100).
TEN_THOUSAND_LINES = ("for i in $(seq 1 100); do for j in $(seq 1 100); do echo \"line $i.$j\"; "
                      "done; sleep 0.02; done; echo finished >&2")


def _options(server: ScriptedServer, workdir: Path, **extra: Any) -> AgentOptions:
    return AgentOptions(model="m", base_url=server.base_url, auto_execute_tools=True,
                        tools=builtin_tools(workdir, include=("bash",)), max_turns=None,
                        timeout=30.0, **extra)


@pytest.fixture(autouse=True)
def _real_sandbox() -> None:
    if sandbox_backend() != "bwrap":
        pytest.fail("bubblewrap is missing; run .ci/install_sandbox.sh")


async def test_lines_reach_the_stream_before_the_command_ends(tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(script.tool_calls([("bash", {"command": TEN_THOUSAND_LINES})],
                                         ids=["c1"]), script.text("Done."))
        seen: list[ToolProgressBlock] = []
        result: ToolResultBlock | None = None
        async with Client(_options(server, tmp_path)) as client:
            await client.query("count")
            async for item in client.receive_messages():
                if isinstance(item, ToolProgressBlock):
                    assert result is None, "output reported after the result"
                    seen.append(item)
                elif isinstance(item, ToolResultBlock):
                    result = item
        assert result is not None and result.content.startswith("exit code: 0")
        outputs = [b for b in seen if b.output is not None]
        assert outputs[0].stoppable and outputs[0].tool_use_id == "c1"
        # some lines were shown while the command still had thousands to print
        early = [b for b in outputs if b.output and b.progress < 5_000]
        assert early, [b.progress for b in outputs]
        assert "line 1.1\n" in "".join(b.output or "" for b in outputs[:3])
        # counts only grow, time runs, and the last report has every line
        assert [b.progress for b in outputs] == sorted(b.progress for b in outputs)
        assert outputs[-1].progress == 10_001
        assert outputs[-1].elapsed is not None and outputs[-1].elapsed >= 1.0
        assert "finished" in "".join(b.output or "" for b in outputs[-3:])
        # coalesced: a few reports a second, not one per line or per read
        assert len(outputs) < 60, len(outputs)
        # the model got one budgeted result, never the live pieces
        tool_message = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")
        assert tool_message["content"].startswith("exit code: 0\nstdout:\nline 1.1\n")
        assert len(tool_message["content"]) <= OUTPUT_CAP
        assert not any(m.get("role") == "tool" and m is not tool_message
                       for m in server.requests[1]["messages"])


async def test_stop_ends_just_that_command_and_the_turn_goes_on(tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(script.tool_calls([("bash", {"command": "echo started; sleep 120"})],
                                         ids=["c1"]), script.text("It was stopped."))
        texts: list[str] = []
        stopped: list[bool] = []
        result: ToolResultBlock | None = None
        async with Client(_options(server, tmp_path)) as client:
            assert not client.stop_tool_call("c1")  # nothing runs yet
            await client.query("wait")
            async for item in client.receive_messages():
                if isinstance(item, ToolProgressBlock) and "started" in (item.output or ""):
                    stopped.append(client.stop_tool_call("c1"))
                    stopped.append(client.stop_tool_call("c1"))  # twice: once is enough
                elif isinstance(item, ToolResultBlock):
                    result = item
                elif hasattr(item, "text"):
                    texts.append(item.text)
        assert stopped == [True, False]
        assert result is not None and not result.is_error
        assert result.content.startswith("stopped by the person after")
        assert "started" in result.content
        assert "It was stopped." in "".join(texts)
        tool_message = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")
        assert tool_message["content"].startswith("stopped by the person")


async def test_a_secret_split_between_two_reports_never_leaves_in_part() -> None:
    channel = ProgressChannel()
    secret = "hunter2-very-secret"

    async def call() -> None:
        channel.bind("c1", "bash", (secret,))
        report_output("token: hunter2-ve", lines=0, elapsed=0.1)
        report_output("ry-secret ok\nmore\n", lines=2, elapsed=0.2)
        report_output("", lines=2, elapsed=0.3)
        channel.finished("c1")  # as run_tool_call does when the call ends

    task = asyncio.ensure_future(call())
    blocks = [b async for b in channel.until_done(task)]
    shown = "".join(b.output or "" for b in blocks)
    assert "hunter2" not in shown and "secret ok" not in shown.replace("[redacted]", "")
    assert shown == "token: [redacted] ok\nmore\n"
    for block in blocks:
        assert "hunter" not in (block.output or "")


# -- a secret in other forms: encoded, split over reports, split by a colour escape ----

TOKEN = "ghp_Live+Output/Secret=0123456789abcdef"
ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def _every_form(secret: str) -> list[str]:
    """The forms a reader could turn back into the secret (as tests of this file check)."""
    raw = secret.encode()
    return [secret, base64.b64encode(raw).decode(), base64.b64encode(raw).decode().rstrip("="),
            base64.urlsafe_b64encode(raw).decode().rstrip("="), quote(secret, safe=""),
            quote_plus(secret), raw.hex(), secret[:20], base64.b64encode(raw).decode()[:24]]


def _leaks(shown: str, secret: str) -> list[str]:
    """Forms (or a long part) of ``secret`` in ``shown`` as a terminal shows it."""
    plain = ESCAPE.sub("", shown)
    squeezed = plain.replace("\n", "")
    return [form for form in _every_form(secret) if form in plain or form in squeezed]


async def test_a_secret_encoded_split_or_coloured_never_shows_live_nor_in_the_result(
        tmp_path: Path) -> None:
    # base64 in 20-character pieces a third of a second apart (a report each), hex,
    # URL-encoded, and the raw value with a colour escape in its middle
    command = (
        'printf %s "$TOKEN" | base64 -w0 | fold -w 20 | '
        'while read -r piece || [ -n "$piece" ]; do printf %s "$piece"; sleep 0.3; done; echo; '
        'printf %s "$TOKEN" | xxd -p; '
        'python3 -c "import os, urllib.parse as u; '
        "print(u.quote(os.environ['TOKEN'], safe=''))\"; "
        r'printf "token=%s\e[31m%s\e[0m done\n" "${TOKEN:0:12}" "${TOKEN:12}"; '
        'printf %s "$TOKEN" | base64 -w 16; echo')
    with ScriptedServer() as server:
        server.enqueue(script.tool_calls([("bash", {"command": command})], ids=["c1"]),
                       script.text("Done."))
        tools = builtin_tools(tmp_path, include=("bash",), env_secrets={"TOKEN": TOKEN})
        options = AgentOptions(model="m", base_url=server.base_url, auto_execute_tools=True,
                               tools=tools, max_turns=None, timeout=30.0,
                               secret_values=(TOKEN,))
        outputs: list[str] = []
        result: ToolResultBlock | None = None
        async with Client(options) as client:
            await client.query("show it")
            async for item in client.receive_messages():
                if isinstance(item, ToolProgressBlock) and item.output is not None:
                    outputs.append(item.output)
                elif isinstance(item, ToolResultBlock):
                    result = item
    assert result is not None and result.content.startswith("exit code: 0"), result
    shown = "".join(outputs)
    assert len(outputs) >= 4, outputs  # the pieces came a report or more apart
    assert _leaks(shown, TOKEN) == [], shown
    assert "token=[redacted] done" in ESCAPE.sub("", shown), shown
    assert shown.count("[redacted (base64)]") == 2, shown
    assert "[redacted (hex)]" in shown and "[redacted (URL-encoded)]" in shown, shown
    for stored in (result.content, next(m for m in server.requests[1]["messages"]
                                        if m["role"] == "tool")["content"]):
        assert _leaks(stored, TOKEN) == [], stored
        assert "token=[secret TOKEN redacted] done" in ESCAPE.sub("", stored), stored
        assert stored.count("[secret TOKEN redacted (base64)]") == 2, stored


async def test_an_encoded_secret_split_between_three_reports_never_leaves_in_part() -> None:
    channel = ProgressChannel()
    secret = "hunter2-very-secret-value"
    encoded = base64.b64encode(f"key:{secret}".encode()).decode()
    pieces = [encoded[:12], encoded[12:26], encoded[26:] + "\nnext line\n"]

    async def call() -> None:
        channel.bind("c1", "bash", (secret,))
        for n, piece in enumerate(pieces):
            report_output(piece, lines=n, elapsed=0.1 * n)
        channel.finished("c1")

    task = asyncio.ensure_future(call())
    blocks = [b async for b in channel.until_done(task)]
    shown = "".join(b.output or "" for b in blocks)
    assert _leaks(shown, secret) == [] and "[redacted (base64)]" in shown, shown
    assert shown.endswith("next line\n")
    form = base64.b64encode(f"key:{secret}".encode()).decode()[8:-8]
    for block in blocks:  # no report carries a part of the encoded secret either
        assert not any(form[i:i + 8] in (block.output or "") for i in range(len(form) - 8))
