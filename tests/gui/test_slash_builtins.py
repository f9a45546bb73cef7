"""The built-in commands in the composer: listed beside the others, each doing what the
window's own button or menu item does; and a command's arguments asked in a form."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from tier_policy import part_missing
from window_driver import WAIT_MS, send, use_server, wait_idle

from desktop_agent.testing import script

BUILTINS = ["undo", "compact", "plan", "model", "clear", "help"]
EVERYTHING = Path(__file__).parents[2] / ".mcp-servers" / "node_modules" / ".bin" \
    / "mcp-server-everything"
SLOW_MS = 120_000  # the server (node) starts when the list is first asked for


def _type_command(qtbot: Any, tab: Any, text: str) -> None:
    tab.composer.setFocus()
    tab.composer.clear()
    qtbot.keyClicks(tab.composer, text)
    menu = tab.slash_menu
    # Enter goes where the keyboard is: the open list (which has the focus) or the message
    qtbot.keyClick(menu.completer.popup() if menu.is_open() else tab.composer,
                   Qt.Key.Key_Return)


def _page_text(tab: Any) -> str:
    tab.transcript.flush()
    return "\n".join(tab.transcript.item_text(k) for k in tab.transcript.item_keys())


def _window(make_window: Any, server: Any, folder: Path, **settings: Any) -> tuple[Any, Any]:
    window = make_window()
    controller = use_server(window, server)
    controller.update_settings(workdir=str(folder), **settings)
    return window, controller


def test_the_menu_lists_the_builtins_first_with_what_they_do(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    (folder / ".agents/commands").mkdir(parents=True)
    (folder / ".agents/commands/review.md").write_text("Review $ARGUMENTS.", encoding="utf-8")
    (folder / ".agents/commands/help.md").write_text("Mine, not the app's.", encoding="utf-8")
    window, _controller = _window(make_window, server, folder)
    tab = window.current_tab()
    menu = tab.slash_menu
    tab.composer.setFocus()
    qtbot.keyClicks(tab.composer, "/")
    qtbot.waitUntil(lambda: menu.is_open() and "review" in menu.offered(), timeout=WAIT_MS)
    assert menu.offered()[:6] == BUILTINS
    assert menu.offered().count("help") == 1  # a file cannot take a built-in's place
    shown = menu.model.stringList()
    assert "conversation in the same working folder" in shown[BUILTINS.index("clear")]


def test_plan_model_and_clear_do_what_the_window_does(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    window, controller = _window(make_window, server, folder)
    tab = window.current_tab()
    _type_command(qtbot, tab, "/plan")
    qtbot.waitUntil(lambda: controller.settings.get("permission_mode") == "plan",
                    timeout=WAIT_MS)
    assert tab.header.mode_box.currentData() == "plan"
    assert tab.composer.toPlainText() == "" and server.requests == []

    _type_command(qtbot, tab, "/model")
    qtbot.waitUntil(lambda: window.servers.picker is not None
                    and window.servers.picker.isVisible(), timeout=WAIT_MS)
    window.servers.picker.reject()

    before = set(window.controllers)
    _type_command(qtbot, tab, "/clear")
    qtbot.waitUntil(lambda: len(window.controllers) == len(before) + 1, timeout=WAIT_MS)
    new = window.current_controller()
    assert new.conversation_id not in before
    assert new.settings.get("workdir") == str(folder)
    assert server.requests == []


def test_help_lists_commands_and_skills_and_undo_with_nothing_says_so(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    (folder / ".agents/commands").mkdir(parents=True)
    (folder / ".agents/commands/review.md").write_text(
        "---\ndescription: Review a file\n---\nReview $ARGUMENTS.", encoding="utf-8")
    (folder / ".agents/skills/tidy").mkdir(parents=True)
    (folder / ".agents/skills/tidy/SKILL.md").write_text(
        "---\nname: tidy\ndescription: Tidy a Python module.\n---\nDo it.", encoding="utf-8")
    window, _controller = _window(make_window, server, folder)
    tab = window.current_tab()
    _type_command(qtbot, tab, "/help")
    qtbot.waitUntil(lambda: tab.slash_commands.help is not None
                    and tab.slash_commands.help.isVisible(), timeout=WAIT_MS)
    text = tab.slash_commands.help.text.toPlainText()
    for expected in ("Built-in commands", "/compact", "Your commands", "/review",
                     "Review a file", "Skills", "tidy", "Tidy a Python module."):
        assert expected in text

    _type_command(qtbot, tab, "/undo")
    qtbot.waitUntil(lambda: "nothing to undo" in _page_text(tab),
                    timeout=WAIT_MS)
    assert server.requests == []


def test_compact_summarises_and_shows_the_marker(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    from desktop_agent.core.context.summary_request import SUMMARY_INSTRUCTIONS

    def respond(body: dict[str, Any]) -> Any:
        if body["messages"][0].get("content") == SUMMARY_INSTRUCTIONS:
            return script.text("We talked about owls and crows.")
        return script.text("Birds are clever.")

    server.responder = respond
    folder = tmp_path / "work"
    folder.mkdir()
    window, controller = _window(make_window, server, folder, context_length=8000)
    tab = window.current_tab()
    for question in ("Owls?", "Crows?"):
        send(qtbot, window, question)
        wait_idle(qtbot, controller)
    _type_command(qtbot, tab, "/compact")
    qtbot.waitUntil(lambda: "earlier messages" in _page_text(tab),
                    timeout=WAIT_MS)
    assert any(r["messages"][0].get("content") == SUMMARY_INSTRUCTIONS
               for r in server.requests)
    send(qtbot, window, "And ravens?")
    wait_idle(qtbot, controller)
    assert "owls and crows" in server.requests[-1]["messages"][0]["content"]


def test_a_command_s_named_arguments_are_asked_in_a_form(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    (folder / ".agents/commands").mkdir(parents=True)
    (folder / ".agents/commands/compare.md").write_text(
        "---\nargument-hint: old new\n---\nCompare $1 with $2.", encoding="utf-8")
    window, _controller = _window(make_window, server, folder)
    tab = window.current_tab()
    menu = tab.slash_menu
    tab.composer.setFocus()
    qtbot.keyClicks(tab.composer, "/compa")
    qtbot.waitUntil(lambda: menu.is_open() and "compare" in menu.offered(), timeout=WAIT_MS)
    menu.popup.setCurrentIndex(menu.model.index(menu.offered().index("compare"), 0))
    qtbot.keyClick(menu.completer.popup(), Qt.Key.Key_Return)
    form = tab.slash_commands.form
    assert form is not None and form.isVisible()
    assert list(form.inputs) == ["old", "new"]
    qtbot.keyClicks(form.inputs["old"], "v1 draft")
    qtbot.keyClicks(form.inputs["new"], "v2")
    form.ok_button.click()
    qtbot.waitUntil(lambda: tab.composer.toPlainText() == "Compare v1 draft with v2.",
                    timeout=WAIT_MS)
    assert server.requests == []  # shown, not sent: Enter sends it


def test_a_prompt_s_arguments_form_offers_the_server_s_suggestions(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path, data_dir: Path) -> None:
    if not EVERYTHING.exists():
        part_missing(f"{EVERYTHING} not found (bash .ci/install_mcp_servers.sh)")
    (data_dir / "config.json").write_text(json.dumps(
        {"mcpServers": {"ev": {"command": str(EVERYTHING)}}}), encoding="utf-8")
    folder = tmp_path / "work"
    folder.mkdir()
    window, _controller = _window(make_window, server, folder)
    tab = window.current_tab()
    menu = tab.slash_menu
    tab.composer.setFocus()
    qtbot.keyClicks(tab.composer, "/ev:compl")
    qtbot.waitUntil(lambda: "ev:completable-prompt" in menu.offered(), timeout=SLOW_MS)
    qtbot.waitUntil(menu.is_open, timeout=WAIT_MS)
    qtbot.keyClick(menu.completer.popup(), Qt.Key.Key_Return)
    form = tab.slash_commands.form
    assert form is not None and form.isVisible()
    assert list(form.inputs) == ["department", "name"]
    assert not form.ok_button.isEnabled()  # department is required
    form.inputs["department"].setFocus()
    qtbot.keyClicks(form.inputs["department"], "E")
    qtbot.waitUntil(lambda: form.suggestions("department") == ["Engineering"],
                    timeout=WAIT_MS)
    form.completers["department"].activated.emit("Engineering")
    assert form.inputs["department"].text() == "Engineering"
    form.inputs["name"].setFocus()
    qtbot.keyClicks(form.inputs["name"], "A")
    qtbot.waitUntil(lambda: bool(form.suggestions("name")), timeout=WAIT_MS)
    form.inputs["name"].setText(form.suggestions("name")[0])
    chosen = form.inputs["name"].text()
    form.ok_button.click()
    qtbot.waitUntil(lambda: chosen in tab.composer.toPlainText()
                    and "Engineering" in tab.composer.toPlainText(), timeout=WAIT_MS)
    assert server.requests == []


def test_undo_undoes_the_turn_the_files_changed_bar_shows(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.md").write_text("mine\n")
    window = make_window(builtin=True)
    controller = use_server(window, server)
    controller.update_settings(tools=["bash"], workdir=str(work), confirm_tools=False)
    server.enqueue(script.tool_calls([("bash", {"command": "rm notes.md"})]),
                   script.text("Removed."))
    send(qtbot, window, "remove the notes")
    wait_idle(qtbot, controller)
    tab = window.current_tab()
    qtbot.waitUntil(tab.files_bar.isVisible, timeout=WAIT_MS)
    assert not (work / "notes.md").exists()
    _type_command(qtbot, tab, "/undo")
    qtbot.waitUntil(lambda: (work / "notes.md").exists(), timeout=WAIT_MS)
    assert (work / "notes.md").read_text() == "mine\n"
    qtbot.waitUntil(lambda: tab.files_bar.undo_button.text() == "Undo this restore",
                    timeout=WAIT_MS)
