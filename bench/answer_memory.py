"""What one streamed answer keeps in memory in a shown transcript, by source line.

    QT_QPA_PLATFORM=offscreen python bench/answer_memory.py [--pieces 1190] [--answers 10]

Streams ``--answers`` markdown answers (``transcript_stream.py``'s text, cut into
``--pieces`` word-sized pieces, each a new ``str`` as a streamed piece is) into the
real ``TranscriptView``, letting it paint every 20 pieces, and prints with tracemalloc
what each answer still holds once it ended: the total and the lines that hold most
(size and objects per answer). With more answers than fill three screens, the
older ones keep their text and no widgets, as in the window. Issue 48's figure:
~70 KB in ~1,190 objects for the text of a 7 KB answer, when every piece was
kept. The latest figures are on docs/performance.md.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pieces", type=int, default=1190)
    parser.add_argument("--answers", type=int, default=10)
    args = parser.parse_args()
    from PySide6.QtCore import QCoreApplication, QEvent
    from PySide6.QtWidgets import QApplication
    from transcript_stream import build_reply

    from desktop_agent.gui.transcript import TranscriptView

    app = QApplication.instance() or QApplication(sys.argv[:1])
    view = TranscriptView()
    view.resize(1000, 800)
    view.show()
    pieces = build_reply(args.pieces)

    def stream_one() -> None:
        view.add_user_message("Explain the next step.")
        view.begin_assistant_message()
        for index, piece in enumerate(pieces):
            view.append_text(piece.encode().decode())  # a new str, as a streamed piece is
            if index % 20 == 0:
                app.processEvents()
        view.end_assistant_message()
        app.processEvents()
        # Widgets the view let go of are deleted later, by the running event loop, as
        # in the window; processEvents() alone never deletes them (no loop runs here).
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)

    stream_one()  # warm: the first widgets of their kind, the renderer's caches
    stream_one()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for _ in range(args.answers):
        stream_one()
    gc.collect()
    stats = tracemalloc.take_snapshot().compare_to(before, "lineno")
    per = args.answers
    print(f"one answer of {sum(map(len, pieces)):,} characters in {len(pieces):,} pieces keeps "
          f"{sum(s.size_diff for s in stats) / per / 1024:.1f} KiB of Python allocations "
          f"(mean of {per})")
    for stat in stats[:8]:
        frame = stat.traceback[0]
        print(f"  {stat.size_diff / per / 1024:7.1f} KiB {stat.count_diff / per:7.0f} objects  "
              f"{frame.filename}:{frame.lineno}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
