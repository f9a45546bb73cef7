"""The aggregator against every quirk real servers send (chunks as decoded dicts)."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from desktop_agent import TextBlock, ThinkingBlock, ToolUseBlock, ToolUseError
from desktop_agent.core.wire.stream import StreamAggregator


def delta(d=None, finish=None):
    return {"choices": [{"index": 0, "delta": d or {}, "finish_reason": finish}]}


def frag(index, name=None, args=None, call_id=None):
    f = {"index": index, "function": {}}
    if name is not None:
        f["function"]["name"] = name
    if args is not None:
        f["function"]["arguments"] = args
    if call_id is not None:
        f["id"] = call_id
    return f


def run(chunks, mode="auto"):
    agg = StreamAggregator(mode)
    blocks = []
    for chunk in chunks:
        blocks += agg.feed(chunk)
    blocks += agg.finish()
    return agg, blocks


def texts(pieces):
    return [delta({"content": p}) for p in pieces]


def test_incremental_text_is_never_lost():
    agg, blocks = run(texts(["ha", "ha", "!"]))
    assert agg.text == "haha!"
    assert [b.text for b in blocks] == ["ha", "ha", "!"]


def test_cumulative_text_is_deduplicated():
    agg, blocks = run(texts(["Hello", "Hello world", "Hello world!"]))
    assert agg.text == "Hello world!"
    assert [b.text for b in blocks] == ["Hello", " world", "!"]
    assert agg.mode == "cumulative"


def test_mode_can_be_forced():
    agg, _ = run(texts(["Hello", "Hello world"]), mode="incremental")
    assert agg.text == "HelloHello world"
    agg, _ = run(texts(["ab", "abc"]), mode="cumulative")
    assert agg.text == "abc"


def test_mode_is_decided_once():
    # once the stream is known to be incremental, a piece that happens to
    # repeat the text so far is still appended
    agg, _ = run(texts(["I", " said", "I said", "!"]))
    assert agg.text == "I saidI said!"


def test_text_and_tool_call_in_one_delta_both_survive():
    agg, blocks = run([
        delta({"content": "Let me look.", "tool_calls": [frag(0, "search", '{"q": "x"}', "c1")]}),
        delta(finish="tool_calls"),
    ])
    assert agg.text == "Let me look."
    assert blocks[-1] == ToolUseBlock("c1", "search", {"q": "x"})


def test_late_ids_names_and_interleaved_calls():
    agg, blocks = run([
        delta({"tool_calls": [frag(1, args='{"b"')]}),
        delta({"tool_calls": [frag(0, args='{"a": 1')]}),
        delta({"tool_calls": [frag(1, name="second", args=": 2}", call_id="id-2")]}),
        delta({"tool_calls": [frag(0, name="first", args="}", call_id="id-1")]}),
        delta(finish="tool_calls"),
    ])
    calls = [b for b in blocks if isinstance(b, ToolUseBlock)]
    assert calls == [ToolUseBlock("id-1", "first", {"a": 1}),
                     ToolUseBlock("id-2", "second", {"b": 2})]


def test_repeated_name_fragments_are_not_doubled():
    _, blocks = run([
        delta({"tool_calls": [frag(0, "read_file", '{"path":', "c")]}),
        delta({"tool_calls": [frag(0, "read_file", ' "a"}')]}),
    ])
    assert blocks == [ToolUseBlock("c", "read_file", {"path": "a"})]


def test_missing_id_gets_a_unique_generated_id():
    _, blocks = run([delta({"tool_calls": [frag(0, "a", "{}"), frag(1, "b", "{}")]}),
                     delta(finish="tool_calls")])
    ids = [b.id for b in blocks]
    assert all(ids) and len(set(ids)) == 2


def test_missing_name_gives_tool_use_error_with_raw_buffer():
    _, blocks = run([delta({"tool_calls": [frag(0, args='{"x": 1}', call_id="c")]}),
                     delta(finish="tool_calls")])
    assert isinstance(blocks[0], ToolUseError)
    assert "without a tool name" in blocks[0].error
    assert blocks[0].raw_data == '{"x": 1}'


def test_invalid_json_arguments_say_so():
    _, blocks = run([delta({"tool_calls": [frag(0, "f", "{not json", "c")]}),
                     delta(finish="tool_calls")])
    assert isinstance(blocks[0], ToolUseError)
    assert "not valid JSON" in blocks[0].error and blocks[0].raw_data == "{not json"


def test_arguments_cut_off_by_length_say_so():
    _, blocks = run([delta({"tool_calls": [frag(0, "f", '{"text": "abc', "c")]}),
                     delta(finish="length")])
    assert isinstance(blocks[0], ToolUseError)
    assert "cut off" in blocks[0].error and "length" in blocks[0].error


def test_non_object_arguments_are_an_error():
    _, blocks = run([delta({"tool_calls": [frag(0, "f", "[1, 2]", "c")]})])
    assert isinstance(blocks[0], ToolUseError) and "JSON object" in blocks[0].error


def test_calls_finalize_with_stop_or_no_finish_reason():
    for finish in ("stop", None):
        agg, blocks = run([delta({"tool_calls": [frag(0, "f", "{}", "c")]}, finish=finish)])
        assert blocks == [ToolUseBlock("c", "f", {})]


def test_usage_only_final_chunk_and_llamacpp_timings():
    agg, _ = run(texts(["hi"]) + [{"choices": [], "usage": {"prompt_tokens": 5,
                                                           "completion_tokens": 1},
                                   "timings": {"predicted_per_second": 70.5}}])
    assert agg.usage["prompt_tokens"] == 5 and agg.timings["predicted_per_second"] == 70.5


def test_reasoning_fields_become_thinking_blocks():
    for field in ("reasoning_content", "reasoning"):
        agg, blocks = run([delta({field: "hmm"}), delta({"content": "Answer"})])
        assert blocks == [ThinkingBlock("hmm"), TextBlock("Answer")]
        assert agg.text == "Answer" and agg.thinking == "hmm"


def test_inline_think_tags_split_across_chunks():
    agg, blocks = run(texts(["<th", "ink>plan ", "it</th", "ink>\n\nDone", "."]))
    assert agg.thinking == "plan it"
    assert agg.text == "Done."
    assert all(isinstance(b, ThinkingBlock) for b in blocks[:2])


def test_text_that_only_looks_like_a_tag_is_kept():
    agg, _ = run(texts(["<", "b>bold</b>"]))
    assert agg.text == "<b>bold</b>"
    agg, _ = run(texts(["<thi"]))
    assert agg.text == "<thi"


# -- property: any split of the same stream gives the same blocks -------------------

def _stream_chunks(text, calls, cuts_text, cuts_args, reasoning):
    chunks = []
    if reasoning:
        chunks.append(delta({"reasoning_content": reasoning}))
    pieces = _cut(text, cuts_text)
    chunks += [delta({"content": p}) for p in pieces]
    for index, (name, args) in enumerate(calls):
        raw = json.dumps(args)
        parts = _cut(raw, cuts_args)
        for i, part in enumerate(parts):
            chunks.append(delta({"tool_calls": [frag(index, name if i == 0 else None, part,
                                                     f"id{index}" if i == 0 else None)]}))
    chunks.append(delta(finish="tool_calls" if calls else "stop"))
    return chunks


def _cut(text, cuts):
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in zip(points, points[1:], strict=False) if text[a:b]]


def _summary(blocks):
    text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
    thinking = "".join(b.text for b in blocks if isinstance(b, ThinkingBlock))
    calls = [(b.id, b.name, b.input) for b in blocks if isinstance(b, ToolUseBlock)]
    return text, thinking, calls


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=6)


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60).filter(
        lambda t: not t.lstrip().startswith("<")),
    calls=st.lists(st.tuples(st.sampled_from(["read_file", "bash", "get_weather"]),
                             st.dictionaries(st.text(max_size=6), json_values, max_size=3)),
                   max_size=3),
    cuts_a=st.lists(st.integers(min_value=0, max_value=200), max_size=12),
    cuts_b=st.lists(st.integers(min_value=0, max_value=200), max_size=12),
    reasoning=st.text(max_size=10),
)
def test_random_splits_give_the_same_blocks(text, calls, cuts_a, cuts_b, reasoning):
    whole = _stream_chunks(text, calls, [], [], reasoning)
    split = _stream_chunks(text, calls, cuts_a, cuts_b, reasoning)
    _, whole_blocks = run(whole, mode="incremental")
    _, split_blocks = run(split, mode="incremental")
    assert _summary(whole_blocks) == _summary(split_blocks)
    assert _summary(split_blocks)[0] == text
