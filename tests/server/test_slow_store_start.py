"""A turn whose start waits for the database does not stop the server.

On PostgreSQL a turn's start waits for the database (the lease, the prompt,
the reply), and under load for a while. Those waits happen in a worker
thread (``desktop_agent.session.store_calls``): here the store is made to
hold one conversation's prompt until the test lets it go, and meanwhile the
same server must answer another request, refuse a second start of that
conversation, and stream another conversation's turn to its end.
"""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest
from server_harness import RunningApi

from desktop_agent.testing import script


def test_a_start_waiting_for_the_store_leaves_the_server_answering_and_streaming(
        api: RunningApi, model_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    slow = api.create(base_url=model_server.base_url, model="test-model")["id"]
    other = api.create(base_url=model_server.base_url, model="test-model")["id"]
    waiting, let_go = threading.Event(), threading.Event()
    add_message = api.store.add_message

    def held_add_message(conversation_id: str, *args: Any, **kwargs: Any) -> Any:
        if conversation_id == slow and not let_go.is_set():
            waiting.set()
            let_go.wait()
        return add_message(conversation_id, *args, **kwargs)

    monkeypatch.setattr(api.store, "add_message", held_add_message)
    model_server.enqueue(script.text("the other answer", pieces=3))
    model_server.enqueue(script.text("the slow answer", pieces=3))
    started: list[httpx.Response] = []
    starter = threading.Thread(target=lambda: started.append(api.client.post(
        f"/conversations/{slow}/run", json={"message": "first"})))
    starter.start()
    try:
        assert waiting.wait(60), "the start never reached the store"
        # The start is held in the store. The server still answers...
        assert api.client.get(f"/conversations/{other}").status_code == 200
        # ...refuses a second start of the same conversation (one turn at a time)...
        second = api.client.post(f"/conversations/{slow}/run", json={"message": "again"})
        assert second.status_code == 409, second.text
        # ...and runs another conversation's whole turn.
        ran = api.client.post(f"/conversations/{other}/run", json={"message": "hello"})
        assert ran.status_code == 202, ran.text
        api.wait_idle(other)
        texts = [e["data"]["text"] for e in api.events(other, types="text")]
        assert "".join(texts) == "the other answer"
    finally:
        let_go.set()
        starter.join(60)
    assert [r.status_code for r in started] == [202]
    api.wait_idle(slow)
    messages = api.client.get(f"/conversations/{slow}/messages").json()["messages"]
    assert [(m["role"], m["message"]["content"], m["status"]) for m in messages] == [
        ("user", "first", "complete"), ("assistant", "the slow answer", "complete")]
