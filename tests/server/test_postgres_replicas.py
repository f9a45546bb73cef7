"""Three real ``desktop-agent serve`` replicas on one real PostgreSQL database.

Each replica is its own process with ``DESKTOP_AGENT_DATABASE_URL`` pointing at a
fresh database on the session's private cluster (``postgres_url``); the model is
the scripted OpenAI-compatible server. What a team running several replicas
relies on: a conversation made through one replica is run through another and
streamed live through a third, ``Last-Event-ID`` resumes on any of them, two
replicas asked to run one conversation at once start one turn (the other answers
409), and a replica killed mid-turn loses none of the events it wrote while
another replica runs the next turn. A callback registered through one replica receives
every event of a turn another replica runs, once and in order. Secrets set through one
replica are sealed in the database with the replicas' shared key (a dump shows no value)
and reach the commands another replica runs; a replica without the key, or with another
one, refuses to start.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from replica_harness import (
    KEY,
    SECRET_KEY,
    WAIT,
    Follower,
    Replica,
    all_events,
    create_conversation,
    running_replicas,
    shared_workdirs,
    wait_idle,
)

from desktop_agent.appdata.secret_cipher import SECRET_KEY_VARIABLE, new_secret_key
from desktop_agent.store.event_table import LIVE_OUTPUT_TYPES
from desktop_agent.testing import ScriptedServer, script

WORDS = [f"w{n}" for n in range(40)]


@pytest.fixture
def replicas(data_dir: Path, postgres_url: str) -> Iterator[list[Replica]]:
    """Three ``serve`` processes on one database."""
    with running_replicas(data_dir, postgres_url) as started:
        yield started


@pytest.mark.slow
def test_create_on_a_run_on_b_stream_live_on_c_resume_on_a(
    replicas: list[Replica], model_server: ScriptedServer, data_dir: Path,
) -> None:
    (_, a), (_, b), (_, c) = replicas
    model_server.enqueue(script.text(" ".join(WORDS), delay=0.05))
    cid = create_conversation(a, model_server)
    follower = Follower(c, cid)
    follower.start()
    assert follower.connected.wait(WAIT) and follower.error is None, follower.error

    assert b.post(f"/conversations/{cid}/run", json={"message": "hi"}).status_code == 202
    follower.join(WAIT)
    assert not follower.is_alive() and follower.error is None, follower.error

    seen = [event for _, event in follower.arrivals]
    assert [e["id"] for e in seen] == list(range(1, len(seen) + 1))
    assert "".join(e["data"]["text"] for e in seen if e["type"] == "text") == " ".join(WORDS)
    # Live, not at the end: C had the reply's first words while B was still streaming
    # it (the model sends 40 pieces 50 ms apart).
    text_times = [t for t, e in follower.arrivals if e["type"] == "text"]
    idle_time = follower.arrivals[-1][0]
    assert idle_time - text_times[0] > 0.5, (text_times[0], idle_time)
    assert all_events(a, cid) == seen  # every replica reads the same log

    middle = seen[len(seen) // 2]["id"]
    resumed = Follower(a, cid, headers={"Last-Event-ID": str(middle)}, until=seen[-1]["id"])
    resumed.start()
    resumed.join(WAIT)
    assert resumed.error is None, resumed.error
    assert [e for _, e in resumed.arrivals] == seen[middle:]

    messages = c.get(f"/conversations/{cid}/messages").json()
    assert [m["role"] for m in messages["messages"]] == ["user", "assistant"]
    assert not (data_dir / "conversations.sqlite3").exists()  # nothing went to SQLite


@pytest.mark.slow
def test_two_replicas_asked_to_run_one_conversation_at_once_start_one_turn(
    replicas: list[Replica], model_server: ScriptedServer,
) -> None:
    (_, a), (_, b), _ = replicas
    # The turn that starts is held mid-reply until both answers are in: on a busy machine
    # the second request could otherwise arrive after a short turn ended, and rightly start.
    both_answered = threading.Event()
    for _ in range(2):
        held = script.text(" ".join(WORDS), delay=0.05)
        held.steps.insert(2, script.Gate(both_answered, timeout=WAIT))
        model_server.enqueue(held)
    cid = create_conversation(a, model_server)
    barrier = threading.Barrier(2)
    answers: dict[str, httpx.Response] = {}

    def run(name: str, client: httpx.Client) -> None:
        barrier.wait()
        answers[name] = client.post(f"/conversations/{cid}/run", json={"message": name})

    threads = [threading.Thread(target=run, args=item) for item in (("a", a), ("b", b))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    both_answered.set()
    statuses = sorted(r.status_code for r in answers.values())
    assert statuses == [202, 409], {k: r.text for k, r in answers.items()}
    refused = next(r for r in answers.values() if r.status_code == 409)
    assert refused.json()["code"] in ("conversation_busy", "conversation_changed")
    events = wait_idle(a, cid)
    assert sum(e["type"] == "state" and e["data"].get("state") == "running"
               for e in events) == 1
    messages = a.get(f"/conversations/{cid}/messages").json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]


@pytest.mark.slow
def test_a_replica_killed_mid_turn_loses_no_event_and_another_runs_the_next_turn(
    replicas: list[Replica], model_server: ScriptedServer,
) -> None:
    (_, a), (b_process, b), _ = replicas
    model_server.enqueue(script.text(" ".join(WORDS * 5), delay=0.05))  # ~10 s
    model_server.enqueue(script.text("after the crash"))
    cid = create_conversation(a, model_server)
    assert b.post(f"/conversations/{cid}/run", json={"message": "long"}).status_code == 202
    deadline = time.monotonic() + WAIT
    while sum(e["type"] == "text" for e in all_events(a, cid)) < 5:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(b_process.pid, signal.SIGKILL)
    b_process.wait(WAIT)
    written = all_events(a, cid)
    assert [e["id"] for e in written] == list(range(1, len(written) + 1))

    deadline = time.monotonic() + WAIT
    while (answer := a.post(f"/conversations/{cid}/run",
                            json={"message": "again"})).status_code == 409:
        assert time.monotonic() < deadline, answer.text  # B's lease: gone with B
        time.sleep(0.2)
    assert answer.status_code == 202, answer.text
    after = wait_idle(a, cid)
    # Nothing B wrote was renumbered; of it only the live output went when A's turn
    # started (the retention rule), and A's events continue right after B's.
    of_b = [e for e in after if e["id"] <= len(written)]
    assert of_b == [e for e in written if e in of_b]
    assert not [e for e in written if e not in of_b and e["type"] not in LIVE_OUTPUT_TYPES]
    of_a = [e["id"] for e in after[len(of_b):]]
    assert of_a == list(range(len(written) + 1, len(written) + 1 + len(of_a)))
    tail = "".join(e["data"]["text"] for e in after[len(of_b):] if e["type"] == "text")
    assert tail.endswith("after the crash")
    # B's partial reply, cut off with B, is kept and marked interrupted when A takes the lease.
    messages = a.get(f"/conversations/{cid}/messages").json()["messages"]
    first_reply = next(m for m in messages if m["role"] == "assistant")
    assert first_reply["status"] == "interrupted"
    # Its text is what B's last checkpoint (about once a second) saved: a prefix of the reply.
    assert " ".join(WORDS * 5).startswith(first_reply["message"]["content"])


def _serve_exit(data_dir: Path, *args: str, env: dict[str, str] | None = None,
                ) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "DESKTOP_AGENT_DATA_DIR": str(data_dir),
                   "DESKTOP_AGENT_MASTER_KEY": KEY, **(env or {})}
    if SECRET_KEY_VARIABLE not in (env or {}):
        environment.pop(SECRET_KEY_VARIABLE, None)  # only the key a test gives
    # The shared folder every replica is given, so that the check a test is about is reached.
    environment.setdefault("DESKTOP_AGENT_WORKDIRS", str(shared_workdirs(data_dir)))
    return subprocess.run(
        [sys.executable, "-m", "desktop_agent", "serve", "--port", "1", *args],
        env=environment, capture_output=True, text=True, timeout=WAIT, check=False)


def test_a_database_that_is_not_a_postgresql_url_is_refused_in_words(data_dir: Path) -> None:
    result = _serve_exit(data_dir, "--database", str(data_dir / "other.sqlite3"))
    assert result.returncode == 1
    assert "--database takes a PostgreSQL URL" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_wrong_password_stops_serve_with_a_sentence_that_hides_the_password(
    data_dir: Path, postgres_url: str,
) -> None:
    secret = postgres_url.split(":")[2].split("@")[0]
    wrong = postgres_url.replace(secret, "not-the-password-42")
    result = _serve_exit(data_dir, env={"DESKTOP_AGENT_DATABASE_URL": wrong,
                                        SECRET_KEY_VARIABLE: SECRET_KEY})
    assert result.returncode == 1
    assert "cannot open the conversation store: Cannot connect" in result.stderr
    assert "not-the-password-42" not in result.stderr and "Traceback" not in result.stderr


TOKEN = "ghp_ReplicaSharedToken_4e81c0d9aa"


@pytest.mark.slow
def test_a_secret_set_on_a_reaches_bash_on_b_and_no_dump_shows_it(
    replicas: list[Replica], model_server: ScriptedServer,
    postgres_cluster: Any, postgres_url: str,
) -> None:
    (_, a), (_, b), (_, c) = replicas
    made = a.post("/conversations", json={"title": "with a token", "settings": {
        "base_url": model_server.base_url, "model": "test-model", "tools": ["bash"]}})
    assert made.status_code == 201, made.text
    cid = made.json()["id"]
    assert a.put(f"/conversations/{cid}/confirmation", json={"enabled": False}).is_success
    stored = a.put(f"/conversations/{cid}/secrets/GITHUB_TOKEN", json={"value": TOKEN})
    assert stored.status_code == 200 and stored.json()["persisted"] is True
    assert c.get(f"/conversations/{cid}/secrets").json() == {"names": ["GITHUB_TOKEN"]}

    model_server.enqueue(
        script.tool_calls([("bash", {"command": 'printf %s "$GITHUB_TOKEN" > seen.txt; '
                                                'printf %s "$GITHUB_TOKEN" | base64'})]),
        script.text("done"))
    assert b.post(f"/conversations/{cid}/run", json={"message": "use the token"}
                  ).status_code == 202
    events = wait_idle(c, cid)
    results = [e["data"]["content"] for e in events if e["type"] == "tool_result"]
    assert results and "exit code: 0" in results[0], results
    # The command B ran had the value set through A (the model only sees it redacted).
    workdir = Path(c.get(f"/conversations/{cid}").json()["workdir"])
    assert (workdir / "seen.txt").read_text() == TOKEN
    assert TOKEN not in json.dumps(events)

    encoded = base64.b64encode(TOKEN.encode()).decode()
    dump = postgres_cluster.dump(postgres_url)
    assert f"conv:{cid}:GITHUB_TOKEN" in dump  # the name is there: the value is sealed
    assert TOKEN not in dump and encoded not in dump and encoded[:24] not in dump

    # Deleting the conversation (through C) deletes its secrets' rows.
    assert c.delete(f"/conversations/{cid}").status_code == 200
    assert f"conv:{cid}:" not in postgres_cluster.dump(postgres_url)


def test_serve_on_a_database_without_a_secret_key_refuses_and_says_how_to_make_one(
    data_dir: Path, postgres_url: str, postgres_cluster: Any,
) -> None:
    result = _serve_exit(data_dir, env={"DESKTOP_AGENT_DATABASE_URL": postgres_url})
    assert result.returncode == 1
    assert "secrets.token_urlsafe(32)" in result.stderr, result.stderr
    assert "never stores secrets in plain text" in result.stderr
    assert "Traceback" not in result.stderr
    assert "secrets" not in postgres_cluster.dump(postgres_url)  # nothing was created

    bad = _serve_exit(data_dir, env={"DESKTOP_AGENT_DATABASE_URL": postgres_url,
                                     SECRET_KEY_VARIABLE: "not-a-key"})
    assert bad.returncode == 1 and "is not a key" in bad.stderr
    assert "Traceback" not in bad.stderr and "not-a-key" not in bad.stderr

    without_database = _serve_exit(data_dir, "--secret-key-file", str(data_dir / "k"))
    assert without_database.returncode == 1
    assert "--secret-key-file is for --database" in without_database.stderr


def test_a_replica_given_another_secret_key_refuses_to_start_in_words(
    data_dir: Path, postgres_url: str, tmp_path: Path,
) -> None:
    from desktop_agent.appdata.encrypted_vault import EncryptedVault
    from desktop_agent.appdata.secret_cipher import SecretCipher, parse_secret_key
    from desktop_agent.store import Store

    with Store.open(postgres_url) as store:  # the first replica's key, as it leaves it
        EncryptedVault(store, SecretCipher(parse_secret_key(SECRET_KEY, "the test")),
                       store.location).check_key()
    other = tmp_path / "other.key"
    other.write_text(new_secret_key())
    result = _serve_exit(data_dir, "--secret-key-file", str(other),
                         env={"DESKTOP_AGENT_DATABASE_URL": postgres_url})
    assert result.returncode == 1
    assert "does not open the secrets stored in" in result.stderr, result.stderr
    assert "Give this replica the same key as the others" in result.stderr
    assert "Traceback" not in result.stderr


class _Receiver:
    """A real HTTP receiver on 127.0.0.1 that keeps every body POSTed to it."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        bodies = self.bodies

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook?token="
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, count: int) -> list[dict[str, Any]]:
        deadline = time.monotonic() + WAIT
        while len(self.bodies) < count:
            assert time.monotonic() < deadline, f"{len(self.bodies)} of {count} arrived"
            time.sleep(0.02)
        return list(self.bodies)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receivers() -> Iterator[list[_Receiver]]:
    made = [_Receiver(), _Receiver(), _Receiver()]
    yield made
    for receiver in made:
        receiver.close()


