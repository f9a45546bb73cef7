"""Prompts with pictures: OpenAI image parts reach the server; a model that cannot see is told."""

import base64

import pytest

from desktop_agent import Client, RetryPolicy
from desktop_agent.core import errors
from desktop_agent.core.context.content_parts import (
    IMAGE_OMITTED_NOTE,
    image_part,
    text_part,
)
from desktop_agent.core.context.history_stores import MemoryHistory
from desktop_agent.testing import script
from desktop_agent.testing.images import png_bytes

pytestmark = pytest.mark.timeout(60)


async def drain(client):
    return [item async for item in client.receive_messages()]


async def test_image_parts_reach_the_server_as_data_uris(server, make_options):
    server.enqueue(script.text("A red square."))
    picture = png_bytes()
    async with Client(make_options()) as client:
        await client.query([text_part("What is this?"), image_part(picture, "image/png")])
        await drain(client)
        sent = server.requests[0]["messages"][0]
        assert sent["role"] == "user"
        assert sent["content"][0] == {"type": "text", "text": "What is this?"}
        url = sent["content"][1]["image_url"]["url"]
        assert url.startswith("data:image/png;base64,")
        assert base64.b64decode(url.split(",", 1)[1]) == picture
        # the history keeps the parts, so a store and an export keep the picture
        assert client.history[0]["content"][1]["image_url"]["url"] == url
        assert client.history[1] == {"role": "assistant", "content": "A red square."}


async def test_a_model_without_vision_is_refused_before_sending(server, make_options):
    async with Client(make_options(vision=False)) as client:
        with pytest.raises(errors.VisionNotSupportedError, match="cannot see images"):
            await client.query([text_part("Look"), image_part(png_bytes())])
        assert client.history == []
        assert server.requests == []
        # the same words without the picture still go through
        server.enqueue(script.text("ok"))
        await client.query("Look")
        await drain(client)
        assert server.requests[0]["messages"] == [{"role": "user", "content": "Look"}]


async def test_earlier_pictures_become_a_note_for_a_text_only_model(server, make_options):
    server.enqueue(script.text("A red square."), script.text("Yes."))
    async with Client(make_options()) as client:
        await client.query([text_part("What is this?"), image_part(png_bytes())])
        await drain(client)
        client.update_options(make_options(vision=False))
        await client.query("Are you sure?")
        await drain(client)
        first = server.requests[1]["messages"][0]["content"]
        assert first == [text_part("What is this?"), text_part(IMAGE_OMITTED_NOTE)]
        assert client.history[0]["content"][1]["type"] == "image_url"  # history unchanged


async def test_history_set_from_a_store_is_checked_too(server, make_options):
    async with Client(make_options(vision=False)) as client:
        client.message_history = [{"role": "user", "content": [
            text_part("Look"), image_part(png_bytes())]}]
        with pytest.raises(errors.VisionNotSupportedError):
            await drain(client)
        assert server.requests == []


@pytest.mark.parametrize("body", [
    # llama.cpp started without --mmproj
    {"error": {"code": 500, "message": "image input is not supported - hint: if this is "
               "unexpected, you may need to provide the mmproj", "type": "server_error"}},
    # LM Studio with a text-only model
    {"error": {"message": "Model does not support images. Please use a model that does."}},
])
async def test_a_server_refusing_the_picture_is_vision_not_supported(server, make_options, body):
    status = 500 if "mmproj" in str(body) else 400
    server.enqueue(script.Script([script.Status(status, body)]))
    async with Client(make_options(retry=RetryPolicy(max_retries=0))) as client:
        await client.query([text_part("Look"), image_part(png_bytes())])
        with pytest.raises(errors.VisionNotSupportedError) as caught:
            await drain(client)
        assert caught.value.status == status


@pytest.mark.parametrize(("data", "mime", "words"), [
    (b"#!/bin/sh\necho hi\n", "image/png", "not a PNG, JPEG, GIF or WebP"),
    (png_bytes(), "image/jpeg", "says it is image/jpeg but its data is image/png"),
    (png_bytes(), "image/svg+xml", "cannot be sent"),
])
def test_bad_images_are_refused_with_a_sentence(data, mime, words):
    with pytest.raises(errors.ConfigurationError, match=words):
        image_part(data, mime)


async def test_links_and_unknown_parts_are_refused(server, make_options):
    async with Client(make_options()) as client:
        with pytest.raises(errors.ConfigurationError, match="data: URIs"):
            await client.query([{"type": "image_url",
                                 "image_url": {"url": "https://example.com/a.png"}}])
        with pytest.raises(errors.ConfigurationError, match="'text' or 'image_url'"):
            await client.query([{"type": "input_audio", "input_audio": {}}])
        assert client.history == []


async def test_text_only_parts_are_sent_as_a_plain_string(server, make_options):
    server.enqueue(script.text("hi"))
    async with Client(make_options()) as client:
        await client.query([text_part("Hello")])
        await drain(client)
        assert server.requests[0]["messages"] == [{"role": "user", "content": "Hello"}]


async def test_a_refused_picture_leaves_nothing_behind(server, make_options):
    """llama.cpp without a vision projector: the refusal must not poison later prompts."""
    refusal = {"error": {"code": 500, "message": "image input is not supported - hint: if "
                         "this is unexpected, you may need to provide the mmproj",
                         "type": "server_error"}}
    server.enqueue(script.Script([script.Status(500, refusal)]), script.text("Hello there."))
    session = MemoryHistory()
    async with Client(make_options(retry=RetryPolicy(max_retries=0)),
                      session=session) as client:
        await client.query([text_part("Look"), image_part(png_bytes())])
        with pytest.raises(errors.VisionNotSupportedError):
            await drain(client)
        assert client.history == [] and client.turn_count == 0
        assert session.messages == []
        await client.query("Look, in words this time")  # the advice: send it without the picture
        await drain(client)
    assert [m["role"] for m in server.requests[1]["messages"]] == ["user"]
    assert client.history[-1] == {"role": "assistant", "content": "Hello there."}
    assert [m["content"] for m in session.messages] == ["Look, in words this time",
                                                         "Hello there."]
