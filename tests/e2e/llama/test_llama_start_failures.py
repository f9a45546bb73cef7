"""A server that crashes is reported as a crash, in words, with the fix.

These run without llama.cpp: a stand-in process dies the way a build compiled for
another CPU does (it prints llama.cpp's last words, then receives ``SIGILL``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from llama_process import LlamaStartError, describe_exit, start_server

CRASHING_BUILD = (
    "import os, signal, sys\n"
    "print('load_backend: loaded CPU backend', flush=True)\n"
    "print('AMX is not ready to be used!', flush=True)\n"
    "os.kill(os.getpid(), signal.{name})\n"
)


def start_crashing(tmp_path: Path, signal_name: str) -> str:
    with pytest.raises(LlamaStartError) as failure:
        start_server(
            log_dir=tmp_path,
            command=[sys.executable, "-c", CRASHING_BUILD.format(name=signal_name)],
        )
    return str(failure.value)


def test_a_build_killed_by_sigill_is_named_as_a_cpu_mismatch_with_the_fix(
    tmp_path: Path,
) -> None:
    message = start_crashing(tmp_path, "SIGILL")
    assert "llama-server was killed by SIGILL" in message
    assert "needs CPU instructions this machine lacks" in message
    assert "bash .ci/install_llama.sh" in message
    assert "AMX is not ready to be used!" in message  # the log tail comes along
    # A crash repeats on every port: one attempt, not three.
    assert len(list(tmp_path.glob("llama-server-*.log"))) == 1


def test_a_segfault_is_reported_as_a_crash_not_as_a_slow_start(tmp_path: Path) -> None:
    message = start_crashing(tmp_path, "SIGSEGV")
    assert "killed by SIGSEGV" in message
    assert "did not answer /health" not in message


def test_an_ordinary_exit_reports_its_status() -> None:
    assert describe_exit(1) == "llama-server exited with status 1"
    assert describe_exit(None).endswith("did not answer /health in time")