@pytest.mark.slow
def test_a_callback_registered_on_a_gets_every_event_of_a_turn_run_on_b_once_in_order(
    replicas: list[Replica], model_server: ScriptedServer,
    receivers: list[_Receiver], postgres_cluster: Any, postgres_url: str,
) -> None:
    (_, a), (_, b), (_, c) = replicas
    first, second, third = receivers
    token = "cbtoken-7f3e9a21c4d8b6e0"
    cid = create_conversation(a, model_server)
    added = a.post(f"/conversations/{cid}/callbacks", json={"url": first.url + token})
    assert added.status_code == 201, added.text
    callback_id = added.json()["id"]
    listed = c.get(f"/conversations/{cid}/callbacks").json()["callbacks"]
    assert [(cb["id"], cb["url"]) for cb in listed] == [(callback_id, first.url + token)]

    model_server.enqueue(script.text(" ".join(WORDS[:10]), delay=0.02))
    assert b.post(f"/conversations/{cid}/run", json={"message": "hi"}).status_code == 202
    turn = wait_idle(c, cid)
    assert first.wait_for(len(turn)) == turn  # every event, in order, once (no replica twice)

    dump = postgres_cluster.dump(postgres_url)
    assert callback_id in dump and token not in dump and first.url not in dump

    # Removed through C: B, which runs the next turn, stops posting to it.
    assert c.delete(f"/conversations/{cid}/callbacks/{callback_id}").status_code == 204
    assert a.get(f"/conversations/{cid}/callbacks").json() == {"callbacks": []}
    assert c.post(f"/conversations/{cid}/callbacks",
                  json={"url": second.url + token, "event_types": ["state"]}).status_code == 201
    model_server.enqueue(script.text("again"))
    assert b.post(f"/conversations/{cid}/run", json={"message": "again"}).status_code == 202
    both = wait_idle(a, cid, turns=2)
    # By id: the first turn's live output went when this one started (retention rule).
    states = [e for e in both if e["id"] > turn[-1]["id"] and e["type"] == "state"]
    assert second.wait_for(len(states)) == states
    assert first.bodies == turn  # nothing of the second turn, nothing twice

    # Registered through A while B streams a reply: B hears of it (NOTIFY) and posts the
    # rest of the turn, from some event on, in order and once.
    model_server.enqueue(script.text(" ".join(WORDS), delay=0.05))  # about 2 s
    assert b.post(f"/conversations/{cid}/run", json={"message": "long"}).status_code == 202
    deadline = time.monotonic() + WAIT
    while sum(e["type"] == "text" for e in all_events(a, cid, after=both[-1]["id"])) < 3:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert a.post(f"/conversations/{cid}/callbacks", json={"url": third.url}).status_code == 201
    long_turn = [e for e in wait_idle(c, cid, turns=3) if e["id"] > both[-1]["id"]]
    deadline = time.monotonic() + WAIT
    while not third.bodies or third.bodies[-1]["type"] != "state" \
            or third.bodies[-1]["data"].get("state") != "idle":
        assert time.monotonic() < deadline, third.bodies[-3:]
        time.sleep(0.02)
    # Even the turn's last event proves it: B rereads callbacks at a turn's first event
    # only, and this turn had begun, so only the notification told B of this one.
    got = list(third.bodies)
    assert got == long_turn[len(long_turn) - len(got):], (got, long_turn)

    # Deleting the conversation deletes its callbacks' rows.
    assert a.delete(f"/conversations/{cid}").status_code == 200
    assert callback_id not in postgres_cluster.dump(postgres_url)
