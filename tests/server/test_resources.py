"""Resources of a long-running server: conversations driven once do not pile up sockets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts open files in /proc")
def test_300_conversations_in_a_row_work_under_a_256_file_limit(tmp_path: Path) -> None:
    env = dict(os.environ)
    root = str(HERE.parent.parent)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    env["DESKTOP_AGENT_DATA_DIR"] = str(tmp_path / "data")
    done = subprocess.run(
        [sys.executable, str(HERE / "fd_limit_process.py"), str(tmp_path), "300", "256"],
        capture_output=True, text=True, timeout=600, env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-3000:]
    assert last.startswith("ok 300"), last
    fields = dict(part.split("=") for part in last.split()[2:])
    assert int(fields["fds"]) < 100, last  # no socket per conversation driven
    assert int(fields["runners"]) == 0, last  # idle runners were dropped
