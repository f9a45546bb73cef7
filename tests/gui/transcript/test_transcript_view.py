"""TranscriptView as a whole: scrolling, actions, history and themes."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette

from desktop_agent.gui.transcript.assistant_message import AssistantMessageWidget
from desktop_agent.gui.transcript.message_bubbles import ErrorNoticeWidget, UserMessageWidget
from desktop_agent.gui.transcript.scroll_pager import MAX_RENDERED, PAGE_SIZE
from desktop_agent.gui.transcript.tool_card import ToolCard


def fill(view, count: int) -> None:
    for index in range(count):
        view.add_user_message(f"Question {index}")
        view.begin_assistant_message()
        view.append_text(f"Answer {index}\n\nwith a second paragraph.")
        view.end_assistant_message()


def at_bottom(view) -> bool:
    bar = view.verticalScrollBar()
    return bar.value() >= bar.maximum() - 4


def test_view_follows_the_end_until_scrolled_up_and_again_at_the_end(view, qtbot):
    fill(view, 5)
    qtbot.waitUntil(lambda: view.verticalScrollBar().maximum() > 0 and at_bottom(view))
    assert view.follows_end
    # All rendered, so scrolling to the top renders nothing above to move the page.
    assert view.rendered_item_count() == len(view.item_keys())

    key = view.begin_assistant_message()
    view.append_text("Streaming line one\n\n")
    qtbot.waitUntil(lambda: "Streaming line one" in view.item_text(key))
    qtbot.waitUntil(lambda: at_bottom(view))

    with qtbot.waitSignal(view.follows_end_changed, timeout=2000) as changed:
        view.verticalScrollBar().setValue(0)  # what dragging the scroll bar up does
    assert changed.args == [False]
    assert not view.follows_end
    for index in range(30):
        view.append_text(f"more text {index}\n\n")
    qtbot.waitUntil(lambda: "more text 29" in view.item_text(key))
    assert view.verticalScrollBar().value() == 0  # the reader's place is kept
    assert not view.follows_end

    view.verticalScrollBar().setValue(view.verticalScrollBar().maximum())
    assert view.follows_end
    view.append_text("last words")
    view.end_assistant_message()
    qtbot.waitUntil(lambda: at_bottom(view))


def test_retry_button_emits_retry_requested(view, qtbot):
    view.add_user_message("hello")
    key = view.add_error("Could not reach the server (connection refused).")
    notice = view.item_widget(key)
    assert isinstance(notice, ErrorNoticeWidget)
    assert "connection refused" in view.item_text(key)
    qtbot.waitUntil(notice.retry_button.isVisible)
    with qtbot.waitSignal(view.retry_requested, timeout=2000):
        qtbot.mouseClick(notice.retry_button, Qt.MouseButton.LeftButton)


def test_error_without_retry_has_no_retry_button(view, qtbot):
    key = view.add_error("The model is not loaded.", retry=False)
    notice = view.item_widget(key)
    qtbot.wait(10)
    assert not notice.retry_button.isVisible()


def test_edit_emits_key_and_text_and_regenerate_sits_on_last_answer(view, qtbot):
    user_key = view.add_user_message("What is 2+2?", message_id="m1")
    assert user_key == "m1"
    first = view.begin_assistant_message()
    view.append_text("4")
    view.end_assistant_message()
    view.add_user_message("And 3+3?")
    second = view.begin_assistant_message()
    view.append_text("6")
    second_widget = view.item_widget(second)
    qtbot.waitUntil(second_widget.isVisible)
    assert not second_widget.regenerate_button.isVisible()  # not while streaming
    view.end_assistant_message()
    first_widget = view.item_widget(first)
    assert not first_widget.regenerate_button.isVisible()
    qtbot.waitUntil(second_widget.regenerate_button.isVisible)
    with qtbot.waitSignal(view.regenerate_requested, timeout=2000):
        qtbot.mouseClick(second_widget.regenerate_button, Qt.MouseButton.LeftButton)

    user_widget = view.item_widget("m1")
    assert isinstance(user_widget, UserMessageWidget)
    qtbot.mouseClick(user_widget.edit_button, Qt.MouseButton.LeftButton)
    assert user_widget.editing
    editor = user_widget.editor.text_box
    assert editor.toPlainText() == "What is 2+2?"
    editor.selectAll()
    qtbot.keyClicks(editor, "What is 2+3?")
    with qtbot.waitSignal(view.edit_requested, timeout=2000) as edit:
        qtbot.keyClick(editor, Qt.Key.Key_Return)
    assert edit.args == ["m1", "What is 2+3?"]
    assert not user_widget.editing


def test_cancelled_edit_sends_nothing(view, qtbot):
    key = view.add_user_message("Keep me")
    user_widget = view.item_widget(key)
    qtbot.mouseClick(user_widget.edit_button, Qt.MouseButton.LeftButton)
    with qtbot.assertNotEmitted(view.edit_requested):
        qtbot.keyClicks(user_widget.editor.text_box, " changed")
        qtbot.keyClick(user_widget.editor.text_box, Qt.Key.Key_Escape)
    assert not user_widget.editing
    assert view.item_text(key) == "Keep me"


def test_copy_answer_puts_markdown_on_clipboard(view, qtbot):
    key = view.begin_assistant_message()
    view.append_text("Use **bold** here.")
    view.end_assistant_message()
    widget = view.item_widget(key)
    qtbot.waitUntil(widget.copy_button.isVisible)
    with qtbot.waitSignal(view.copy_requested, timeout=2000) as copied:
        qtbot.mouseClick(widget.copy_button, Qt.MouseButton.LeftButton)
    assert copied.args == ["Use **bold** here."]
    assert QGuiApplication.clipboard().text() == "Use **bold** here."


def history(count: int) -> list[dict]:
    messages = []
    for index in range(count // 2):
        messages.append({"role": "user", "content": f"question {index}"})
        messages.append({"role": "assistant", "content": f"answer **{index}**"})
    return messages


def test_loading_5000_messages_renders_a_bounded_window(view, qtbot):
    view.load_messages(history(5000))
    assert len(view.item_keys()) == 5000
    assert view.rendered_item_count() <= PAGE_SIZE
    last = view.item_keys()[-1]
    assert "answer 2499" in view.item_text(last)
    assert view.item_text(view.item_keys()[0]) == ""  # not rendered
    bar = view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0 and at_bottom(view) and view.follows_end)

    def first_rendered() -> int:
        keys = view.item_keys()
        return next(i for i, key in enumerate(keys) if view.item_widget(key) is not None)

    # Scrolling to the top repeatedly loads older pages but never everything.
    for _ in range(5):
        before = first_rendered()
        view.verticalScrollBar().setValue(0)
        # Older messages appear above and the reader's place is kept (not left at 0).
        qtbot.waitUntil(
            lambda before=before: first_rendered() < before and bar.value() > 0, timeout=3000
        )
        qtbot.wait(60)  # let the page settle, as a person pauses between scrolls
        assert view.rendered_item_count() <= MAX_RENDERED
    assert first_rendered() <= 5000 - 5 * PAGE_SIZE
    assert not view.follows_end

    view.scroll_to_end()
    assert view.follows_end
    assert "answer 2499" in view.item_text(last)
    assert view.rendered_item_count() <= MAX_RENDERED


def test_history_groups_tool_rounds_into_one_answer(view):
    view.load_messages(
        [
            {"role": "system", "content": "be brief"},
            {"id": "u1", "role": "user", "content": "Weather in Paris?"},
            {
                "id": "a1",
                "role": "assistant",
                "content": None,
                "reasoning_content": "I should call the tool.",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "Sunny"},
            {"role": "assistant", "content": "It is sunny in Paris."},
        ]
    )
    assert view.item_keys() == ["u1", "a1"]
    answer = view.item_widget("a1")
    assert isinstance(answer, AssistantMessageWidget)
    cards = [w for w in answer.body_widgets() if isinstance(w, ToolCard)]
    assert len(cards) == 1
    assert cards[0].output_text == "Sunny"
    text = view.item_text("a1")
    assert "I should call the tool." in text
    assert "It is sunny in Paris." in text


def test_history_skips_entries_that_are_not_messages(view):
    view.load_messages(
        [{"role": "user", "content": "hi"}, 42, {"role": "assistant", "content": "yo"}]
    )
    assert len(view.item_keys()) == 2


def test_dark_palette_switches_colours_and_code_style(view, qtbot):
    key = view.begin_assistant_message()
    view.append_text("```python\nx = 1\n```\n")
    view.end_assistant_message()
    assert not view.theme.dark
    palette = QPalette(view.palette())
    palette.setColor(QPalette.ColorRole.Window, QColor("#1e1f22"))
    palette.setColor(QPalette.ColorRole.WindowText, QColor("#e6e6e6"))
    palette.setColor(QPalette.ColorRole.Base, QColor("#2b2d30"))
    palette.setColor(QPalette.ColorRole.Text, QColor("#e6e6e6"))
    view.setPalette(palette)
    assert view.theme.dark
    assert view.theme.code_style == "github-dark"
    assert "x = 1" in view.item_text(key)  # rebuilt in the new colours
    content = view.widget()
    assert content.palette().color(QPalette.ColorRole.Window).name() == "#2b2d30"


def test_a_long_session_of_qt_calls_does_not_exhaust_none(view):
    # PySide6 6.12 on Python 3.11 drops a reference to None per void call; without
    # the guard that TranscriptView installs, this loop aborts the interpreter.
    label = view.widget()
    for _ in range(30_000):
        label.setObjectName("transcriptContent")
    assert label.objectName() == "transcriptContent"


def test_loads_records_from_a_real_store(view, tmp_path):
    from desktop_agent.store import Store

    store = Store.open(tmp_path / "history.sqlite3")
    try:
        conversation = store.create_conversation(title="Weather")
        store.add_message(conversation.id, {"role": "user", "content": "Weather in Paris?"})
        store.add_message(
            conversation.id,
            {"role": "assistant", "content": "It is **sunny**, mostly"},
            metadata={"thinking": "Checking the forecast."},
            status="interrupted",
        )
        records = store.active_path(conversation.id)
    finally:
        store.close()
    view.load_messages(records)
    user_key, answer_key = view.item_keys()
    assert user_key == records[0].id
    assert view.item_text(user_key) == "Weather in Paris?"
    answer = view.item_widget(answer_key)
    assert "Checking the forecast." in view.item_text(answer_key)
    assert "It is sunny, mostly" in view.item_text(answer_key)
    assert answer.item.interrupted


def test_clearing_while_code_is_being_highlighted_is_harmless(view, qtbot, caplog):
    view.begin_assistant_message()
    view.append_text("```python\n" + "value = compute(1, 2)\n" * 400 + "```\n")
    view.end_assistant_message()
    assert view.scheduler.pending_jobs > 0
    view.clear()
    qtbot.waitUntil(lambda: view.scheduler.pending_jobs == 0, timeout=5000)
    assert "failed" not in caplog.text


def test_a_repeated_message_id_gets_its_own_item(view):
    first = view.add_user_message("one", message_id="same")
    second = view.add_user_message("two", message_id="same")
    assert first == "same" and second != first
    assert view.item_text(first) == "one"
    assert view.item_text(second) == "two"
    assert view.rendered_item_count() == 2


def test_a_conversation_opens_with_the_view_filled_and_older_messages_a_scroll_away(view, qtbot):
    """However short its messages, the view fills itself and a scroll up shows older ones."""
    view.resize(800, 1000)  # taller than a dozen one-line messages
    view.load_messages(history(40))
    bar = view.verticalScrollBar()
    # More than a screen is there to scroll, the newest at the bottom; not all 40 are built.
    qtbot.waitUntil(lambda: bar.maximum() > 0 and at_bottom(view), timeout=5000)
    keys = view.item_keys()
    assert "answer 19" in view.item_text(keys[-1])
    assert 0 < view.rendered_item_count() < 40
    # Scrolling to the top shows every older message, in order.

    def at_the_top() -> bool:
        bar.setValue(0)
        return view.item_text(keys[0]).strip() == "question 0"

    qtbot.waitUntil(at_the_top, timeout=5000)
    texts = [view.item_text(key).strip() for key in keys]
    assert texts == [f"{kind} {n}" for n in range(20) for kind in ("question", "answer")]


def test_a_command_card_ends_with_the_figures_kept_with_its_result(view, qtbot):
    """Live and reopened alike: the card says what was stored, not its last report on screen."""
    from desktop_agent.session import ToolCallState

    view.add_user_message("build it")
    key = view.begin_assistant_message()
    view.add_tool_call("c1", "bash", {"command": "make"}, "builtin")
    view.add_tool_output("c1", "compiling\n", 1, 0.1, True)
    view.flush()
    view.settle_tool_call("c1", ToolCallState("stopped by the person", False, "stopped",
                                              output_lines=3, output_seconds=0.24))
    view.add_tool_output("c1", "", 4, 0.3, True)  # a report that came after the result
    view.flush()

    def card() -> ToolCard | None:
        widget = view.item_widget(key)
        cards = [w for w in widget.body_widgets() if isinstance(w, ToolCard)] if widget else []
        return cards[0] if cards else None

    qtbot.waitUntil(lambda: card() is not None and card().output_text is not None)
    assert card().detail_label.text() == "builtin · stopped · 3 lines · 0.2 s"
