"""Tool calls a model wrote as text become the same calls as the native form.

The parser is fed through the real StreamAggregator, split at every boundary,
and end to end through Client over ScriptedServer.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from desktop_agent.core.types import TextBlock, ToolUseBlock, ToolUseError
from desktop_agent.core.wire.stream import StreamAggregator

NATIVE = [("read_file", {"path": "a.txt", "offset": 2}), ("bash", {"command": "ls -l"})]

FORMATS = {
    "hermes": ('Let me look.\n<tool_call>{"name": "read_file", "arguments": {"path": "a.txt", '
               '"offset": 2}}</tool_call>\n<tool_call>{"name": "bash", "arguments": '
               '{"command": "ls -l"}}</tool_call>'),
    "mistral": ('Let me look.[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a.txt", '
                '"offset": 2}}, {"name": "bash", "arguments": {"command": "ls -l"}}]'),
    "function": ('Let me look.<function=read_file>{"path": "a.txt", "offset": 2}</function>'
                 '<function=bash>{"command": "ls -l"}</function>'),
    # Mistral Small 3.x / Devstral / Magistral (tokenizer v11+): one [TOOL_CALLS] per call
    "mistral_v11": ('Let me look.[TOOL_CALLS]read_file[ARGS]{"path": "a.txt", "offset": 2}'
                    '[TOOL_CALLS]bash[ARGS]{"command": "ls -l"}'),
    "mistral_v11_spaced": ('Let me look. [TOOL_CALLS] read_file[ARGS]{"path": "a.txt", '
                           '"offset": 2} [TOOL_CALLS] bash[ARGS]{"command": "ls -l"}'),
    "mistral_call_id": ('Let me look.[TOOL_CALLS]read_file[CALL_ID]a1b2c3d4e[ARGS]{"path": '
                        '"a.txt", "offset": 2}[TOOL_CALLS]bash[CALL_ID]f5g6h7i8j[ARGS]'
                        '{"command": "ls -l"}'),
    # a server that drops the [ARGS] control token from the text
    "mistral_no_args_token": ('Let me look.[TOOL_CALLS]read_file{"path": "a.txt", "offset": 2}'
                              '[TOOL_CALLS]bash{"command": "ls -l"}'),
}
MISTRAL_START = {
    "v03_with_ids": ('[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a.txt", '
                     '"offset": 2}, "id": "a1b2c3d4e"}, {"name": "bash", "arguments": '
                     '{"command": "ls -l"}, "id": "f5g6h7i8j"}]'),
    "v03_spaced": ('[TOOL_CALLS] [{"name": "read_file", "arguments": {"path": "a.txt", '
                   '"offset": 2}}, {"name": "bash", "arguments": {"command": "ls -l"}}]'),
    # the server dropped the [TOOL_CALLS] control token: a bare list of calls is left
    "bare_list": ('[{"name": "read_file", "arguments": {"path": "a.txt", "offset": 2}}, '
                  '{"name": "bash", "arguments": {"command": "ls -l"}}]'),
    "v11": ('[TOOL_CALLS]read_file[ARGS]{"path": "a.txt", "offset": 2}[TOOL_CALLS]bash[ARGS]'
            '{"command": "ls -l"}'),
}
SINGLE = {
    "python_tag": ('<|python_tag|>{"name": "read_file", "parameters": {"path": "a.txt", '
                   '"offset": 2}}<|eom_id|>'),
    "bare": '{"name": "read_file", "parameters": {"path": "a.txt", "offset": 2}}',
}


def _chunk(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"content": text}}]}


def _run(pieces: list[str], mode: str = "auto") -> tuple[str, list[Any]]:
    agg = StreamAggregator("incremental", mode)  # type: ignore[arg-type]
    blocks = []
    for piece in pieces:
        blocks += agg.feed(_chunk(piece))
    blocks += agg.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    blocks += agg.finish()
    text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
    assert text == agg.text
    calls = [(b.name, b.input) for b in blocks if isinstance(b, ToolUseBlock | ToolUseError)
             and isinstance(b, ToolUseBlock)]
    errors = [b for b in blocks if isinstance(b, ToolUseError)]
    return text, calls + errors


def _splits(text: str) -> list[list[str]]:
    out = [[text], list(text)]
    out += [[text[:i], text[i:]] for i in range(1, len(text))]
    out += [[text[:i], text[i:j], text[j:]] for i in range(1, len(text), 7)
            for j in range(i + 1, len(text), 5)]
    return out


@pytest.mark.parametrize("form", sorted(FORMATS))
def test_every_split_yields_the_native_calls_and_no_markup(form: str) -> None:
    for pieces in _splits(FORMATS[form]):
        text, calls = _run(pieces)
        assert calls == NATIVE, pieces
        assert text.strip() == "Let me look.", pieces


@pytest.mark.parametrize("form", sorted(SINGLE))
def test_llama_forms_at_every_split(form: str) -> None:
    for pieces in _splits(SINGLE[form]):
        text, calls = _run(pieces)
        assert calls == NATIVE[:1], pieces
        assert text.strip() == ""


@pytest.mark.parametrize("form", sorted(MISTRAL_START))
def test_mistral_forms_at_the_reply_start_at_every_split(form: str) -> None:
    for pieces in _splits(MISTRAL_START[form])[::3]:
        text, calls = _run(pieces)
        assert calls == NATIVE, pieces
        assert text.strip() == "", pieces


def test_a_json_list_that_is_not_calls_stays_text() -> None:
    text, calls = _run(['[{"a": 1}, {"b": 2}] are two objects'])
    assert text == '[{"a": 1}, {"b": 2}] are two objects' and calls == []


def test_a_mistral_call_without_a_name_is_a_typed_error() -> None:
    text, calls = _run(['[TOOL_CALLS]{"path": "a.txt"} and [TOOL_CALLS]?[ARGS]{"x": 1}'])
    assert len(calls) == 2 and all(isinstance(c, ToolUseError) for c in calls)
    assert "[TOOL_CALLS]" not in text


def test_plain_text_streams_without_delay_and_json_text_is_kept() -> None:
    agg = StreamAggregator("incremental")
    out = agg.feed(_chunk("Hello there, <b>world</b> and [1, 2]"))
    assert "".join(b.text for b in out if isinstance(b, TextBlock)) == \
        "Hello there, <b>world</b> and [1, 2]"
    out = agg.feed(_chunk(" now <tool"))  # only the possible markup prefix is held
    assert "".join(b.text for b in out if isinstance(b, TextBlock)) == " now "
    text, calls = _run(['{"a": 1, "b": [2]} is JSON, not a call'])
    assert text == '{"a": 1, "b": [2]} is JSON, not a call' and calls == []


def test_off_leaves_the_markup_as_text() -> None:
    text, calls = _run([FORMATS["hermes"]], mode="off")
    assert calls == [] and "<tool_call>" in text


def test_native_calls_win_over_text_markup() -> None:
    agg = StreamAggregator("incremental")
    agg.feed(_chunk(FORMATS["hermes"]))
    agg.feed({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "c1", "function": {"name": "bash",
                                             "arguments": json.dumps({"command": "pwd"})}}]}}]})
    agg.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    agg.finish()
    assert [(b.name, b.input) for b in agg.tool_blocks] == [("bash", {"command": "pwd"})]


@pytest.mark.parametrize("broken", [
    '<tool_call>{"name": "read_file", "arguments": {"path": "a.txt", "offset": 2,},}</tool_call>',
    "<tool_call>{'name': 'read_file', 'arguments': {'path': 'a.txt', 'offset': 2}}</tool_call>",
    '<tool_call>{"name": "read_file", "arguments": {"path": "a.txt", "offset": 2',
    '<|python_tag|>{"name": "read_file", "parameters": {"path": "a.txt", "offset": 2}',
    '<function=read_file>{"path": "a.txt", "offset": 2,}</function>',
])
def test_unambiguous_json_damage_is_repaired(broken: str) -> None:
    for pieces in ([broken], list(broken)):
        _text, calls = _run(pieces)
        assert calls == NATIVE[:1]


def test_single_quoted_text_keeps_its_escapes() -> None:
    _text, calls = _run(["<tool_call>{'name': 'bash', 'arguments': "
                         "{'command': 'echo \"it\\'s\"\\n'}}</tool_call>"])
    assert calls == [("bash", {"command": "echo \"it's\"\n"})]


@pytest.mark.parametrize("broken", [
    '<tool_call>{"name": "read_file", "arguments": {"path": "a.txt</tool_call>',
    '<tool_call>{"name": "read_file", "arguments": {"path": "a.txt"]}</tool_call>',
    '<tool_call>{"name": "read_file", "arguments": {"path" "a.txt"}}</tool_call>',
    '<tool_call>{"arguments": {"path": "a.txt"}}</tool_call>',
])
def test_unrepairable_calls_become_typed_errors(broken: str) -> None:
    text, calls = _run([broken])
    assert len(calls) == 1 and isinstance(calls[0], ToolUseError)
    assert "could not be read" in calls[0].error and calls[0].raw_data
    assert "<tool_call>" not in text


async def test_client_runs_a_call_written_as_text(server, make_options) -> None:
    """A Qwen-style reply over real HTTP runs the tool; history has no markup."""
    from desktop_agent import Client, tool
    from desktop_agent.core.types import ToolResultBlock
    from desktop_agent.testing import script

    @tool("get_weather", "Weather for a city", {"city": str})
    async def get_weather(args: dict[str, Any]) -> str:
        return f"Sunny in {args['city']}"

    server.enqueue(script.text('Checking.<tool_call>{"name": "get_weather", "arguments": '
                               '{"city": "Paris"}}</tool_call>', pieces=9),
                   script.text("Paris is sunny."))
    async with Client(make_options(tools=[get_weather], auto_execute_tools=True)) as client:
        await client.query("Weather in Paris?")
        items = [item async for item in client.receive_messages()]
        history = client.history
    results = [i.content for i in items if isinstance(i, ToolResultBlock)]
    assert results == ["Sunny in Paris"]
    assistant = history[1]
    assert assistant["content"].strip() == "Checking."
    assert assistant["tool_calls"][0]["function"]["name"] == "get_weather"
    assert history[2]["role"] == "tool" and history[-1]["content"] == "Paris is sunny."


@pytest.mark.parametrize("form", sorted(MISTRAL_START))
@pytest.mark.parametrize("llama", [False, True], ids=["native", "constrained"])
async def test_client_runs_mistral_calls_from_any_server(server, make_options, form: str,
                                                         llama: bool) -> None:
    """Mistral's forms run their tools over real HTTP, in the automatic mode's both ways.

    A llama.cpp server (``/props`` answering) makes the automatic mode ask for
    constrained replies; a server that ignores the grammar still sends Mistral's
    markup, which starts with ``[`` like a constrained list of calls and was
    read as a broken list (the calls were lost, the markup reported as an error).
    """
    from desktop_agent import Client, tool
    from desktop_agent.core.tooling import tool_call_mode
    from desktop_agent.core.types import ToolResultBlock
    from desktop_agent.testing import script

    @tool("read_file", "Reads a file", {"path": str, "offset": int})
    async def read_file(args: dict[str, Any]) -> str:
        return f"read {args['path']}"

    @tool("bash", "Runs a command", {"command": str})
    async def bash(args: dict[str, Any]) -> str:
        return f"ran {args['command']}"

    tool_call_mode.forget()
    if llama:  # llama.cpp's /props, trimmed to the key the server kind is told by
        server.routes[("GET", "/props")] = (200, {"default_generation_settings": {"n_ctx": 4096}})
    server.enqueue(script.text(MISTRAL_START[form], pieces=11), script.text("Both done."))
    async with Client(make_options(tools=[read_file, bash], auto_execute_tools=True)) as client:
        await client.query("Read a.txt and list the folder")
        items = [item async for item in client.receive_messages()]
    tool_call_mode.forget()
    assert [i.content for i in items if isinstance(i, ToolResultBlock)] == ["read a.txt",
                                                                            "ran ls -l"]
    assert ("response_format" in server.requests[0]) is llama
    assert "".join(i.text for i in items if isinstance(i, TextBlock)) == "Both done."


def test_llama_prompt_progress_becomes_blocks_before_the_text() -> None:
    """llama.cpp's return_progress chunks reach front ends as typed progress."""
    from desktop_agent.core.types import PromptProgressBlock

    agg = StreamAggregator("incremental")
    blocks = agg.feed({"choices": [], "prompt_progress":
                       {"total": 1000, "cache": 200, "processed": 400, "time_ms": 12}})
    blocks += agg.feed({"choices": [], "prompt_progress":
                        {"total": 1000, "cache": 200, "processed": 1000, "time_ms": 30}})
    blocks += agg.feed(_chunk("Hi"))
    assert blocks[:2] == [PromptProgressBlock(400, 1000, 200), PromptProgressBlock(1000, 1000, 200)]
    assert isinstance(blocks[2], TextBlock) and agg.text == "Hi"
