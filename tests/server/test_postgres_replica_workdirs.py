"""Working folders across ``serve`` replicas: one shared folder, given by ``--workdirs``.

Tools work on files, so every replica is given the same folder (a shared volume,
here one folder of this machine) for conversations' working folders. A file a turn
writes through one replica is read through another; a replica started without the
folder, or with another one than the others share, does not start, and says why.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from replica_harness import (
    KEY,
    SECRET_KEY,
    WAIT,
    Replica,
    create_conversation,
    running_replicas,
    shared_workdirs,
    wait_idle,
)

from desktop_agent.appdata.secret_cipher import SECRET_KEY_VARIABLE
from desktop_agent.testing import ScriptedServer, script


@pytest.fixture
def replicas(data_dir: Path, postgres_url: str) -> Iterator[list[Replica]]:
    """Three ``serve`` processes on one database and one shared ``--workdirs``."""
    with running_replicas(data_dir, postgres_url) as started:
        yield started


def _serve_exit(data_dir: Path, *args: str, env: dict[str, str] | None = None,
                ) -> subprocess.CompletedProcess[str]:
    """``serve`` that is expected to refuse to start (so no port is ever bound)."""
    environment = {**os.environ, "DESKTOP_AGENT_DATA_DIR": str(data_dir),
                   "DESKTOP_AGENT_MASTER_KEY": KEY, **(env or {})}
    for name in ("DESKTOP_AGENT_WORKDIRS", "DESKTOP_AGENT_DATABASE_URL"):
        if name not in (env or {}):
            environment.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "desktop_agent", "serve", "--port", "1", *args],
        env=environment, capture_output=True, text=True, timeout=WAIT, check=False)


@pytest.mark.slow
def test_a_file_a_turn_writes_through_b_is_read_through_c(
    replicas: list[Replica], model_server: ScriptedServer, data_dir: Path, tmp_path: Path,
    postgres_url: str,
) -> None:
    (_, a), (_, b), (_, c) = replicas
    model_server.enqueue(
        script.tool_calls([("write_file", {"path": "notes/plan.md", "content": "step one\n"})]),
        script.text("Saved."))
    cid = create_conversation(a, model_server, tools=["write_file"], confirm_tools=False)
    workdir = Path(a.get(f"/conversations/{cid}").json()["workdir"])
    assert workdir.parent == shared_workdirs(data_dir).resolve()  # made by A, in the shared one
    assert workdir.is_dir()
    for client in (b, c):
        assert client.get(f"/conversations/{cid}").json()["workdir"] == str(workdir)

    assert b.post(f"/conversations/{cid}/run", json={"message": "plan"}).status_code == 202
    events = wait_idle(c, cid)
    result = next(e["data"] for e in events if e["type"] == "tool_result")
    assert not result["is_error"], result
    read = c.get(f"/conversations/{cid}/files/content", params={"path": "notes/plan.md"})
    assert read.status_code == 200, read.text
    assert read.content == b"step one\n"
    listed = a.get(f"/conversations/{cid}/files", params={"path": "notes"}).json()
    assert [entry["name"] for entry in listed["entries"]] == ["plan.md"]

    # A fourth replica given a folder of its own machine, not the shared one: refused.
    local = tmp_path / "local-disk"
    refused = _serve_exit(data_dir, "--workdirs", str(local), env={
        "DESKTOP_AGENT_DATABASE_URL": postgres_url, SECRET_KEY_VARIABLE: SECRET_KEY})
    assert refused.returncode == 1, refused.stderr
    assert "is not the folder the other replicas of this database share" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_serve_on_a_database_without_workdirs_refuses_to_start_in_words(
        data_dir: Path) -> None:
    result = _serve_exit(data_dir, "--database", "postgresql://agent@127.0.0.1:1/agent")
    assert result.returncode == 1
    assert "with --database, give --workdirs PATH" in result.stderr
    assert "every replica must be given the same shared folder" in result.stderr
    assert "Traceback" not in result.stderr


def test_workdirs_inside_the_data_folder_is_refused(data_dir: Path) -> None:
    result = _serve_exit(data_dir, "--workdirs", str(data_dir / "logs"))
    assert result.returncode == 1
    assert "is inside the app's data folder" in result.stderr
    assert "Traceback" not in result.stderr
