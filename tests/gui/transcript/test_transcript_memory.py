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


def turn(view, qtbot, index: int) -> str:
    view.add_user_message(f"Question {index}")
    key = view.begin_assistant_message()
    text = ANSWER.format(n=index)
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
