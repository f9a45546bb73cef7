"""The command sandbox, over real bubblewrap: what a command can and cannot reach.

Every test runs a real ``bash`` under real ``bwrap`` (as root in CI containers,
as a normal user on desktops: the argv is built for both). When bubblewrap is
missing the tests fail loudly (CI must install it: .ci/install_sandbox.sh).
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from desktop_agent.core.options import AgentOptions
from desktop_agent.core.tooling.builtin import UNSANDBOXED_WARNING, SandboxPolicy, builtin_tools
from desktop_agent.core.tooling.permissions import (
    PermissionResultAllow,
    PermissionRule,
    ToolPermissionContext,
)
from desktop_agent.core.tooling.run_call import run_tool_call
from desktop_agent.core.tooling.tools import Tool
from desktop_agent.core.types import ToolUseBlock
from desktop_agent.session.settings.sandbox_settings import sandbox_policy

pytestmark = pytest.mark.usefixtures("bubblewrap")


def _exists(path: str) -> bool:
    return os.path.exists(path)


def _real(path: Path) -> str:
    return os.path.realpath(path)


def _bash(workdir: Path, policy: SandboxPolicy | None = None,
          secrets: dict[str, str] | None = None) -> Tool:
    tools = builtin_tools(workdir, env_secrets=secrets, sandbox=policy, include=("bash",))
    return tools[0]


async def _run(workdir: Path, command: str, policy: SandboxPolicy | None = None,
               secrets: dict[str, str] | None = None) -> str:
    result = await _bash(workdir, policy, secrets).execute({"command": command,
                                                            "timeout_seconds": 30})
    assert isinstance(result, str)
    return result


async def test_the_workdir_is_writable_and_the_system_is_not(tmp_path: Path) -> None:
    out = await _run(tmp_path, "echo made > here.txt && cat here.txt; "
                               "touch /usr/planted 2>&1; touch /etc/planted 2>&1; "
                               "touch /planted 2>&1; ls /usr/bin/env")
    assert (tmp_path / "here.txt").read_text() == "made\n"
    assert out.count("Read-only file system") + out.count("Permission denied") >= 3, out
    assert not _exists("/usr/planted") and not _exists("/etc/planted")
    assert "/usr/bin/env" in out  # programs are there to run


async def test_home_other_folders_and_shadow_files_are_invisible(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside secret")
    home = Path.home()
    out = await _run(workdir, f"cat {outside}/secret.txt; ls -A {home} | wc -l; "
                              "cat /etc/shadow; ls /root; echo end")
    assert "outside secret" not in out
    assert "No such file or directory" in out
    if not workdir.is_relative_to(home):
        # nothing of the home folder is there (an empty listing or no folder at all)
        assert "\n0\n" in out or f"ls: cannot access '{home}'" in out, out
    assert "root:" not in out


async def test_the_data_folder_is_blanked_even_inside_the_workdir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "conversations.sqlite3").write_text("every conversation")
    monkeypatch.setenv("DESKTOP_AGENT_DATA_DIR", str(data))
    policy = sandbox_policy({"workdir": str(tmp_path)})
    out = await _run(tmp_path, "ls -A data | wc -l; cat data/conversations.sqlite3; "
                               "echo x > data/new.txt; echo end", policy)
    assert "every conversation" not in out
    assert out.splitlines()[2] == "0", out
    assert not (data / "new.txt").exists()


async def test_tmp_is_private_and_proc_shows_only_the_command(tmp_path: Path) -> None:
    name = f"sandbox-{uuid.uuid4().hex}"
    out = await _run(tmp_path, f"echo inside > /tmp/{name}; cat /tmp/{name}; "
                               "ls /proc | grep -cE '^[0-9]+$'; "
                               f"test -e /proc/{os.getpid()}/environ && echo PARENT-VISIBLE; "
                               "cat /proc/1/cmdline | tr '\\0' ' '")
    assert "inside" in out
    assert not _exists(f"/tmp/{name}")
    lines = out.splitlines()
    assert int(lines[3]) < 10, out  # bwrap's init, bash and the ls: not the machine's processes
    if os.getpid() > 10:
        assert "PARENT-VISIBLE" not in lines
    assert lines[4].split()[0].endswith("bwrap"), out  # pid 1 is the sandbox, not init


class _Listener:
    """A TCP server on the host's loopback that counts connections."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(5)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    async def counted(self, expected: int) -> int:
        """The count once it reaches ``expected`` (or after 30 s): the listening thread
        counts a connection when it accepts it, which can be after the command ended."""
        deadline = time.monotonic() + 30
        while self.accepted < expected and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        return self.accepted

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


async def test_no_network_unless_the_conversation_grants_it(tmp_path: Path) -> None:
    listener = _Listener()
    try:
        probe = (f"(echo hi > /dev/tcp/127.0.0.1/{listener.port}) 2>/dev/null "
                 "&& echo CONNECTED || echo REFUSED")
        closed = await _run(tmp_path, probe)
        assert "REFUSED" in closed and listener.accepted == 0
        opened = await _run(tmp_path, probe, SandboxPolicy(network=True))
        assert "CONNECTED" in opened and await listener.counted(1) == 1
    finally:
        listener.close()


