"""A bash call's card shows its output while it runs (real window, real bubblewrap)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from window_driver import WAIT_MS, send, use_server, wait_idle

from desktop_agent.testing import script

#: Coloured first line, then 10,000 lines over about two seconds.
COUNTING = ("printf '\\033[1;31mred\\033[0m plain\\n'; sleep 0.5; for i in $(seq 1 100); do "
            "for j in $(seq 1 100); do echo \"line $i.$j\"; done; sleep 0.02; done")


def _card(window: Any, name: str = "bash") -> Any:
    from desktop_agent.gui.transcript.tool_card import ToolCard

    window.current_tab().transcript.flush()
    cards = [c for c in window.current_tab().findChildren(ToolCard) if c.tool_name == name]
    return cards[-1] if cards else None


def _run_bash(qtbot: Any, make_window: Any, server: Any, tmp_path: Path, command: str,
              after: str) -> tuple[Any, Any]:
    work = tmp_path / "work"
    work.mkdir()
    window = make_window(builtin=True)
    controller = use_server(window, server)
    controller.update_settings(tools=["bash"], workdir=str(work))
    server.enqueue(script.tool_calls([("bash", {"command": command})], ids=["c1"]),
                   script.text(after))
    send(qtbot, window, "Run it")
    qtbot.waitUntil(lambda: bool(window.approvals.pending()), timeout=WAIT_MS)
    qtbot.mouseClick(window.approval_dock.allow_button, Qt.MouseButton.LeftButton)
    return window, controller


def test_lines_show_on_the_card_before_the_command_ends(qtbot: Any, make_window: Any,
                                                        server: Any, tmp_path: Path) -> None:
    window, controller = _run_bash(qtbot, make_window, server, tmp_path, COUNTING, "Counted.")
    seen: dict[str, Any] = {}

    def shown_while_running(text: str) -> bool:
        card = _card(window)
        if card is None or card.live_view is None or text not in card.live_view.plain_text():
            return False
        seen.update(result=card.output_text, busy=controller.busy,
                    text=card.live_view.plain_text(), figures=card.live_view.figures_label.text(),
                    stop=card.live_view.stop_button.isVisibleTo(card))
        return True

    qtbot.waitUntil(lambda: shown_while_running("red plain"), timeout=WAIT_MS)
    assert seen["result"] is None and seen["busy"], "the output came only with the result"
    assert seen["stop"], "no Stop on the running command's card"
    assert seen["text"].startswith("red plain\n"), seen["text"][:80]  # no escape bytes
    # the colour and weight were rendered, not printed
    fragment = _card(window).live_view.text_view.document().firstBlock().begin().fragment()
    assert fragment.text() == "red"
    assert fragment.charFormat().foreground().color().red() > 150
    assert fragment.charFormat().fontWeight() == 700

    qtbot.waitUntil(lambda: shown_while_running("line 1.1\n"), timeout=WAIT_MS)
    assert seen["result"] is None and seen["busy"], "the lines came only with the result"
    assert " lines · " in seen["figures"] and seen["figures"].endswith(" s")
    assert int(seen["figures"].split()[0].replace(",", "")) < 10_001

    wait_idle(qtbot, controller)
    card = _card(window)
    assert card.live_view is None  # the result replaced the live tail
    assert card.output_text.startswith("exit code: 0")
    assert "10,001 lines" in card.detail_label.text(), card.detail_label.text()
    assert card.detail_label.text().startswith("builtin · done")


def test_stop_on_the_card_ends_just_that_command(qtbot: Any, make_window: Any, server: Any,
                                                 tmp_path: Path) -> None:
    window, controller = _run_bash(qtbot, make_window, server, tmp_path,
                                   "echo started; sleep 120", "It was stopped, moving on.")
    qtbot.waitUntil(lambda: _card(window) is not None and _card(window).live_view is not None
                    and "started" in _card(window).live_view.plain_text(), timeout=WAIT_MS)
    live = _card(window).live_view
    qtbot.waitUntil(lambda: live.stop_button.isVisibleTo(_card(window)), timeout=WAIT_MS)
    qtbot.mouseClick(live.stop_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, controller)
    card = _card(window)
    assert card.output_text.startswith("stopped by the person after")
    assert not card.is_error and card.detail_label.text().startswith("builtin · stopped · ")
    shown = (card.detail_label.text(), card.output_text)
    # the turn went on: the model read the result and answered
    messages = [m for m in controller.stored_messages() if m["role"] == "assistant"]
    assert messages[-1]["message"]["content"] == "It was stopped, moving on."
    # reopened after a restart, the card says the same (figures included)
    window.close()
    qtbot.waitUntil(lambda: not window.controllers, timeout=WAIT_MS)
    again = make_window(builtin=True)
    qtbot.waitUntil(lambda: again.current_controller() is not None, timeout=WAIT_MS)
    again.current_tab().ensure_loaded()
    qtbot.waitUntil(lambda: _card(again) is not None, timeout=WAIT_MS)
    reopened = _card(again)
    assert (reopened.detail_label.text(), reopened.output_text) == shown
