"""Pictures over REST: image parts reach the model as data URIs and are stored as sent."""

from __future__ import annotations

import base64

from server_harness import RunningApi

from desktop_agent.testing import script
from desktop_agent.testing.images import png_bytes


def _image(data: bytes, mime: str = "image/png") -> dict:
    return {"type": "image_url",
            "image_url": {"url": f"data:{mime};base64,{base64.b64encode(data).decode()}"}}


def test_image_parts_reach_the_model_and_the_store(api: RunningApi, model_server):
    model_server.enqueue(script.text("A green square."))
    cid = api.create(base_url=model_server.base_url, model="vl-model")["id"]
    parts = [{"type": "text", "text": "What is this?"}, _image(png_bytes(rgb=(0, 255, 0)))]
    sent = api.client.post(f"/conversations/{cid}/messages", json={"content": parts})
    assert sent.status_code == 201, sent.text
    assert sent.json()["message"]["content"] == parts
    assert api.client.post(f"/conversations/{cid}/run").status_code == 202
    assert api.wait_idle(cid)["data"]["outcome"] == "complete"

    assert model_server.requests[-1]["messages"][-1] == {"role": "user", "content": parts}
    stored = api.client.get(f"/conversations/{cid}/messages").json()["messages"]
    assert stored[0]["message"]["content"] == parts
    assert stored[1]["message"]["content"] == "A green square."


def test_run_with_an_image_message(api: RunningApi, model_server):
    model_server.enqueue(script.text("Red."))
    cid = api.create(base_url=model_server.base_url, model="vl-model")["id"]
    parts = [_image(png_bytes())]
    assert api.client.post(f"/conversations/{cid}/run",
                           json={"message": parts}).status_code == 202
    api.wait_idle(cid)
    assert model_server.requests[-1]["messages"][-1]["content"] == parts


def test_bad_pictures_are_refused_with_a_sentence(api: RunningApi, model_server):
    cid = api.create(base_url=model_server.base_url, model="vl-model")["id"]
    for part, words in [
        (_image(b"MZ\x90\x00 not a picture"), "not a PNG, JPEG, GIF or WebP"),
        ({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}, "data: URI"),
        (_image(png_bytes(), "image/jpeg"), "its data is image/png"),
    ]:
        answer = api.client.post(f"/conversations/{cid}/messages", json={"content": [part]})
        assert answer.status_code == 422
        assert words in answer.text
    assert api.client.get(f"/conversations/{cid}/messages").json()["messages"] == []


def test_a_conversation_set_to_no_vision_refuses_pictures(api: RunningApi, model_server):
    cid = api.create(base_url=model_server.base_url, model="text-model", vision=False)["id"]
    answer = api.client.post(f"/conversations/{cid}/messages",
                             json={"content": [{"type": "text", "text": "see"},
                                               _image(png_bytes())]})
    assert answer.status_code == 422
    assert answer.json()["code"] == "vision_not_supported"
    assert "cannot see images" in answer.json()["error"]
    assert api.client.get(f"/conversations/{cid}/messages").json()["messages"] == []
    assert model_server.requests == []
