"""File tools against real races and real special files: swaps, hard links, FIFOs, long names.

The swap race runs a thread that replaces a folder with a symlink to an
outside folder in a loop while the tools work; nothing outside may ever be
read, listed or written. The checks are on what a user would see: content that
came from outside, files that appeared outside.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop_agent.core.options import AgentOptions
from desktop_agent.core.tooling.builtin import BuiltinToolError, builtin_tools
from desktop_agent.core.tooling.builtin.confined_fs import HardLinkError, NotAFileError
from desktop_agent.core.tooling.pool import TOOL_WORKERS
from desktop_agent.core.tooling.run_call import run_tool_call
from desktop_agent.core.tooling.tools import Tool, tool
from desktop_agent.core.types import ToolUseBlock

SECRET = "OUTSIDE-SECRET-CONTENT"


@pytest.fixture
def tools(tmp_path: Path) -> dict[str, Tool]:
    work = tmp_path / "work"
    work.mkdir()
    return {t.name: t for t in builtin_tools(work, include=(
        "read_file", "write_file", "edit_file", "list_dir", "glob", "grep"))}


_libc = ctypes.CDLL(None, use_errno=True)
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def exchange(a: Path, b: Path) -> None:
    """Atomically swap two names (renameat2 RENAME_EXCHANGE): never a moment without either."""
    if _libc.renameat2(_AT_FDCWD, bytes(a), _AT_FDCWD, bytes(b), _RENAME_EXCHANGE) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


class Swapper:
    """Swaps ``work/sub`` between a real folder and a symlink to ``outside`` until stopped."""

    def __init__(self, work: Path, outside: Path) -> None:
        self.work, self.outside = work, outside
        self.stop = threading.Event()
        self.swaps = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        os.symlink(outside, work / "sublink")

    def _run(self) -> None:
        sub, link = self.work / "sub", self.work / "sublink"
        while not self.stop.is_set():
            exchange(sub, link)
            self.swaps += 1
            time.sleep(0)

    def __enter__(self) -> Swapper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)
        if (self.work / "sub").is_symlink():
            exchange(self.work / "sub", self.work / "sublink")


@pytest.fixture
def race(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "sub").mkdir(parents=True, exist_ok=True)
    outside.mkdir()
    (work / "sub" / "f.txt").write_text("inside content\n")
    (outside / "f.txt").write_text(SECRET + "\n")
    (outside / "only-outside.txt").write_text(SECRET + "\n")
    yield work, outside


async def _attempt(tool: Tool, args: dict[str, Any]) -> str:
    try:
        return str(await tool.execute(args))
    except BuiltinToolError as exc:
        return f"refused: {exc}"
    except OSError as exc:  # the folder vanished for an instant mid-swap
        return f"os error: {exc}"


async def test_a_folder_swapped_for_a_link_never_leads_outside(
        tools: dict[str, Tool], race: tuple[Path, Path]) -> None:
    work, outside = race
    seen: list[str] = []
    with Swapper(work, outside) as swapper:
        for i in range(150):
            seen.append(await _attempt(tools["read_file"], {"path": "sub/f.txt"}))
            seen.append(await _attempt(tools["list_dir"], {"path": "sub"}))
            seen.append(await _attempt(tools["grep"], {"pattern": "SECRET|inside"}))
            seen.append(await _attempt(tools["glob"], {"pattern": "sub/*"}))
            seen.append(await _attempt(tools["write_file"],
                                       {"path": f"sub/new-{i}.txt", "content": "made"}))
            seen.append(await _attempt(tools["edit_file"], {
                "path": "sub/f.txt", "old_string": "content", "new_string": "content"}))
    assert swapper.swaps > 50, "the swap loop hardly ran; the test proved nothing"
    assert any("inside content" in s for s in seen), "the tools never worked during the race"
    leaked = [s for s in seen if SECRET in s or "only-outside" in s]
    assert not leaked, leaked[:3]
    assert sorted(p.name for p in outside.iterdir()) == ["f.txt", "only-outside.txt"]
    assert (outside / "f.txt").read_text() == SECRET + "\n"


async def test_writes_through_a_hard_link_are_refused(tools: dict[str, Tool],
                                                      tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("outside original\n")
    os.link(outside, tmp_path / "work" / "linked.txt")
    for name, args in (("write_file", {"path": "linked.txt", "content": "overwritten"}),
                       ("edit_file", {"path": "linked.txt", "old_string": "original",
                                      "new_string": "changed"})):
        with pytest.raises(HardLinkError, match=r"2 hard links.*Refused"):
            await tools[name].execute(args)
    assert outside.read_text() == "outside original\n"
    # reading is harmless and allowed
    assert "outside original" in await tools["read_file"].execute({"path": "linked.txt"})


async def test_fifos_are_refused_without_blocking(tools: dict[str, Tool], tmp_path: Path) -> None:
    work = tmp_path / "work"
    os.mkfifo(work / "pipe")
    (work / "text.txt").write_text("findable line\n")
    started = time.monotonic()
    with pytest.raises(NotAFileError, match="FIFO"):
        await tools["read_file"].execute({"path": "pipe"})
    with pytest.raises(NotAFileError, match="FIFO"):
        await tools["write_file"].execute({"path": "pipe", "content": "x"})
    with pytest.raises(BuiltinToolError):
        await tools["grep"].execute({"pattern": "x", "path": "pipe"})
    found = await tools["grep"].execute({"pattern": "findable"})
    assert "text.txt:1: findable line" in found and "1 binary, unreadable, special" in found
    listed = await tools["list_dir"].execute({})
    assert "pipe  (a FIFO (named pipe); not readable by the tools)" in listed
    assert time.monotonic() - started < 10, "a FIFO blocked a tool"


async def test_a_name_over_255_bytes_is_refused_with_a_sentence(tools: dict[str, Tool]) -> None:
    long_name = "é" * 130  # 260 bytes in UTF-8
    for name in ("read_file", "write_file", "list_dir"):
        args: dict[str, Any] = {"path": f"folder/{long_name}"}
        if name == "write_file":
            args["content"] = "x"
        with pytest.raises(BuiltinToolError, match="longer than 255 bytes"):
            await tools[name].execute(args)


async def test_stuck_tools_never_starve_other_tools_or_the_apps_threads() -> None:
    release = threading.Event()

    @tool("stuck", "Blocks.", {}, timeout=0.2)
    def stuck(_args: dict[str, Any]) -> str:
        release.wait(60)
        return "late"

    @tool("quick", "Answers.", {})
    def quick(_args: dict[str, Any]) -> str:
        return "quick answer"

    options = AgentOptions(model="m", base_url="http://127.0.0.1:9/v1", tools=[stuck, quick])
    try:
        outcomes = await asyncio.gather(*[
            run_tool_call(ToolUseBlock(f"s{i}", "stuck", {}), options, [])
            for i in range(TOOL_WORKERS + 2)])
        assert all("did not finish within 0.2 s" in o.result.content for o in outcomes)
        # every tool thread is stuck, yet a new call and the app's own threads still run
        answer = await asyncio.wait_for(
            run_tool_call(ToolUseBlock("q", "quick", {}), options, []), 10)
        assert answer.result.content == "quick answer"
        assert await asyncio.wait_for(asyncio.to_thread(lambda: "app thread"), 5) == "app thread"
    finally:
        release.set()
