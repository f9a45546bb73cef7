"""The sandbox round two, attacked through a real ``desktop-agent serve`` process.

Each test drives ``POST /conversations/{id}/commands`` over real HTTP against a
``serve`` subprocess, so the command runs under real bubblewrap exactly as a
script's would. The tests run as whoever runs pytest: CI runs them as root and
again as a normal user (``.ci/sandbox_as_user.sh``), because root is where the
escapes were.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from server_harness import start_serve, stop_serve

from desktop_agent.core.tooling.builtin.sandbox import sandbox_backend

KEY = "sandbox-serve-key-0123456789abcdef"


@pytest.fixture
def served(data_dir: Path) -> Iterator[httpx.Client]:
    if sandbox_backend() != "bwrap":
        pytest.fail("bubblewrap is missing or cannot make a sandbox here; run "
                    ".ci/install_sandbox.sh (these tests must not be skipped)")
    process, client = start_serve(data_dir, KEY)
    try:
        yield client
    finally:
        stop_serve(process, client)


def _command(client: httpx.Client, cid: str, command: str) -> dict:
    response = client.post(f"/conversations/{cid}/commands",
                           json={"command": command, "timeout": 60})
    assert response.status_code == 200, response.text
    result: dict = response.json()
    return result


def _new(client: httpx.Client, **settings: object) -> str:
    response = client.post("/conversations", json={"title": "sandbox", "settings": settings})
    assert response.status_code == 201, response.text
    cid: str = response.json()["id"]
    return cid


def test_kernel_settings_stay_read_only_and_the_command_is_not_root(
        served: httpx.Client) -> None:
    cid = _new(served)
    result = _command(served, cid, (
        "v=$(cat /proc/sys/kernel/core_uses_pid); "
        "echo $v > /proc/sys/kernel/core_uses_pid && echo sysctl-writable; "
        "for f in /proc/sysrq-trigger /proc/irq/*/smp_affinity; do "
        "  [ -e $f ] && (: > $f) 2>/dev/null && echo writable:$f; done; "
        "echo uid=$(id -u); grep CapEff /proc/self/status"))
    assert result["sandboxed"] is True
    out = result["stdout"]
    assert "sysctl-writable" not in out and "writable:" not in out, out
    assert "uid=0" not in out, out
    assert "CapEff:\t0000000000000000" in out, out
    # the host's setting is untouched and the command still ran
    assert os.path.exists("/proc/sys/kernel/core_uses_pid")
