"""Opening stored history does each piece of work once (counted, never timed).

Why: opening a long conversation must paint quickly (issue 48's 60 ms), and the
answers shown on open were doing part of their work more than once: the first
blocks of each prose chunk parsed and laid out again with each block after them,
each tab built its own Markdown parser, and code relaid out once per coloured token.
"""

from __future__ import annotations

from pygments.token import Keyword
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWidget

from desktop_agent.gui.transcript import TranscriptView
from desktop_agent.gui.transcript.assistant_message import AssistantMessageWidget
from desktop_agent.gui.transcript.code_block import CodeBlockWidget
from desktop_agent.gui.transcript.code_highlight import TOKENS_PER_STEP, lexer_for, token_formats
from desktop_agent.gui.transcript.markdown_html import MarkdownRenderer, renderer_for
from desktop_agent.gui.transcript.text_views import FittedTextBrowser
from desktop_agent.gui.transcript.theme import TranscriptTheme

ANSWER = """## Step {n}

Sum the column with **one pass** over the rows:

```python
def total_{n}(rows):
    return sum(float(r["amount"]) for r in rows)
```

That keeps memory flat."""

#: Prose blocks of ANSWER: the heading, the paragraph before the code, the one after.
PROSE_BLOCKS = 3
#: Prose chunks of ANSWER: the code block ends the first one.
CHUNKS = 2


def history(pairs: int) -> list[dict[str, str]]:
    messages = []
    for index in range(pairs):
        messages.append({"role": "user", "content": f"Question {index}: how?"})
        messages.append({"role": "assistant", "content": ANSWER.format(n=index)})
    return messages


def shown_answers(view: TranscriptView) -> list[AssistantMessageWidget]:
    widgets = [view.item_widget(key) for key in view.item_keys()]
    return [widget for widget in widgets if isinstance(widget, AssistantMessageWidget)]


def test_each_answer_on_open_renders_its_blocks_once_and_sets_each_chunk_once(
        view, qtbot, monkeypatch):
    renders: list[str] = []
    html_sets: list[FittedTextBrowser] = []
    render = MarkdownRenderer.render
    set_html = FittedTextBrowser.setHtml

    def counting_render(self: MarkdownRenderer, markdown: str) -> str:
        renders.append(markdown)
        return render(self, markdown)

    def counting_set_html(self: FittedTextBrowser, text: str) -> None:
        html_sets.append(self)
        set_html(self, text)

    monkeypatch.setattr(MarkdownRenderer, "render", counting_render)
    monkeypatch.setattr(FittedTextBrowser, "setHtml", counting_set_html)

    view.load_messages(history(3))

    answers = shown_answers(view)
    assert answers, "the last page shows answers"
    assert len(renders) == PROSE_BLOCKS * len(answers)
    assert len(html_sets) == CHUNKS * len(answers)
    assert len(set(map(id, html_sets))) == len(html_sets)  # no chunk set twice
    # What the person sees is all there, in order, the code highlighted.
    last = answers[-1]
    parts = last.body_widgets()
    assert [type(part) for part in parts] == [FittedTextBrowser, CodeBlockWidget,
                                              FittedTextBrowser]
    first, code, after = parts
    assert isinstance(first, FittedTextBrowser) and isinstance(after, FittedTextBrowser)
    assert [line.strip() for line in first.toPlainText().split("\n")] == [
        "Step 2", "Sum the column with one pass over the rows:"]
    assert first.document().toHtml().count("font-weight:700") >= 2  # heading, **bold**
    assert after.toPlainText().strip() == "That keeps memory flat."
    assert isinstance(code, CodeBlockWidget)
    assert code.code().startswith("def total_2(rows):")
    qtbot.waitUntil(lambda: code.highlighted, timeout=5000)


