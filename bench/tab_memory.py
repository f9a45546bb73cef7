"""What one more conversation tab costs in resident memory, and the stylesheet's part of it.

    python bench/tab_memory.py [--tabs 20]

Opens the real main window offscreen (no server search), then opens ``--tabs``
stored conversations in the background, as restored tabs are, and prints the growth
of the process's RSS per tab: left in the background (never shown: no transcript, no
stylesheet yet), then once each has been shown (its chrome styled; the conversations
are empty, so their transcripts hold nothing), and with the chrome's stylesheet left
off. The cost of the sheet on one small widget is printed too: Qt parses a widget's
stylesheet for every widget it is set on.

It also prints what one message costs in a shown transcript (``message_widget_kb``):
a message of the person's and an answer with a code block, whose inline editor, "Restore files" menu
and version switcher are made only when first needed. The latest figures are on
docs/performance.md.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def settle(app: object) -> None:
    for _ in range(30):
        app.processEvents()  # type: ignore[attr-defined]
    gc.collect()


def per_tab_mb(tabs: int, styled: bool) -> tuple[float, float]:
    """RSS growth per background tab in a fresh window, before and after each is shown once."""
    from desktop_agent.gui.conversation import tab_parts
    from desktop_agent.gui.theme import style_chrome_when_shown
    from desktop_agent.gui.window.main_window import MainWindow
    from desktop_agent.store import Store

    tab_parts.style_chrome_when_shown = style_chrome_when_shown if styled \
        else (lambda *_widgets: None)
    os.environ["DESKTOP_AGENT_DATA_DIR"] = tempfile.mkdtemp(prefix="tab-memory-")
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    store = Store.open()
    window = MainWindow(store, discover_on_start=False)
    window.show()
    records = [store.create_conversation(title=f"Tab {n}") for n in range(tabs + 1)]
    window.open_record(records[0], make_current=False)  # the first one loads shared pieces
    settle(app)
    start = rss_mb()
    for record in records[1:]:
        window.open_record(record, make_current=False)
    settle(app)
    background = rss_mb()
    first = window.tabs.currentWidget()
    for record in records[1:]:
        window.tabs.setCurrentWidget(window.tab_for(record.id))
        settle(app)
    window.tabs.setCurrentWidget(first)
    settle(app)
    return (background - start) / tabs, (rss_mb() - start) / tabs


def styled_widget_kb(count: int = 40) -> tuple[float, float]:
    """RSS per small widget (a label inside) with the app's stylesheet set on it, and without."""
    from PySide6.QtWidgets import QApplication, QLabel, QVBoxLayout, QWidget

    from desktop_agent.gui import theme

    app = QApplication.instance()
    figures = []
    kept: list[QWidget] = []
    for styled in (True, False, True, False):  # the first pair warms up
        settle(app)
        before = rss_mb()
        for _ in range(count):
            widget = QWidget()
            QVBoxLayout(widget).addWidget(QLabel("text"))
            if styled:
                theme.style_chrome(widget)
            widget.ensurePolished()
            kept.append(widget)
        settle(app)
        figures.append((rss_mb() - before) * 1000 / count)
    return figures[2], figures[3]


def message_widget_kb(count: int = 40) -> tuple[float, float]:
    """RSS per message widget of a shown transcript: the person's message, and an answer.

    The contents are ``bench/startup.py``'s five-tab conversations (a question; an answer
    with a heading, inline code and a fenced block). The widgets sit in a scroll area of a
    fixed size, as in the transcript, so the window's backing store does not grow with them.
    """
    from PySide6.QtWidgets import QApplication, QScrollArea, QVBoxLayout, QWidget

    from desktop_agent.gui.transcript.assistant_message import AssistantMessageWidget
    from desktop_agent.gui.transcript.items import AssistantItem, UserItem
    from desktop_agent.gui.transcript.markdown_html import MarkdownRenderer
    from desktop_agent.gui.transcript.message_bubbles import UserMessageWidget
    from desktop_agent.gui.transcript.theme import TranscriptTheme

    app = QApplication.instance()
    theme = TranscriptTheme.from_palette(app.palette())  # type: ignore[attr-defined]
    renderer = MarkdownRenderer(theme)
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.resize(900, 700)
    column = QWidget()
    layout = QVBoxLayout(column)
    area.setWidget(column)
    area.show()

    def answer(n: int) -> AssistantMessageWidget:
        item = AssistantItem(f"a{n}")
        item.append("text", f"## Answer {n}\n\nSome **markdown** and `code`.\n\n"
                            "```python\nprint('hello')\n```\n")
        item.open = False
        return AssistantMessageWidget(item, theme, renderer, parent=column)

    def question(n: int) -> UserMessageWidget:
        return UserMessageWidget(UserItem(f"u{n}", f"Question {n}: how?"), theme, column)

    figures = []
    kept: list[QWidget] = []
    for make in (question, answer, question, answer):  # the first pair warms up (fonts, ...)
        settle(app)
        before = rss_mb()
        for n in range(count):
            kept.append(make(n))
            layout.addWidget(kept[-1])
        settle(app)
        figures.append((rss_mb() - before) * 1000 / count)
    area.close()
    return figures[2], figures[3]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tabs", type=int, default=20)
    args = parser.parse_args()
    from desktop_agent.gui.app import create_application, prepare_imports

    prepare_imports()
    create_application([sys.argv[0]])
    background, shown = per_tab_mb(args.tabs, styled=True)
    _bare_background, bare_shown = per_tab_mb(args.tabs, styled=False)
    with_sheet, without = styled_widget_kb()
    question, reply = message_widget_kb()
    print(f"tab in the background (never shown): {background:.2f} MB RSS each "
          f"(over {args.tabs} tabs)")
    print(f"tab shown once:                      {shown:.2f} MB each; with no stylesheet "
          f"{bare_shown:.2f} MB (the sheet: {(shown - bare_shown) / shown:.0%} of a tab)")
    print(f"one small widget with the app's stylesheet: {with_sheet:.0f} kB, without: "
          f"{without:.0f} kB ({with_sheet / max(without, 1):.0f}x)")
    print(f"in a shown transcript: a message of the person's {question:.0f} kB, an answer "
          f"with a code block {reply:.0f} kB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
