"""HTTP callbacks: filtered, in order, retried with backoff, never blocking the conversation."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from server_harness import RunningApi, free_socket

from desktop_agent.testing import script


class Receiver:
    """A local HTTP receiver that answers 500 to its first ``failures`` POSTs."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.attempts: list[dict] = []
        self.accepted: list[dict] = []
        self.headers: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                receiver.attempts.append(body)
                receiver.headers.append(dict(self.headers))
                ok = len(receiver.attempts) > receiver.failures
                if ok:
                    receiver.accepted.append(body)
                self.send_response(200 if ok else 500)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + 15
        while len(self.accepted) < count:
            assert time.monotonic() < deadline, f"only {len(self.accepted)} of {count} arrived"
            time.sleep(0.02)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    made = Receiver(failures=2)
    yield made
    made.close()


def test_callback_fails_twice_then_gets_every_filtered_event_in_order(
        api: RunningApi, model_server, receiver: Receiver):
    cid = api.create(base_url=model_server.base_url, model="test-model")["id"]
    added = api.client.post(f"/conversations/{cid}/callbacks",
                            json={"url": receiver.url, "event_types": ["text", "state"]})
    assert added.status_code == 201
    callback_id = added.json()["id"]
    model_server.enqueue(script.text("one two three", pieces=3))
    api.client.post(f"/conversations/{cid}/run", json={"message": "go"})
    api.wait_idle(cid)

    wanted = api.events(cid, types=["text", "state"])
    receiver.wait_for(len(wanted))
    assert receiver.accepted == wanted
    # the first event was tried three times: two 500s, then accepted
    assert [a["id"] for a in receiver.attempts[:3]] == [wanted[0]["id"]] * 3
    assert receiver.headers[0]["X-Desktop-Agent-Event-Id"] == str(wanted[0]["id"])
    listed = api.client.get(f"/conversations/{cid}/callbacks").json()["callbacks"]
    assert listed[0]["delivered"] == len(wanted) and listed[0]["failed"] == 0
    assert listed[0]["event_types"] == ["state", "text"]

    removed = api.client.delete(f"/conversations/{cid}/callbacks/{callback_id}")
    assert removed.status_code == 204
    api.client.post(f"/conversations/{cid}/run", json={"message": "more"})
    api.wait_idle(cid, after=wanted[-1]["id"])
    time.sleep(0.3)  # give a wrongly-kept callback the chance to post (no timing assert)
    assert len(receiver.accepted) == len(wanted)
    assert api.client.delete(f"/conversations/{cid}/callbacks/{callback_id}").status_code == 404


def test_a_dead_receiver_never_blocks_the_conversation(api: RunningApi, model_server):
    sock = free_socket()
    dead_url = f"http://127.0.0.1:{sock.getsockname()[1]}/nobody"
    sock.close()
    cid = api.create(base_url=model_server.base_url, model="test-model")["id"]
    api.client.post(f"/conversations/{cid}/callbacks", json={"url": dead_url})
    model_server.enqueue(script.text("still streams " * 20))
    api.client.post(f"/conversations/{cid}/run", json={"message": "go"})
    idle = api.wait_idle(cid)
    assert idle["data"]["outcome"] == "complete"
    listed = api.client.get(f"/conversations/{cid}/callbacks").json()["callbacks"][0]
    assert listed["delivered"] == 0
    assert listed["last_error"].startswith("could not reach receiver")


def test_a_receiver_that_keeps_failing_is_given_up_on_after_the_policy_s_tries(
        api: RunningApi, model_server):
    """The harness's policy allows 4 retries: each event is posted 5 times, then counted failed."""
    refusing = Receiver(failures=10_000)
    try:
        cid = api.create(base_url=model_server.base_url, model="test-model")["id"]
        api.client.post(f"/conversations/{cid}/callbacks",
                        json={"url": refusing.url, "event_types": ["state"]})
        model_server.enqueue(script.text("hello"))
        api.client.post(f"/conversations/{cid}/run", json={"message": "go"})
        api.wait_idle(cid)
        first = api.events(cid, types=["state"])[0]["id"]
        deadline = time.monotonic() + 30
        while True:
            listed = api.client.get(f"/conversations/{cid}/callbacks").json()["callbacks"][0]
            if listed["failed"] >= 1:
                break
            assert time.monotonic() < deadline, f"never gave up: {listed}"
            time.sleep(0.05)
        assert [a["id"] for a in refusing.attempts].count(first) == 5
        assert listed["last_error"] == "receiver answered HTTP 500"
        assert listed["delivered"] == 0
    finally:
        refusing.close()


def test_callback_urls_must_be_http(api: RunningApi):
    cid = api.create()["id"]
    for url in ("file:///etc/passwd", "ftp://x", "not a url"):
        answer = api.client.post(f"/conversations/{cid}/callbacks", json={"url": url})
        assert answer.status_code == 422


def test_delivery_retry_keeps_its_spacing_and_gives_up_after_six_tries():
    from desktop_agent.server.callbacks import DELIVERY_RETRY

    budget = DELIVERY_RETRY.begin()
    waits = []
    while (wait := budget.next_delay()) is not None:
        waits.append(wait)
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0]
    assert DELIVERY_RETRY.attempts == 6


def test_a_connection_reset_inside_the_http_library_is_a_failed_try_not_a_dead_worker(
        api: RunningApi, model_server, monkeypatch: pytest.MonkeyPatch):
    """httpcore on uvloop raises AttributeError when a receiver resets a connection just
    after it opened (seen in CI): the callback retries and every event still arrives."""
    import httpx

    receiver = Receiver(failures=0)
    real_post = httpx.AsyncClient.post
    raised: list[int] = []

    async def post_reset_once(self, *args, **kwargs):
        if not raised:
            raised.append(1)
            raise AttributeError("'NoneType' object has no attribute 'getpeername'")
        return await real_post(self, *args, **kwargs)

    monkeypatch.setattr(httpx.AsyncClient, "post", post_reset_once)
    try:
        cid = api.create(base_url=model_server.base_url, model="test-model")["id"]
        added = api.client.post(f"/conversations/{cid}/callbacks",
                                json={"url": receiver.url, "event_types": ["text"]})
        assert added.status_code == 201
        model_server.enqueue(script.text("one two three", pieces=3))
        api.client.post(f"/conversations/{cid}/run", json={"message": "go"})
        api.wait_idle(cid)
        wanted = api.events(cid, types=["text"])
        receiver.wait_for(len(wanted))
        assert receiver.accepted == wanted
        assert raised == [1]
    finally:
        receiver.close()
