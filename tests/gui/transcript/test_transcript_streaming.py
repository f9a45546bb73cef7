"""Streaming into the real TranscriptView: text, code, tables, reasoning, tools."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QTextTable

from desktop_agent.gui.transcript.assistant_message import AssistantMessageWidget
from desktop_agent.gui.transcript.code_block import CodeBlockWidget
from desktop_agent.gui.transcript.text_views import FittedTextBrowser
from desktop_agent.gui.transcript.thinking_section import ThinkingSection
from desktop_agent.gui.transcript.tool_card import ToolCard


def answer_widget(view, key) -> AssistantMessageWidget:
    widget = view.item_widget(key)
    assert isinstance(widget, AssistantMessageWidget)
    return widget


def test_streamed_text_appears_before_the_message_ends(view, qtbot):
    key = view.begin_assistant_message()
    view.append_text("Hello ")
    qtbot.waitUntil(lambda: "Hello" in view.item_text(key), timeout=3000)
    view.append_text("brave new ")
    view.append_text("**world**")
    qtbot.waitUntil(lambda: "brave new world" in view.item_text(key), timeout=3000)
    assert not answer_widget(view, key).ended
    view.end_assistant_message()
    assert answer_widget(view, key).ended
    assert "Hello brave new world" in view.item_text(key)
    assert "**" not in view.item_text(key)  # rendered as bold, not shown as markup


def test_code_block_is_highlighted_and_copy_puts_code_on_clipboard(view, qtbot):
    key = view.begin_assistant_message()
    code = "def greet(name):\n    return f'hi {name}'"
    for piece in ["Here:\n\n```py", "thon\n", code[:10], code[10:], "\n```\n", "Done."]:
        view.append_text(piece)
    view.end_assistant_message()
    blocks = [w for w in answer_widget(view, key).body_widgets() if isinstance(w, CodeBlockWidget)]
    assert len(blocks) == 1
    block = blocks[0]
    assert block.language == "python"
    qtbot.waitUntil(lambda: block.highlighted, timeout=5000)
    colours = set()
    text_block = block.code_view.document().firstBlock()
    while text_block.isValid():
        for fmt_range in text_block.layout().formats():
            colours.add(fmt_range.format.foreground().color().name())
        iterator = text_block.begin()
        while not iterator.atEnd():
            colours.add(iterator.fragment().charFormat().foreground().color().name())
            iterator += 1
        text_block = text_block.next()
    assert len(colours) >= 3, colours  # keywords, names and strings differ

    with qtbot.waitSignal(view.copy_requested, timeout=2000) as signal:
        qtbot.mouseClick(block.copy_button, Qt.MouseButton.LeftButton)
    assert signal.args == [code]
    assert QGuiApplication.clipboard().text() == code


def test_table_renders_as_a_table(view, qtbot):
    key = view.begin_assistant_message()
    for row in ["| Tool | Speed |\n", "|---|---:|\n", "| csv | ok |\n", "| pandas | fast |\n"]:
        view.append_text(row)
    view.end_assistant_message()
    tables = []
    for widget in answer_widget(view, key).body_widgets():
        if isinstance(widget, FittedTextBrowser):
            for frame in widget.document().rootFrame().childFrames():
                if isinstance(frame, QTextTable):
                    tables.append(frame)
    assert len(tables) == 1
    table = tables[0]
    assert (table.rows(), table.columns()) == (3, 2)
    cell = table.cellAt(2, 0)
    cursor = cell.firstCursorPosition()
    cursor.setPosition(cell.lastCursorPosition().position(), cursor.MoveMode.KeepAnchor)
    assert cursor.selectedText() == "pandas"


def test_reasoning_is_shown_then_folds_and_can_be_reopened(view, qtbot):
    key = view.begin_assistant_message()
    view.append_thinking("Let me think about ")
    view.append_thinking("the weather.")
    qtbot.waitUntil(lambda: "the weather." in view.item_text(key), timeout=3000)
    section = next(
        w for w in answer_widget(view, key).body_widgets() if isinstance(w, ThinkingSection)
    )
    assert section.expanded
    qtbot.waitUntil(section.body.isVisible, timeout=3000)  # open while the model thinks
    view.append_text("It is sunny.")
    view.end_assistant_message()
    assert not section.expanded and not section.body.isVisible()
    qtbot.mouseClick(section.header_button, Qt.MouseButton.LeftButton)
    assert section.expanded and section.body.isVisible()
    assert "the weather." in section.text()
    qtbot.mouseClick(section.header_button, Qt.MouseButton.LeftButton)
    assert not section.body.isVisible()


def test_tool_card_expands_to_show_arguments_and_output(view, qtbot):
    key = view.begin_assistant_message()
    view.add_tool_call("call_1", "get_weather", {"city": "Paris", "days": 2}, source="builtin")
    view.flush()
    card = next(w for w in answer_widget(view, key).body_widgets() if isinstance(w, ToolCard))
    assert "running" in card.detail_label.text()
    view.set_tool_result("call_1", "Sunny, 24 °C")
    view.end_assistant_message()
    assert "done" in card.detail_label.text()
    qtbot.waitUntil(card.isVisible, timeout=3000)
    assert not card.body.isVisible()
    qtbot.mouseClick(card.header_button, Qt.MouseButton.LeftButton)
    assert card.body.isVisible()
    assert card.arguments_view.code() == '{\n  "city": "Paris",\n  "days": 2\n}'
    assert card.output_view.isVisible()
    assert card.output_view.toPlainText() == "Sunny, 24 °C"


def test_tool_error_marks_the_card_failed(view):
    key = view.begin_assistant_message()
    view.add_tool_call("call_9", "run_shell", {"command": "ls"})
    view.add_tool_error("Denied: not now", tool_use_id="call_9")
    view.end_assistant_message()
    card = next(w for w in answer_widget(view, key).body_widgets() if isinstance(w, ToolCard))
    assert card.is_error
    assert "failed" in card.detail_label.text()
    assert card.output_view.toPlainText() == "Denied: not now"


def test_markdown_images_and_raw_html_are_not_loaded_or_interpreted(view):
    key = view.begin_assistant_message()
    view.append_text("![chart](https://example.com/c.png)\n\n![secret](file:///etc/passwd)")
    view.append_text("\n\n<b>raw</b> text")
    view.end_assistant_message()
    shown = view.item_text(key)
    assert "[image: chart]" in shown  # a link to click, never fetched
    assert "![secret](file:///etc/passwd)" in shown  # file links are refused outright
    assert "<b>raw</b> text" in shown  # shown as typed, not as bold markup


def test_a_long_answer_streamed_in_small_pieces_shows_whole_and_is_kept_as_one_string(
        view, qtbot):
    from desktop_agent.gui.transcript.items import TEXT_CHUNK_CHARS, TextRun

    paragraph = "Rows are read **one at a time**, so memory stays flat. "
    answer = "".join(f"Step {n}: {paragraph}\n\n" for n in range(120))
    pieces = [answer[i:i + 5] for i in range(0, len(answer), 5)]
    assert len(answer) > 3 * TEXT_CHUNK_CHARS
    key = view.begin_assistant_message()
    widget = answer_widget(view, key)
    for index, piece in enumerate(pieces):
        view.append_text(piece)
        if index % 97 == 0:  # the widget reads mid-chunk, at chunk edges, across them
            qtbot.wait(1)
    run = widget.item.parts[0]
    assert isinstance(run, TextRun)
    assert len(run.chunks) <= len(answer) // TEXT_CHUNK_CHARS + 1  # not one str per piece
    view.end_assistant_message()
    assert run.chunks == [run.text()]  # one string once complete
    assert run.text() == answer
    shown = view.item_text(key)
    assert "Step 0: Rows are read one at a time" in shown
    assert "Step 119: Rows are read one at a time" in shown
    assert shown.count("memory stays flat") == 120
    with qtbot.waitSignal(view.copy_requested, timeout=2000) as signal:
        qtbot.mouseClick(widget.copy_button, Qt.MouseButton.LeftButton)
    assert signal.args == [answer.strip()]


def test_text_since_an_offset_spans_joined_chunks_and_pending_pieces():
    from desktop_agent.gui.transcript.items import TEXT_CHUNK_CHARS, TextRun

    run = TextRun("text")
    text = "".join(chr(ord("a") + i % 26) for i in range(3 * TEXT_CHUNK_CHARS + 7))
    for i in range(0, len(text), 3):
        run.append(text[i:i + 3])
    assert run.length == len(text)
    for offset in (0, 1, TEXT_CHUNK_CHARS - 1, TEXT_CHUNK_CHARS + 2, len(text) - 2, len(text)):
        assert run.since(offset) == text[offset:]
    run.complete()
    assert run.since(5) == text[5:] and run.chunks == [text]