async def test_read_only_level_can_read_but_not_write_the_workdir(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("keep me")
    out = await _run(tmp_path, "cat notes.txt; echo changed > notes.txt; rm notes.txt; "
                               "touch new.txt; echo end", SandboxPolicy(level="read_only"))
    assert "keep me" in out
    assert (tmp_path / "notes.txt").read_text() == "keep me"
    assert not (tmp_path / "new.txt").exists()


async def test_the_environment_is_built_not_inherited(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DESKTOP_AGENT_MASTER_KEY", "master-key-must-not-leak-1234")
    monkeypatch.setenv("PLANTED_PROVIDER_TOKEN", "planted-token-must-not-leak-5678")
    home = _real(tmp_path)
    for policy in (SandboxPolicy(), SandboxPolicy(level="off")):
        out = await _run(tmp_path, "env | sort", policy, {"DEPLOY_KEY": "deploy-value-9"})
        assert "master-key-must-not-leak" not in out and "DESKTOP_AGENT_MASTER_KEY" not in out
        assert "planted-token-must-not-leak" not in out and "PLANTED_PROVIDER" not in out
        names = {line.split("=", 1)[0] for line in out.splitlines()[2:] if "=" in line}
        assert names <= {"PATH", "HOME", "LANG", "TERM", "DEPLOY_KEY", "PWD", "SHLVL", "_"}, names
        assert f"HOME={home}" in out
        assert "DEPLOY_KEY=[secret DEPLOY_KEY redacted]" in out


async def test_level_off_is_marked_unsandboxed_and_reaches_outside(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    (tmp_path / "outside.txt").write_text("outside text")
    sandboxed = _bash(workdir)
    assert sandboxed.unsandboxed is False and "no network access" in sandboxed.description
    off = _bash(workdir, SandboxPolicy(level="off"))
    assert off.unsandboxed is True
    out = await off.execute({"command": f"cat {tmp_path}/outside.txt"})
    assert "outside text" in out


async def test_an_unsandboxed_call_is_asked_even_when_a_rule_allows_it(tmp_path: Path) -> None:
    asked: list[ToolPermissionContext] = []

    async def approver(_name: str, _input: dict[str, Any],
                       context: ToolPermissionContext) -> PermissionResultAllow:
        asked.append(context)
        return PermissionResultAllow()

    rules = [PermissionRule("bash", "allow")]
    for policy, expect_ask in ((SandboxPolicy(), False), (SandboxPolicy(level="off"), True)):
        options = AgentOptions(model="m", base_url="http://127.0.0.1:9/v1",
                               tools=[_bash(tmp_path, policy)], can_use_tool=approver,
                               permission_rules=rules)
        outcome = await run_tool_call(ToolUseBlock("call_1", "bash", {"command": "echo ran"}),
                                      options, [])
        assert "ran" in outcome.result.content
        assert bool(asked) is expect_ask
    assert asked[0].unsandboxed is True
    assert UNSANDBOXED_WARNING.startswith("unsandboxed: ")


@pytest.fixture
def no_pids_cgroup(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A machine with no ``pids`` cgroup the app may make (none delegated to it).

    As root the process cap then rests on the process limit alone, which the
    kernel may not apply in the sandbox; as a normal user nothing changes.
    """
    from desktop_agent.core.tooling.builtin import command_limits, sandbox

    monkeypatch.setattr(command_limits, "_pids_parents", lambda: [])
    sandbox.processes_capped.cache_clear()
    yield sandbox.processes_capped
    sandbox.processes_capped.cache_clear()


async def test_a_fork_bomb_names_the_process_limit_or_else_the_time_limit_and_says_why(
        tmp_path: Path, no_pids_cgroup: Any) -> None:
    from desktop_agent.core.tooling.builtin.command_limits import CommandLimits
    from desktop_agent.core.tooling.builtin.shell_tool import run_command
    from desktop_agent.core.tooling.builtin.workdir import Workdir
    from desktop_agent.session.settings.sandbox_settings import sandbox_status

    # a bounded "bomb": 200 processes that wait, three times the limit (gentle on the machine)
    policy = SandboxPolicy(limits=CommandLimits(processes=64))
    result = await run_command("for i in $(seq 200); do sleep 60 & done; wait",
                               Workdir(tmp_path), time_limit=4, sandbox=policy)
    status = sandbox_status({"sandbox": "workdir"})
    assert status.sandboxed
    if no_pids_cgroup():  # the limit holds here (a normal user on most kernels)
        assert "limit of 64 processes" in (result.limit or ""), result
        assert status.processes_capped and status.label == "Sandboxed"
        return
    # root without a pids cgroup: the bomb ran to its time limit, and both say why
    assert result.timed_out, result
    assert result.limit is not None and "time limit of 4 s" in result.limit, result
    assert "cannot cap how many processes" in result.limit
    assert "limit reached: The command was stopped by its time limit" in result.to_text()
    assert not status.processes_capped
    assert status.label == "Sandboxed, processes not capped"
    assert "runs until its time limit" in status.detail