def test_tabs_of_one_theme_share_one_markdown_parser(qtbot, monkeypatch):
    renderer_for.cache_clear()
    builds: list[MarkdownRenderer] = []
    build = MarkdownRenderer._build_parser

    def counting_build(self: MarkdownRenderer):  # type: ignore[no-untyped-def]
        builds.append(self)
        return build(self)

    monkeypatch.setattr(MarkdownRenderer, "_build_parser", counting_build)
    views: list[QWidget] = []
    for _tab in range(3):
        tab = TranscriptView()
        qtbot.addWidget(tab)
        tab.resize(800, 600)
        tab.load_messages(history(2))
        views.append(tab)
        assert "Step 1" in tab.item_text(tab.item_keys()[-1])
    assert len(builds) == 1


def test_code_is_coloured_in_steps_laid_out_once_a_step(qtbot):
    """Every token keeps its colour, and the document relays out once a step, not a token."""
    theme = TranscriptTheme.from_palette(QGuiApplication.palette())
    block = CodeBlockWidget("python", theme)
    qtbot.addWidget(block)
    lines = [f"def total_{n}(rows):\n    return sum(float(r['a']) for r in rows)\n"
             for n in range(20)]
    block.append("".join(lines))
    document = block.code_view.document()
    changes: list[int] = []
    document.contentsChange.connect(lambda *_args: changes.append(1))
    block.finish()  # no scheduler: every step at once
    assert block.highlighted
    keyword = token_formats(theme.code_style)
    keyword_colour = keyword[Keyword].foreground().color().name()
    defs = 0
    text_block = document.begin()
    while text_block.isValid():
        iterator = text_block.begin()
        while not iterator.atEnd():
            fragment = iterator.fragment()
            if fragment.text().startswith("def"):
                assert fragment.charFormat().foreground().color().name() == keyword_colour
                defs += 1
            iterator += 1
        text_block = text_block.next()
    assert defs == 20
    tokens = len(list(lexer_for("python").get_tokens_unprocessed(block.code())))
    assert len(changes) <= -(-tokens // TOKENS_PER_STEP)  # a change a step, not a token


def test_each_prose_chunk_on_open_is_laid_out_once_at_its_final_width(qtbot, monkeypatch):
    """No prose document is laid out at a width it will not keep.

    Qt lays a text view's document out when the view's width changes (its page
    width follows the view), and not before the view has a width: a chunk filled
    while its answer is being made and laid out as the column is first laid out
    costs one layout, where a view sized a few times on the way (the answer's own
    layout before the column's) would pay one per width.
    """
    widths: dict[int, list[float]] = {}
    resize = FittedTextBrowser.resizeEvent
    set_html = FittedTextBrowser.setHtml

    def recording_resize(self: FittedTextBrowser, event) -> None:  # type: ignore[no-untyped-def]
        before = self.document().pageSize().width()
        resize(self, event)
        after = self.document().pageSize().width()
        if after != before and after > 0:
            widths.setdefault(id(self), []).append(after)

    def recording_set_html(self: FittedTextBrowser, text: str) -> None:
        if self.document().pageSize().width() > 0:  # set at a width: laid out now
            widths.setdefault(id(self), []).append(self.document().pageSize().width())
        set_html(self, text)

    monkeypatch.setattr(FittedTextBrowser, "resizeEvent", recording_resize)
    monkeypatch.setattr(FittedTextBrowser, "setHtml", recording_set_html)
    view = TranscriptView()
    qtbot.addWidget(view)
    view.resize(1000, 560)
    view.show()
    qtbot.waitExposed(view)

    view.load_messages(history(3))
    qtbot.waitUntil(lambda: all(answer.isVisible() for answer in shown_answers(view)))
    view.grab()  # laid out and painted, as on screen

    prose = [part for answer in shown_answers(view) for part in answer.body_widgets()
             if isinstance(part, FittedTextBrowser)]
    assert len(prose) == CHUNKS * len(shown_answers(view))
    for chunk in prose:
        final = chunk.document().pageSize().width()
        assert final > 100 and chunk.toPlainText()
        assert widths.get(id(chunk)) == [final]
