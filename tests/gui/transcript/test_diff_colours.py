"""A long diff is coloured without leaving work for the garbage collector."""

from __future__ import annotations

import gc
from typing import Any

from PySide6.QtWidgets import QApplication

from desktop_agent.gui.transcript.diff_lines import PLAIN_STYLE
from desktop_agent.gui.transcript.diff_view import DiffView
from desktop_agent.gui.transcript.theme import TranscriptTheme
from desktop_agent.workspace.diffs import diff_bytes

LINES = 2_000


def python_source(changed: bool) -> bytes:
    body = "".join(f"    total_{i} = compute({i}, 'x')  # step {i}{' changed' * changed}\n"
                   for i in range(LINES))
    return ("def run():\n" + body).encode()


def test_every_row_of_a_rewritten_file_is_coloured_and_adds_nothing_for_gc_to_walk(
        qtbot: Any) -> None:
    diff = diff_bytes("src/module.py", python_source(False), python_source(True))
    view = DiffView(TranscriptTheme.from_palette(QApplication.palette()))  # colours as it paints
    qtbot.addWidget(view)
    view.resize(900, 600)
    view.set_side_by_side(False)
    view.show()
    qtbot.waitExposed(view)
    view.set_diff(diff_bytes("first.py", b"a = 1\n", b"a = 2\n"))
    view.left.grab()  # the first diff shown makes the style's Qt formats, once per process
    view.set_diff(diff)
    lines = view.left
    assert lines.row_count() == 2 * LINES + 2  # a header, every line removed and added
    gc.collect()
    tracked_before = len(gc.get_objects())
    bar = lines.verticalScrollBar()
    for value in range(0, bar.maximum() + bar.pageStep(), bar.pageStep()):
        bar.setValue(value)
        lines.grab()  # paints (and colours) the rows in view
    gc.collect(0)  # a young collection, as soon follows any allocation
    added = len(gc.get_objects()) - tracked_before
    code_rows = [i for i in range(lines.row_count()) if lines._rows[i].sign in "+-"]
    styles = [lines._pieces(i)[1::2] for i in code_rows]  # text, style, text, style...
    coloured = [row for row in styles if any(style != PLAIN_STYLE for style in row)]
    assert len(coloured) == len(code_rows)  # keywords, names, numbers in colour on every row
    # Kept as lists holding Qt colours, the pieces made about ten tracked objects per row,
    # all walked by every full collection; as tuples of text and numbers they make none.
    assert added < len(code_rows) // 100, f"{added} objects added"
