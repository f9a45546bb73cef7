"""The engine's child process on its own: the hidden subcommand, its watchdog, its ready line.

These start ``python -m desktop_agent _engine ...`` exactly as ``LocalModel`` does
(``ChildLaunch.command``), but hold its pipes themselves, so a test can close the
watchdog pipe while the parent lives on: the path that stops the engine on macOS,
where there is no parent-death signal.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from runner_fixtures import process_gone, scaled, smollm2, wait_until

from desktop_agent.engine.engine_child import (
    EXIT_ORPHANED,
    HIDDEN_COMMAND,
    ChildLaunch,
    parse_ready_line,
)

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def launch(model: Path, **changes: object) -> ChildLaunch:
    fields: dict[str, object] = {
        "model": model, "port": 0, "alias": "smollm2", "context_size": 2048, "parallel": 1,
        "threads": 1, "gpu_layers": None, "flash_attn": "auto", "api_key": "test-key",
        "chat_template": None, **changes}
    return ChildLaunch(**fields)  # type: ignore[arg-type]


def test_the_child_announces_what_it_applied_and_stops_when_its_pipe_closes(
        tmp_path: Path) -> None:
    plan = launch(smollm2())
    with (tmp_path / "engine.log").open("wb") as log, subprocess.Popen(
            plan.command(os.getpid()), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=log, env=ENV, cwd=REPO) as child:
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(plan.private_line())
        child.stdin.flush()
        ready = parse_ready_line(child.stdout.readline().decode().strip())
        assert ready is not None, (tmp_path / "engine.log").read_text()
        assert ready.address == f"http://127.0.0.1:{ready.port}" and ready.port > 0
        assert (ready.context_length, ready.parallel) == (2048, 1)
        assert ready.supports_tools is False  # SmolLM2's own template ignores tools
        child.stdin.close()  # as if the app had gone, while this process lives on
        assert child.wait(timeout=scaled()) == 0
    assert "SIGTERM: stopping the model server" in (tmp_path / "engine.log").read_text()


def test_a_child_whose_parent_is_already_gone_does_not_load_the_model() -> None:
    not_my_parent = os.getpid() + 1_000_000
    result = subprocess.run(launch(smollm2()).command(not_my_parent), input=b"",
                            capture_output=True, env=ENV, cwd=REPO, timeout=scaled(),
                            check=False)
    assert result.returncode == EXIT_ORPHANED
    assert b"loading model" not in result.stderr


def test_the_hidden_subcommand_stays_out_of_help() -> None:
    result = subprocess.run([sys.executable, "-m", "desktop_agent", "--help"],
                            capture_output=True, text=True, env=ENV, cwd=REPO,
                            timeout=scaled(), check=False)
    assert result.returncode == 0 and "try-model" in result.stdout
    assert HIDDEN_COMMAND not in result.stdout


def test_the_one_binary_starts_itself_as_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", "/opt/desktop-agent/desktop-agent")
    command = launch(Path("/models/m.gguf")).command(42)
    assert command[:2] == ["/opt/desktop-agent/desktop-agent", HIDDEN_COMMAND]
    assert "test-key" not in command  # the key travels on stdin only


def test_an_app_that_exits_without_stopping_its_engine_leaves_none_behind(
        tmp_path: Path) -> None:
    """The script forgot stop(): at its exit the engine is told to stop (atexit, the pipe)."""
    script = ("import asyncio, sys\n"
              "from desktop_agent.engine.runner import LocalModel\n"
              "async def main():\n"
              "    engine = LocalModel(sys.argv[1], threads=1, context_length=1024,\n"
              "                        log_dir=sys.argv[2])\n"
              "    await engine.start()\n"
              "    print(engine.pid, flush=True)\n"
              "asyncio.run(main())\n")  # returns without stop(): atexit and the pipe remain
    result = subprocess.run([sys.executable, "-c", script, str(smollm2()), str(tmp_path)],
                            capture_output=True, text=True, env=ENV, cwd=REPO,
                            timeout=scaled(120), check=False)
    assert result.returncode == 0, result.stderr
    engine_pid = int(result.stdout.split()[0])
    wait_until(lambda: process_gone(engine_pid), "the engine of an app that exited has stopped")
