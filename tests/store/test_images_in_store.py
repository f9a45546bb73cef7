"""Pictures in messages: the store keeps them, exports embed them, imports check them."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import jsonschema
import pytest

from desktop_agent import image_data
from desktop_agent.store import (
    ImportFormatError,
    Store,
    conversation_to_markdown,
    export_conversations,
    import_data,
    import_files,
)
from desktop_agent.store.export_format import export_schema
from desktop_agent.testing.images import png_bytes


def image(data: bytes, mime: str = "image/png") -> dict:
    url = f"data:{mime};base64,{base64.b64encode(data).decode()}"
    return {"type": "image_url", "image_url": {"url": url}}


def picture_conversation(store: Store) -> tuple[str, bytes]:
    picture = png_bytes(3, 3, (0, 128, 255))
    conv = store.create_conversation("Photo", {"model": "qwen2.5-vl"})
    store.add_message(conv.id, {"role": "user", "content": [
        {"type": "text", "text": "What colour is this?"}, image(picture)]})
    store.add_message(conv.id, {"role": "assistant", "content": "Blue."})
    return conv.id, picture


def test_the_store_keeps_the_picture(store: Store) -> None:
    conv_id, picture = picture_conversation(store)
    first = store.active_path(conv_id)[0].message
    url = first["content"][1]["image_url"]["url"]
    assert base64.b64decode(url.split(",", 1)[1]) == picture
    # search finds the words, not the base64
    assert [h.message_id for h in store.search("colour")]
    assert not store.search(url.split(",", 1)[1][:12])


@pytest.mark.parametrize(("part", "words"), [
    ({"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}, "data: URI"),
    (image(b"#!/bin/sh\nrm -rf ~\n"), "not a PNG, JPEG, GIF or WebP"),
    (image(png_bytes(), "image/svg+xml"), "cannot be sent"),
])
def test_the_store_refuses_links_and_fake_pictures(store: Store, part: dict, words: str) -> None:
    conv = store.create_conversation("Bad", {})
    with pytest.raises(ValueError, match=words):
        store.add_message(conv.id, {"role": "user", "content": [part]})
    assert store.active_path(conv.id) == []


def test_export_embeds_pictures_and_the_schema_says_so(store: Store) -> None:
    conv_id, picture = picture_conversation(store)
    document = export_conversations(store, [conv_id], secret_values=[])
    jsonschema.validate(document, export_schema())
    content = document["conversations"][0]["messages"][0]["message"]["content"]
    assert content[1]["image_url"]["url"] == image(picture)["image_url"]["url"]
    part_schema = export_schema()["$defs"]["content_part"]
    assert "embedded" in part_schema["description"]
    markdown = conversation_to_markdown(store, conv_id)
    assert "*[image]*" in markdown and "base64" not in markdown


def test_import_round_trip_keeps_the_picture(store: Store, tmp_path: Path,
                                             data_dir: Path) -> None:
    conv_id, picture = picture_conversation(store)
    path = tmp_path / "photo.json"
    path.write_text(json.dumps(export_conversations(store, [conv_id], secret_values=[])))
    with Store.open(tmp_path / "other.sqlite3") as other:
        [imported] = import_files(other, [path])
        url = other.active_path(imported.id)[0].message["content"][1]["image_url"]["url"]
        assert base64.b64decode(url.split(",", 1)[1]) == picture


def _export_with(part: dict) -> dict:
    return {"format": "desktop-agent-conversations", "version": 1, "conversations": [{
        "title": "t", "settings": {}, "messages": [
            {"id": "a", "parent_id": None, "message": {"role": "user", "content": [
                {"type": "text", "text": "see"}, part]}}]}]}


@pytest.mark.parametrize(("part", "words"), [
    ({"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
     "messages[0].message.content[1].image_url.url: is not an embedded PNG"),
    (image(b"<script>alert(1)</script>"), "content[1]: The image is not a PNG"),
    (image(png_bytes(), "image/gif"), "says it is image/gif but its data is image/png"),
])
def test_import_refuses_bad_pictures_naming_the_place(store: Store, data_dir: Path,
                                                      part: dict, words: str) -> None:
    with pytest.raises(ImportFormatError, match=words.replace("[", r"\[").replace("]", r"\]")):
        import_data(store, _export_with(part), "bad.json")
    assert store.list_conversations() == []


def test_import_refuses_a_picture_over_the_size_limit(store: Store, data_dir: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image_data, "MAX_IMAGE_BYTES", 64)
    big = png_bytes(40, 40)
    assert len(big) > 64
    with pytest.raises(ImportFormatError, match="MB"):
        import_data(store, _export_with(image(big)), "big.json")
    assert store.list_conversations() == []


def test_plain_openai_files_with_pictures_import(store: Store, data_dir: Path) -> None:
    picture = png_bytes()
    [record] = import_data(store, {"messages": [
        {"role": "user", "content": [{"type": "text", "text": "Describe"}, image(picture)]},
        {"role": "assistant", "content": "Red."}]}, "chat.json")
    assert record.title == "Describe"
    with pytest.raises(ImportFormatError, match=r"messages\[0\]\.content\[0\]"):
        import_data(store, {"messages": [{"role": "user", "content": [image(b"nope")]}]},
                    "bad.json")
