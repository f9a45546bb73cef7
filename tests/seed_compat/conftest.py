"""Run the seed's examples (rewritten, same calls) as real scripts against a scripted server."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from desktop_agent.testing import ScriptedServer

EXAMPLES = Path(__file__).parent / "examples"
ROOT = Path(__file__).resolve().parents[2]

RunExample = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def run_example(server: ScriptedServer) -> RunExample:
    """Run ``examples/<name>.py`` with the seed's environment pointing at ``server``."""

    def run(name: str, *args: str, stdin: str = "", env: dict[str, str] | None = None,
            with_model: bool = True) -> subprocess.CompletedProcess[str]:
        environment = {k: v for k, v in os.environ.items()
                       if not k.startswith(("OPEN_AGENT_", "DESKTOP_AGENT_BASE_URL",
                                            "DESKTOP_AGENT_MODEL"))}
        environment["PYTHONPATH"] = str(ROOT)
        environment["OPEN_AGENT_BASE_URL"] = server.base_url
        if with_model:
            environment["OPEN_AGENT_MODEL"] = "test-model"
        environment.update(env or {})
        done = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py"), *args],
                              input=stdin, capture_output=True, text=True, env=environment,
                              timeout=90, check=False)
        assert "Traceback" not in done.stderr, done.stderr
        return done

    return run
