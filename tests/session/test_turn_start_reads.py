"""A turn's start asks the sandbox settings only what it needs, on the event loop."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop_agent.session.files.command_previews import CommandPreviewDesk
from desktop_agent.session.settings import sandbox_settings
from desktop_agent.session.settings.sandbox_settings import sandbox_level, sandbox_policy


def test_the_preview_mode_is_decided_without_reading_the_data_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[int] = []
    real = sandbox_settings.hidden_folders

    def counted() -> tuple[str, ...]:
        read.append(1)
        return real()

    monkeypatch.setattr(sandbox_settings, "hidden_folders", counted)
    desk = CommandPreviewDesk("c1", lambda: {}, tmp_path, None, lambda *a: None,
                              lambda event: None)
    assert desk.mode({"sandbox": "off"}) is None
    assert desk.mode({"sandbox": "read_only"}) is None
    assert read == []  # the level alone decides; the policy's hidden folders are not read
    assert sandbox_policy({"sandbox": "off"}).hidden == real()
    assert read == [1]


def test_an_unknown_level_is_the_safe_default() -> None:
    assert sandbox_level({"sandbox": "everything"}) == "workdir"
    assert sandbox_level(None) == "workdir"
    assert sandbox_level({"sandbox": "off"}) == sandbox_policy({"sandbox": "off"}).level
