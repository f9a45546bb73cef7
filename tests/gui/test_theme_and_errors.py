"""Themes follow the scheme; core errors become sentences with actions."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtGui import QPalette

from desktop_agent.core import errors
from desktop_agent.gui.conversation.error_messages import ErrorAction, describe_error


@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_theme_follows_the_requested_scheme(qapp: Any, monkeypatch: Any, scheme: str) -> None:
    from desktop_agent.gui.theme import apply_theme

    monkeypatch.setenv("DESKTOP_AGENT_THEME", scheme)
    original = qapp.palette()
    try:
        apply_theme(qapp)
        lightness = qapp.palette().color(QPalette.ColorRole.Window).lightness()
        assert (lightness < 100) if scheme == "dark" else (lightness > 150)
    finally:
        qapp.setPalette(original)


@pytest.mark.parametrize(("exc", "words", "action"), [
    (errors.ServerConnectionError("x", base_url="http://h/v1"), "Could not reach http://h/v1",
     ErrorAction.RETRY),
    (errors.AuthenticationError("x", status=401), "refused the API key", ErrorAction.PICK_SERVER),
    (errors.ModelNotFoundError("x", status=404), "does not serve this model",
     ErrorAction.PICK_SERVER),
    (errors.ContextTooLongError("x"), "longer than the model's context", ErrorAction.PICK_SERVER),
    (errors.ServerError("x", status=503), "status 503", ErrorAction.RETRY),
    (errors.IncompleteReplyError("x"), "ended the reply early", ErrorAction.RETRY),
    (errors.VisionNotSupportedError("x"), "cannot see images", ErrorAction.PICK_SERVER),
    (RuntimeError("secret sk-abcdefghijklmnop"), "Something went wrong", ErrorAction.RETRY),
])
def test_errors_are_sentences_with_actions(exc: BaseException, words: str,
                                           action: ErrorAction) -> None:
    description = describe_error(exc)
    assert words in description.sentence
    assert action in description.actions
    assert "sk-" not in description.sentence


def test_a_dropped_stream_is_described_as_such() -> None:
    exc = errors.ServerConnectionError("dropped", base_url="http://h/v1")
    exc.mid_stream = True  # type: ignore[attr-defined]
    assert "dropped before the reply was complete" in describe_error(exc).sentence
