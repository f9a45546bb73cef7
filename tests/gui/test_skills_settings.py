"""Conversation settings → Skills: each skill with its description, tokens and a switch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from window_driver import WAIT_MS, send, use_server, wait_idle

from desktop_agent.testing import script


def skill(folder: Path, name: str, description: str) -> None:
    (folder / name).mkdir(parents=True, exist_ok=True)
    (folder / name / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\nThe body of {name}.\n",
        encoding="utf-8")


def test_skills_are_listed_with_their_tokens_and_switched_per_conversation(
        qtbot: Any, make_window: Any, server: Any, data_dir: Path, tmp_path: Path) -> None:
    from desktop_agent.core.context.tokens import count_text_tokens

    project = tmp_path / "project"
    skill(project / ".agents/skills", "pdf-forms", "Fill PDF forms when a form is named.")
    skill(project / ".agents/skills", "changelog", "Write a changelog from git history.")
    skill(data_dir / "skills", "tea", "Brew tea (the user's own skill).")
    (project / ".agents/skills/broken").mkdir()
    (project / ".agents/skills/broken/SKILL.md").write_text("no front matter", "utf-8")
    window = make_window()
    controller = use_server(window, server)
    controller.update_settings(workdir=str(project), skills_off=["tea"])

    dialog = window.open_settings()
    box = dialog.skills_box
    qtbot.waitUntil(lambda: len(box.switches) == 3, timeout=WAIT_MS)
    assert {n: s.isChecked() for n, s in box.switches.items()} == {
        "changelog": True, "pdf-forms": True, "tea": False}
    cost = box.findChild(object, "skillTokens_pdf-forms")
    tokens = count_text_tokens("- pdf-forms: Fill PDF forms when a form is named.")
    assert cost.text() == f"project · {tokens} tokens"
    assert box.findChild(object, "skillTokens_tea").text().startswith("user · ")
    assert "broken" in box.skipped.text() and "front matter" in box.skipped.text()
    before = box.total.text()
    assert before.startswith("2 of 3 on: ")

    box.switches["tea"].setChecked(True)
    box.switches["pdf-forms"].setChecked(False)
    assert box.total.text().startswith("2 of 3 on: ") and box.total.text() != before
    dialog.findChild(object, "settingsButtons").accepted.emit()
    assert controller.settings["skills_off"] == ["pdf-forms"]

    server.enqueue(script.text("Hello."))
    send(qtbot, window, "Hi")
    wait_idle(qtbot, controller)
    system = server.requests[-1]["messages"][0]["content"]
    assert "- tea: Brew tea" in system and "- changelog:" in system
    assert "pdf-forms" not in system
