"""A command, a restore and a turn never run beside each other on one conversation (issue 47).

Real HTTP to the app on real uvicorn, commands under real bubblewrap. A
command holds the conversation's turn lease as a turn does: a restore, an
undo, a turn or a second command asked meanwhile is refused with a 409 that
says a command runs; a command asked while a turn runs is refused naming
the turn. Then the issue's attack: one client keeps swapping a subfolder
for a link to a folder outside through ``/commands`` while another keeps
restoring; the outside folder stays as it was, and every answer is a 200 or
a 409 with a sentence, never a 500. CI runs this file as root and again as
a normal user (``.ci/sandbox_as_user.sh``).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_harness import WAIT, RunningApi

from desktop_agent.testing import ScriptedServer, script

COMMAND_RUNS = "A command is running in this conversation"
#: Seconds the race may take to have run enough (it ends as soon as it has; the bound
#: only stops a broken build from hanging the run).
RACE_BOUND = 600.0


@pytest.fixture(autouse=True)
def _sandbox(bubblewrap: None) -> None:
    """Commands run under the real sandbox."""


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + WAIT
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.02)


def test_nothing_runs_beside_a_command_and_a_command_waits_for_a_turn(
        api: RunningApi, model_server: ScriptedServer) -> None:
    cid = api.create(base_url=model_server.base_url, model="test-model",
                     tools=["get_weather"])["id"]
    workdir = api.workdir(cid)
    first = api.client.post(f"/conversations/{cid}/commands",
                            json={"command": "echo one > one.txt"}).json()
    assert first["exit_code"] == 0 and first["turn"]

    answers: dict[str, httpx.Response] = {}
    holding = threading.Thread(target=lambda: answers.setdefault("command", api.client.post(
        f"/conversations/{cid}/commands",
        json={"command": "touch started; while [ ! -e go ]; do sleep 0.05; done",
              "timeout": 120})))
    holding.start()
    try:
        _wait_for(workdir / "started")
        with httpx.Client(base_url=api.base_url, timeout=WAIT,
                          headers=dict(api.client.headers)) as other:
            refusals = [
                other.post(f"/conversations/{cid}/undo", json={"turn": first["turn"]}),
                other.post(f"/conversations/{cid}/restore", json={"checkpoint_id": "x"}),
                other.post(f"/conversations/{cid}/run", json={"message": "Weather?"}),
                other.post(f"/conversations/{cid}/commands", json={"command": "true"}),
            ]
        for refused in refusals:
            assert refused.status_code == 409, refused.text
            assert refused.json()["code"] == "conversation_busy"
            assert refused.json()["error"].startswith(COMMAND_RUNS), refused.text
        assert (workdir / "one.txt").exists()  # the undo did not run
    finally:
        (workdir / "go").touch()
        holding.join(WAIT)
    assert answers["command"].status_code == 200, answers["command"].text
    undone = api.client.post(f"/conversations/{cid}/undo", json={"turn": first["turn"]})
    assert undone.status_code == 200, undone.text
    assert not (workdir / "one.txt").exists()

    # the other way round: a turn waits for an answer, a command is refused naming it
    model_server.enqueue(script.tool_calls([("get_weather", {"city": "Oslo"})]),
                         script.text("Sunny."))
    assert api.client.post(f"/conversations/{cid}/run",
                           json={"message": "Weather?"}).status_code == 202
    asked = api.wait_for_event(cid, lambda e: e["type"] == "approval_requested")
    refused = api.client.post(f"/conversations/{cid}/commands", json={"command": "true"})
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"].startswith("A turn is running in this conversation")
    api.client.post(f"/conversations/{cid}/approvals/{asked['data']['tool_use_id']}/approve")
    api.wait_idle(cid)
    assert api.client.post(f"/conversations/{cid}/commands",
                           json={"command": "true"}).status_code == 200


# The attack: a command swaps sub for a link to the outside folder and back,
# with the link left in place half of the time (so a restore between commands meets it).
SWAP = ("i=0; while [ $i -lt 20 ]; do mv sub sub.away 2>/dev/null; "
        "ln -sfn {outside} sub; i=$((i+1)); [ $i -eq 20 ] && [ $(({n} % 2)) -eq 0 ] && break; "
        "rm -f sub; mv sub.away sub 2>/dev/null; done; "
        "echo changed-{n} > sub/f0.txt 2>/dev/null; true")


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else b"<dir>"
            for p in sorted(folder.rglob("*"))}


def test_restores_raced_by_commands_that_swap_in_a_link_stay_inside(
        api: RunningApi, tmp_path: Path) -> None:
    cid = api.create()["id"]
    workdir = api.workdir(cid)
    (workdir / "sub").mkdir(parents=True)
    for i in range(8):
        (workdir / "sub" / f"f{i}.txt").write_text(f"original {i}\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    for i in range(8):
        (outside / f"f{i}.txt").write_text(f"outside {i}\n")
    before = _snapshot(outside)
    turns: list[str] = []
    first = api.client.post(f"/conversations/{cid}/commands",
                            json={"command": "for f in sub/*.txt; do echo agent > $f; done"})
    turns.append(first.json()["turn"])
    stop = threading.Event()
    answers: list[tuple[str, int, Any]] = []

    def commands() -> None:
        with httpx.Client(base_url=api.base_url, timeout=WAIT,
                          headers=dict(api.client.headers)) as client:
            n = 0
            while not stop.is_set():
                n += 1
                got = client.post(f"/conversations/{cid}/commands", json={
                    "command": SWAP.format(outside=outside, n=n), "timeout": 60})
                answers.append(("command", got.status_code, got.json()))
                if got.status_code == 200 and got.json()["turn"]:
                    turns.append(got.json()["turn"])

    def raced_enough() -> bool:
        """Both sides ran a while, and an undo met a running command."""
        done = [(kind, status) for kind, status, _body in answers]
        return (done.count(("command", 200)) >= 10 and
                sum(kind == "undo" for kind, _status in done) >= 40 and
                any(k == "undo" and b.get("error", "").startswith(COMMAND_RUNS)
                    for k, _s, b in answers))

    racer = threading.Thread(target=commands)
    racer.start()
    deadline = time.monotonic() + RACE_BOUND
    try:
        i = 0
        while not raced_enough():
            assert time.monotonic() < deadline, f"the race never got going: {answers[-5:]}"
            turn = turns[i % len(turns)]
            i += 1
            got = api.client.post(f"/conversations/{cid}/undo",
                                  json={"turn": turn, "force": True})
            answers.append(("undo", got.status_code, got.json()))
    finally:
        stop.set()
        racer.join(WAIT * 4)
    assert _snapshot(outside) == before
    assert not list(outside.glob("*.tmp")) and not list(outside.glob(".*"))
    codes = {(kind, status) for kind, status, _body in answers}
    assert not [a for a in answers if a[1] >= 500], [a for a in answers if a[1] >= 500][:3]
    for _kind, status, body in answers:
        assert status in (200, 404, 409), (status, body)
        if status != 200:
            assert body["error"].endswith(".") and body["code"], body
    assert ("command", 200) in codes and ("undo", 409) in codes, codes
    refused = [b for k, s, b in answers if k == "undo" and s == 409]
    assert any(b["error"].startswith(COMMAND_RUNS) for b in refused), refused[:3]
