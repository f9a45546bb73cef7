"""The window removes, when it closes, what a deletion cut short left in the data folder."""

from __future__ import annotations

from typing import Any

from window_driver import WAIT_MS

from desktop_agent.session.files.checkpoint_paths import checkpoints_folder


def test_checkpoints_of_a_conversation_no_longer_stored_go_when_the_window_closes(
        qtbot: Any, make_window: Any, store: Any) -> None:
    kept = store.create_conversation(title="kept")
    left = checkpoints_folder("fedcba9876543210fedcba9876543210")  # its rows are gone
    (left / "objects").mkdir(parents=True)
    mine = checkpoints_folder(kept.id)
    mine.mkdir(parents=True)
    window = make_window()
    closed: list[bool] = []
    window.closed.connect(lambda: closed.append(True))

    window.close()

    qtbot.waitUntil(lambda: bool(closed), timeout=WAIT_MS)
    assert not left.exists()
    assert mine.is_dir()
