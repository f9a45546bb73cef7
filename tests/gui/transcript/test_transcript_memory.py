"""An open conversation over many turns keeps a bounded set of widgets and keeps following.

Why: every answer's widgets cost far more memory than its text, so a tab left open
for a day must not keep one set per answer; and dropping the oldest widgets must not
move what the person sees.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QEvent
from PySide6.QtWidgets import QApplication, QTextBrowser

from desktop_agent.gui.transcript.assistant_message import AssistantMessageWidget
from desktop_agent.gui.transcript.code_block import CodeBlockWidget

ANSWER = """## Step {n}

Read the file **one row at a time** and keep `totals` per column.

```python
def totals_{n}(rows):
    return sum(float(row["amount"]) for row in rows)
```

A bad row is reported with its line number and skipped.
"""


def live(kind: type) -> int:
    """How many widgets of ``kind`` exist, once deletions asked for have run."""
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    return sum(isinstance(widget, kind) for widget in QApplication.allWidgets())


def turn(view, qtbot, index: int, sections: int = 1) -> str:
    view.add_user_message(f"Question {index}")
    key = view.begin_assistant_message()
    text = "".join(ANSWER.format(n=f"{index}" if s == 0 else f"{index}_{s}")
                   for s in range(sections))
    for start in range(0, len(text), 40):
        view.append_text(text[start : start + 40])
    view.end_assistant_message()
    qtbot.wait(1)
    return key


def test_an_open_conversation_keeps_a_bounded_number_of_answer_widgets(view, qtbot):
    for index in range(120):
        key = turn(view, qtbot, index)
    # A few screens of the newest answers, not one set per answer (120 here).
    assert live(AssistantMessageWidget) <= 20
    assert live(CodeBlockWidget) <= 20
    assert len(view.item_keys()) == 240  # every message is still in the conversation
    assert "totals_119" in view.item_text(key)
    assert view.follows_end
    bar = view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.value() >= bar.maximum() - 4)

    # Scrolling up brings the older answers back.
    first = view.item_keys()[-40]
    assert view.item_widget(first) is None
    for _ in range(20):
        if view.item_widget(first) is not None:
            break
        bar.setValue(0)
        qtbot.wait(80)
    assert "Question 100" in view.item_text(first)


def test_the_view_keeps_following_the_end_with_the_focus_in_an_old_answer(view, qtbot):
    view.activateWindow()
    key = turn(view, qtbot, 0)
    prose = view.item_widget(key).findChildren(QTextBrowser)[0]
    prose.setFocus()
    qtbot.waitUntil(prose.hasFocus)
    for index in range(1, 60):
        turn(view, qtbot, index)
    assert view.item_widget(key) is None  # its widgets went, and the focus with them
    assert view.follows_end
    bar = view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.value() >= bar.maximum() - 4)


class StoredConversation:
    """The store's side of a conversation: message dicts with ids, read back a page at a time."""

    def __init__(self) -> None:
        self.messages: list[dict] = []
        self.pages_read = 0

    def add(self, message_id: str, role: str, content: str) -> None:
        self.messages.append({"id": message_id, "role": role, "content": content})

    def page_before(self, before: str, limit: int = 20) -> list[dict]:
        """The messages before ``before``, starting at a user message (as the store pages)."""
        self.pages_read += 1
        end = next(i for i, m in enumerate(self.messages) if m["id"] == before)
        start = max(0, end - limit)
        while start > 0 and self.messages[start]["role"] != "user":
            start -= 1
        return self.messages[start:end]


def stored_turn(view, qtbot, store: StoredConversation, index: int) -> None:
    """One turn as the window shows it live, stored as the session stores it."""
    question, text = f"Question {index}", ANSWER.format(n=index)
    store.add(f"u{index}", "user", question)
    view.add_user_message(question, message_id=f"u{index}")
    store.add(f"a{index}", "assistant", text)
    view.begin_assistant_message(message_id=f"a{index}")
    for start in range(0, len(text), 40):
        view.append_text(text[start : start + 40])
    view.end_assistant_message()
    qtbot.wait(1)


def test_an_open_conversation_keeps_the_text_of_its_newest_turns_and_reads_back_the_rest(
        view, qtbot):
    store = StoredConversation()
    view.set_earlier_source(store.page_before)
    for index in range(150):
        stored_turn(view, qtbot, store, index)
    # 300 messages were shown; the view holds the items of the last few pages only,
    # the older ones are in the store (a day-long conversation does not grow the window).
    keys = view.item_keys()
    assert len(keys) <= 100
    assert keys[-1] == "a149"
    assert keys[0].startswith("u")  # never half a turn
    assert view.follows_end

    # Scrolling back to the top brings every message back, in order.
    bar = view.verticalScrollBar()
    for _ in range(200):
        if view.item_keys()[0] == "u0" and view.item_widget("u0") is not None:
            break
        bar.setValue(0)
        qtbot.wait(60)
    keys = view.item_keys()
    assert keys == [f"{role}{i}" for i in range(150) for role in ("u", "a")]
    assert view.item_text("u0") == "Question 0"
    assert store.pages_read > 0


def test_a_hidden_tab_keeps_only_the_screen_it_shows_and_shows_it_again(view, qtbot):
    for index in range(12):
        key = turn(view, qtbot, index, sections=6)  # an answer taller than the view
    # shown, it keeps the screens around the end (how many items that is depends on fonts)
    assert view.rendered_item_count() >= 3
    view.hide()  # another tab is shown
    qtbot.waitUntil(lambda: view.rendered_item_count() <= 2, timeout=15_000)
    assert len(view.item_keys()) == 24  # the items stay; only their widgets went

    view.show()
    qtbot.waitExposed(view)
    assert "totals_11" in view.item_text(key)  # the screen it showed, at once
    bar = view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.value() >= bar.maximum() - 4)
    assert view.follows_end
    first = view.item_keys()[0]
    for _ in range(50):
        if view.item_widget(first) is not None:
            break
        bar.setValue(0)
        qtbot.wait(60)
    assert view.item_text(first) == "Question 0"


def test_a_streamed_code_block_is_held_once_not_again_as_undo_history(view, qtbot):
    key = turn(view, qtbot, 0)
    blocks = view.item_widget(key).findChildren(CodeBlockWidget)
    assert blocks and "totals_0" in blocks[0].code_view.toPlainText()
    assert blocks[0].code_view.document().availableUndoSteps() == 0


def test_answers_taller_than_three_screens_keep_the_newest_one_rendered(view, qtbot):
    for index in range(8):
        key = turn(view, qtbot, index, sections=20)
    # The newest answer and its question fill the screens kept; older answers went.
    assert view.rendered_item_count() <= 3
    assert "totals_7_19" in view.item_text(key)
    assert view.follows_end
