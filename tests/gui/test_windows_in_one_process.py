"""Several windows and several qasync loops in one process each get their replies.

Two reported stalls had this shape: a second window in the same process whose
first reply never finished (the screenshot script, one loop), and a window test
that hung after many other tests had run in the same process (each pytest-qt
test makes its own qasync loop). Each run here opens two windows on one loop,
over two stores (so two change-token pollers), and streams a reply in each; the
runs repeat so later loops follow earlier ones, as in a full suite.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from window_driver import WAIT_MS, last_assistant_text, send, use_server

from desktop_agent.testing import script


@pytest.fixture
def second_store(tmp_path: Path) -> Iterator[Any]:
    """A second window's own store, closed after the windows (set up before them)."""
    from desktop_agent.store import Store

    opened = Store.open(tmp_path / "second.sqlite3")
    yield opened
    opened.close()


@pytest.mark.parametrize("run", range(4))
def test_two_windows_on_one_loop_both_get_their_first_reply(
        run: int, second_store: Any, qtbot: Any, make_window: Any, server: Any) -> None:
    windows = [make_window(), make_window(the_store=second_store)]
    for number, window in enumerate(windows):
        controller = use_server(window, server)
        answer = f"reply {number} of run {run} ends here"
        server.enqueue(script.text(answer, pieces=6, delay=0.01))
        send(qtbot, window, f"Hello {number}")

        def finished(window: Any = window, controller: Any = controller,
                     answer: str = answer) -> bool:
            return answer in last_assistant_text(window) and not controller.busy

        qtbot.waitUntil(finished, timeout=WAIT_MS)
        stored = controller.stored_messages()
        assert [m["role"] for m in stored] == ["user", "assistant"]
        assert stored[1]["message"]["content"] == answer
