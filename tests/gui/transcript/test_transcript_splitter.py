"""The incremental block splitter: where streamed markdown blocks close."""

from desktop_agent.gui.transcript.block_splitter import (
    FORCE_CLOSE_CHARS,
    CodeClosed,
    CodeOpened,
    CodeText,
    ProseClosed,
    StreamingBlockSplitter,
)


def feed_in_pieces(text: str, size: int = 3) -> tuple[list, StreamingBlockSplitter]:
    splitter = StreamingBlockSplitter()
    events = []
    for start in range(0, len(text), size):
        events += splitter.feed(text[start : start + size])
    return events, splitter


def test_paragraph_closes_at_blank_line_and_tail_shows_open_block():
    events, splitter = feed_in_pieces("First **para**\nstill first\n\nSecond open")
    assert events == [ProseClosed("First **para**\nstill first")]
    assert splitter.prose_tail() == "Second open"
    assert splitter.finish() == [ProseClosed("Second open")]


def test_heading_is_its_own_block():
    events, _ = feed_in_pieces("intro\n## Title\nbody\n")
    assert ProseClosed("intro") in events
    assert ProseClosed("## Title") in events


def test_fenced_code_streams_text_and_closes_on_fence():
    events, splitter = feed_in_pieces("Look:\n```python\nprint(1)\nx = 2\n```\nafter\n")
    kinds = [type(event) for event in events]
    assert kinds[0] is ProseClosed
    assert events[1] == CodeOpened("python")
    code = "".join(event.text for event in events if isinstance(event, CodeText))
    assert code == "print(1)\nx = 2\n"
    assert CodeClosed() in events
    assert splitter.prose_tail() == "after"


def test_partial_line_that_may_be_a_closing_fence_is_held_back():
    splitter = StreamingBlockSplitter()
    splitter.feed("```\ncode\n")
    assert splitter.feed("``") == []  # could be the closing fence
    assert splitter.feed("`\n") == [CodeClosed()]


def test_code_left_open_is_closed_by_finish():
    events, splitter = feed_in_pieces("```js\nlet a = 1;")
    closing = splitter.finish()
    code = "".join(e.text for e in events + closing if isinstance(e, CodeText))
    assert code == "let a = 1;"
    assert closing[-1] == CodeClosed()


def test_very_long_paragraph_is_closed_so_the_tail_stays_small():
    line = "word " * 40 + "\n"
    events, splitter = feed_in_pieces(line * 20, size=7)
    assert any(isinstance(event, ProseClosed) for event in events)
    assert len(splitter.prose_tail()) <= FORCE_CLOSE_CHARS + len(line)
