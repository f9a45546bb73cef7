"""JSON export and import: round trips, foreign files, and all-or-nothing imports."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from desktop_agent.store import (
    ImportFormatError,
    Store,
    conversation_to_markdown,
    export_conversations,
    import_data,
    import_files,
    write_export_file,
)
from desktop_agent.store.export_format import export_schema


def _build_rich_conversation(store: Store) -> str:
    """A conversation with branches, thinking, tool calls, results and approvals."""
    conv = store.create_conversation(
        "Weather agent",
        {
            "base_url": "http://127.0.0.1:1234/v1",
            "model": "qwen3-8b",
            "api_key_name": "api:LM Studio",
            "system_prompt": "You are helpful.",
            "temperature": 0.3,
            "tools": ["get_weather"],
            "auto_execute": False,
            "workdir": "/tmp/work",
        },
    )
    question = store.add_message(conv.id, {"role": "user", "content": "Weather in Paris?"})
    store.add_message(
        conv.id,
        {"role": "assistant", "content": "I cannot know."},
        metadata={"model": "qwen3-8b", "thinking": "no tools?"},
        status="interrupted",
    )
    call = store.add_message(
        conv.id,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        parent_id=question.id,
        metadata={
            "model": "qwen3-8b",
            "thinking": "I should call the tool.",
            "usage": {"prompt_tokens": 20, "completion_tokens": 9, "tokens_per_second": 41.5},
            "tool_calls": {
                "call_1": {
                    "status": "ok",
                    "approval": {
                        "decision": "allow",
                        "by": "user",
                        "edited_input": {"city": "Paris, FR"},
                    },
                }
            },
        },
    )
    store.add_message(
        conv.id,
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "18°C, sun"},
        metadata={"approval": {"decision": "allow_once", "reason": "looks safe"}},
    )
    store.add_message(conv.id, {"role": "assistant", "content": "It is 18°C and sunny."})
    assert call.parent_id == question.id
    return conv.id


def _tree(store: Store, conversation_id: str) -> dict[str, Any]:
    """A conversation as an id-free nested structure (for equality across imports)."""
    record = store.get_conversation(conversation_id)
    messages = store.all_messages(conversation_id)
    children: dict[str | None, list] = {}
    for m in messages:
        children.setdefault(m.parent_id, []).append(m)

    def node(m):
        return {
            "message": m.message,
            "metadata": m.metadata,
            "status": m.status,
            "created_at": m.created_at,
            "children": [node(c) for c in children.get(m.id, [])],
        }

    return {
        "title": record.title,
        "settings": record.settings,
        "created_at": record.created_at,
        "roots": [node(r) for r in children.get(None, [])],
        "active": [(m.message, m.metadata) for m in store.active_path(conversation_id)],
    }


def test_export_then_import_gives_equal_conversations(store: Store, tmp_path: Path) -> None:
    original = _build_rich_conversation(store)
    second = store.create_conversation("Empty one", {"model": "m"}).id
    out = tmp_path / "export.json"
    assert write_export_file(store, out, [original, second]) == 2

    document = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(export_schema())  # the shipped schema is sound
    jsonschema.validate(document, export_schema())
    assert document["format"] == "desktop-agent-conversations" and document["version"] == 1

    resets: list[str] = []
    imported = import_files(store, [out], report=resets)
    assert len(imported) == 2
    assert {r.id for r in imported}.isdisjoint({original, second})  # always NEW conversations
    # Everything comes back except what could weaken safety: the name of an API key
    # (an imported file may not send the person's key to a server it names). The
    # working folder is kept: this installation sealed it in its own export and it
    # passes the working-folder rule. Each reset is reported.
    expected = _tree(store, original)
    assert expected["settings"].pop("api_key_name") == "api:LM Studio"
    assert expected["settings"]["workdir"] == "/tmp/work"
    assert _tree(store, imported[0].id) == expected
    assert [r.split(": ", 1)[1].split(" ", 3)[:3] for r in resets] == [["the", "API", "key"]]
    assert _tree(store, imported[1].id) == _tree(store, second)
    assert store.count_conversations() == 4
    # The imports are what the list shows first.
    assert {c.id for c in store.list_conversations(limit=2)} == {r.id for r in imported}
    # The import kept the branch structure: the regenerated sibling is still there.
    active_question = store.active_path(imported[0].id)[0]
    assert len(store.children(active_question.id)) == 2


def test_export_all_includes_every_conversation(store: Store) -> None:
    for i in range(3):
        store.create_conversation(f"c{i}")
    document = export_conversations(store, secret_values=[])
    assert [c["title"] for c in document["conversations"]] == ["c2", "c1", "c0"]


def test_openai_style_file_imports_as_a_new_chain(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(
        json.dumps(
            {
                "model": "gpt-oss",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Name a prime."},
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "calc", "arguments": "{}"},
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": "c1", "content": "7"},
                    {"role": "assistant", "content": "7"},
                ],
            }
        ),
        encoding="utf-8",
    )
    (record,) = import_files(store, [path])
    assert record.title == "Name a prime."
    assert record.settings == {"model": "gpt-oss", "system_prompt": "Be brief."}
    path_records = store.active_path(record.id)
    assert [m.role for m in path_records] == ["user", "assistant", "tool", "assistant"]
    assert path_records[1].message["tool_calls"][0]["function"]["name"] == "calc"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"{not json", "is not valid JSON (line 1, column 2"),
        (b"\xff\xfe\x00garbage", "is not UTF-8 text"),
        (b"[1, 2, 3]", "holds an array at the top level"),
        (b'{"hello": "world"}', 'neither a Desktop Agent export (no "format" field)'),
        (b'{"format": "chatgpt-archive", "version": 1}', "is a 'chatgpt-archive' file"),
        (
            b'{"format": "desktop-agent-conversations", "version": 9, "conversations": []}',
            "newer Desktop Agent (format version 9",
        ),
        (
            b'{"messages": [{"role": "robot", "content": "hi"}]}',
            'messages[0].role: "robot" is not one of system',
        ),
        (b'{"messages": []}', "messages: should not be empty"),
        (
            b'{"format": "desktop-agent-conversations", "version": 1, "conversations": [{"title":'
            b' "t", "settings": {}, "messages": [{"id": "a", "parent_id": "zzz", "message":'
            b' {"role": "user", "content": "x"}}]}]}',
            "conversations[0].messages[0].parent_id 'zzz' is not the id of an earlier message",
        ),
        (
            b'{"format": "desktop-agent-conversations", "version": 1, "conversations": [{"title":'
            b' "t", "settings": {"api_key": "abcdefgh"}, "messages": []}]}',
            "conversations[0].settings: holds an API key",
        ),
        (
            b'{"format": "desktop-agent-conversations", "version": 1, "conversations": [{"title":'
            b' 5, "settings": {}, "messages": []}]}',
            "conversations[0].title: should be of type string, not a number",
        ),
    ],
)
def test_bad_files_get_a_clear_message_and_import_nothing(
    store: Store, tmp_path: Path, content: bytes, problem: str
) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"messages": [{"role": "user", "content": "fine"}]}))
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    with pytest.raises(ImportFormatError) as caught:
        import_files(store, [good, bad])
    assert caught.value.source == "bad.json"
    assert problem in caught.value.problem, caught.value.problem
    assert "abcdefgh" not in str(caught.value)  # a key in a bad file is never echoed
    assert store.count_conversations() == 0  # the good file was not imported either


def test_missing_file_is_reported_by_name(store: Store, tmp_path: Path) -> None:
    with pytest.raises(ImportFormatError, match=r"nowhere\.json: cannot be read"):
        import_files(store, [tmp_path / "nowhere.json"])


def test_markdown_shows_the_active_branch_with_tools_thinking_and_approvals(store: Store) -> None:
    conversation_id = _build_rich_conversation(store)
    text = conversation_to_markdown(store, conversation_id, secret_values=[])
    assert text.startswith("# Weather agent\n")
    assert "- Model: `qwen3-8b`" in text
    assert "> You are helpful." in text
    assert "<details><summary>Thinking</summary>\n\nI should call the tool." in text
    assert "**Tool call** `get_weather` (approved by user)" in text
    assert '"city": "Paris"' in text
    assert "## Tool result: get_weather" in text and "18°C, sun" in text
    assert "*Approval: approved once: looks safe*" in text
    assert "It is 18°C and sunny." in text
    assert "I cannot know." not in text  # the other branch is not in the reading copy
    assert "1 message(s) on other branches" in text


# NUL is refused with a sentence (tests/server/test_error_answers.py); all else survives
_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                max_size=40)
_tree_shapes = st.lists(
    st.tuples(
        st.integers(min_value=-1, max_value=30),  # parent: an earlier message, or a root
        st.sampled_from(["user", "assistant", "tool"]),
        _text,
        st.dictionaries(st.sampled_from(["model", "thinking", "note"]), _text, max_size=3),
        st.sampled_from(["complete", "interrupted", "error"]),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=40, deadline=None)
@given(shape=_tree_shapes, title=_text, leaf_pick=st.integers(min_value=0, max_value=100))
def test_any_tree_survives_export_and_import(shape, title: str, leaf_pick: int) -> None:
    with tempfile.TemporaryDirectory() as folder, Store.open(Path(folder) / "db") as store:
        conv = store.create_conversation(title or "untitled", {"model": "m"})
        ids: list[str] = []
        for parent_index, role, content, metadata, status in shape:
            if parent_index < 0 or not ids:
                record = store.add_message(
                    conv.id,
                    {"role": role, "content": content},
                    metadata=metadata,
                    status=status,
                    new_root=True,
                )
            else:
                record = store.add_message(
                    conv.id,
                    {"role": role, "content": content},
                    parent_id=ids[parent_index % len(ids)],
                    metadata=metadata,
                    status=status,
                )
            ids.append(record.id)
        store.set_active_leaf(conv.id, ids[leaf_pick % len(ids)])

        document = json.loads(json.dumps(export_conversations(store, [conv.id], secret_values=[])))
        (copy,) = import_data(store, document)
        assert _tree(store, copy.id) == _tree(store, conv.id)
